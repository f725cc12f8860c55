"""The reference learner of a record card's table: a logistic regression over the card's
declared descriptors, fitted on the visible context rows, then updated from what is learned
about candidates.

Declared, fixed choices (nothing is tuned on held-out rows): a descriptor with a number in any
context row is numeric (standardised; a missing value takes the context mean), any other is
categorical (one-hot; a level the context never saw, and a missing value, set no column); a
list value (the `groups`) one-hots each item. Multinomial logistic regression with L2 penalty
C = 1 (scikit-learn, lbfgs: deterministic). The classes are the card's categories, plus a
physical failure only when the card declares a validity column (a binned table cannot record
one, so no probability is spent on it). Classes the context never shows keep the smoothed
context base rate's share (`BASE_SHARE`).

A learned outcome (an inspected candidate's posterior, or a true outcome for the ceilings)
moves the prediction for every query that shares descriptor values with it, in proportion to
the square of the fraction shared: p(q) ∝ ALPHA * p_fit(q) + sum_j w_j s(q, j)^2 dist_j.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

from labreplay.suites.campaign.json_values import json_object
from labreplay.suites.campaign.model import AffinityModel, ContextModel, classes_of, label_of

FAILURE = "physical_failure"
C = 1.0
ALPHA = 4.0  # the fitted prediction counts as this many learned experiments
BASE_SHARE = 0.01  # of the smoothed context base rate mixed into every prediction


LEARNER = (
    f"logistic regression (C = {C:g}) on the context rows: categorical descriptors one-hot, "
    "numeric ones standardised"
)


def _missing(value: object) -> bool:
    return isinstance(value, Mapping) or value is None


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


class CardModel:
    def __init__(self, categories: Sequence[str], declared: Mapping[str, object]) -> None:
        self.validity = declared.get("validity") is True
        self.classes = classes_of(categories) if self.validity else tuple(categories)
        descriptors = declared.get("descriptors")
        self.descriptors = [str(d) for d in descriptors] if isinstance(descriptors, list) else []
        self.means: dict[str, float] = {}
        self.learned: list[tuple[Mapping[str, object], dict[str, float], float]] = []
        self._cache: dict[str, dict[str, float]] = {}

    def _features(self, desc: Mapping[str, object]) -> dict[str, object]:
        out: dict[str, object] = {}
        for d in self.descriptors:
            value = desc.get(d)
            if d in self.means:
                number = _number(value)
                out[d] = self.means[d] if number is None else number
            elif isinstance(value, list):
                out[d] = [str(v) for v in value]
            elif not _missing(value):
                out[d] = str(value)
        return out

    def fit_context(self, rows: Sequence[Mapping[str, object]]) -> CardModel:
        from sklearn.feature_extraction import DictVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        pairs = [
            (json_object(r["descriptors"]), label)
            for r in rows
            if (label := label_of(json_object(r["outcome"]))) in self.classes
        ]
        for d in self.descriptors:
            numbers = [n for desc, _ in pairs if (n := _number(desc.get(d))) is not None]
            if numbers:
                self.means[d] = sum(numbers) / len(numbers)
        counts = {k: 0.5 + sum(1 for _, y in pairs if y == k) for k in self.classes}
        self.base = {k: n / sum(counts.values()) for k, n in counts.items()}
        labels = sorted({y for _, y in pairs})
        self.fit = None
        if len(labels) >= 2:
            self.fit = make_pipeline(
                DictVectorizer(sparse=False),
                StandardScaler(),
                LogisticRegression(C=C, max_iter=2000),
            ).fit([self._features(x) for x, _ in pairs], [y for _, y in pairs])
        return self

    def prior(self, desc: Mapping[str, object]) -> dict[str, float]:
        """The fitted prediction (cached per descriptor set), with the base rate's share."""
        key = json.dumps(desc, sort_keys=True, default=str)
        if key not in self._cache:
            fitted = dict.fromkeys(self.classes, 0.0)
            if self.fit is not None:
                proba = self.fit.predict_proba([self._features(desc)])[0]
                fitted.update(zip(map(str, self.fit.classes_), map(float, proba), strict=True))
            else:
                fitted = dict(self.base)
            self._cache[key] = {
                k: (1 - BASE_SHARE) * fitted[k] + BASE_SHARE * self.base[k] for k in self.classes
            }
        return self._cache[key]

    def similarity(self, a: Mapping[str, object], b: Mapping[str, object]) -> float:
        shared = sum(1 for d in self.descriptors if not _missing(a.get(d)) and a.get(d) == b.get(d))
        return (shared / len(self.descriptors)) ** 2 if self.descriptors else 0.0

    def predict(self, desc: Mapping[str, object]) -> dict[str, float]:
        num = {k: ALPHA * p for k, p in self.prior(desc).items()}
        den = ALPHA
        for learned, dist, weight in self.learned:
            s = weight * self.similarity(desc, learned)
            if s:
                for k in self.classes:
                    num[k] += s * dist.get(k, 0.0)
                den += s
        out = {k: v / den for k, v in num.items()}
        return out if self.validity else {**out, FAILURE: 0.0}

    def learn(self, desc: Mapping[str, object], dist: Mapping[str, float], weight: float) -> None:
        kept = {k: float(dist.get(k, 0.0)) for k in self.classes}
        total = sum(kept.values())
        if total > 0:
            self.learned.append((desc, {k: v / total for k, v in kept.items()}, weight))

    @contextmanager
    def trying(
        self, desc: Mapping[str, object], dist: Mapping[str, float], weight: float
    ) -> Iterator[None]:
        """Learn `dist` for `desc` for the block, then take it back exactly."""
        size = len(self.learned)
        self.learn(desc, dist, weight)
        try:
            yield
        finally:
            del self.learned[size:]

    def touches(self, a: Mapping[str, object], b: Mapping[str, object]) -> bool:
        return self.similarity(a, b) > 0


def reference_model(
    categories: Sequence[str],
    context: Sequence[Mapping[str, object]] | Mapping[str, object],
    declared: object,
) -> ContextModel:
    """The context-trained reference model of a spec: a card table's learner on the context
    rows (`declared`: its `record.table`, `card_text.TableDeclaration`); else the affinity model (on the rows, or on the per-precursor summary)."""
    if isinstance(context, Mapping):
        return AffinityModel(beta=0.0, categories=categories).fit_summary(context)
    if isinstance(declared, Mapping):
        return CardModel(categories, declared).fit_context(context)
    return AffinityModel(categories=categories).fit_context(context)
