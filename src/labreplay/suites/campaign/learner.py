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

from labreplay.suites.campaign.card_text import TableDeclaration
from labreplay.suites.campaign.json_values import json_object
from labreplay.suites.campaign.model import AffinityModel, classes_of, label_of

FAILURE = "physical_failure"
C = 1.0
ALPHA = 4.0  # the fitted prediction counts as this many learned experiments
BASE_SHARE = 0.01  # of the smoothed context base rate mixed into every prediction


LEARNER = (
    f"logistic regression (C = {C:g}) on the context rows: categorical descriptors one-hot, "
    "numeric ones standardised"
)


class CardModel:
    def __init__(self, categories: Sequence[str], declared: TableDeclaration) -> None:
        self.validity = declared["validity"] is True
        self.classes = classes_of(categories) if self.validity else tuple(categories)
        self.descriptors = list(declared["descriptors"])
        self.means: dict[str, float] = {}
        self.learned: list[tuple[Mapping[str, object], dict[str, float], float]] = []
        self._cache: dict[str, dict[str, float]] = {}

    def _features(self, desc: Mapping[str, object]) -> dict[str, object]:
        out: dict[str, object] = {}
        for d in self.descriptors:
            value = desc.get(d)
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if d in self.means:
                out[d] = (
                    float(value) if isinstance(value, int | float) and number else self.means[d]
                )
            elif isinstance(value, list):
                out[d] = [str(v) for v in value]
            elif value is not None and not isinstance(value, Mapping):  # not a typed Missing
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
            numbers = [
                float(v)
                for desc, _ in pairs
                if isinstance(v := desc.get(d), int | float) and not isinstance(v, bool)
            ]
            if numbers:
                self.means[d] = sum(numbers) / len(numbers)
        counts = {k: 0.5 + sum(1 for _, y in pairs if y == k) for k in self.classes}
        self.base = {k: n / sum(counts.values()) for k, n in counts.items()}
        self.fit = None
        if len({y for _, y in pairs}) >= 2:
            self.fit = make_pipeline(
                DictVectorizer(sparse=False),
                StandardScaler(),
                LogisticRegression(C=C, max_iter=2000),
            ).fit([self._features(x) for x, _ in pairs], [y for _, y in pairs])
        return self

    def similarity(self, a: Mapping[str, object], b: Mapping[str, object]) -> float:
        """The squared fraction of descriptor values `a` and `b` share (a missing one: none)."""
        values = [a.get(d) for d in self.descriptors]
        shared = sum(1 for d, v in zip(self.descriptors, values, strict=True)
                     if v is not None and not isinstance(v, Mapping) and v == b.get(d))  # fmt: skip
        return (shared / len(values)) ** 2 if values else 0.0

    def predict(self, desc: Mapping[str, object]) -> dict[str, float]:
        key = json.dumps(desc, sort_keys=True, default=str)
        if key not in self._cache:  # the fitted prediction, with the base rate's share
            fitted = dict(self.base)
            if self.fit is not None:
                fitted = dict.fromkeys(self.classes, 0.0)
                proba = self.fit.predict_proba([self._features(desc)])[0]
                fitted.update(zip(map(str, self.fit.classes_), map(float, proba), strict=True))
            self._cache[key] = {
                k: (1 - BASE_SHARE) * fitted[k] + BASE_SHARE * self.base[k] for k in self.classes
            }
        num = {k: ALPHA * p for k, p in self._cache[key].items()}
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


ContextModel = AffinityModel | CardModel


def reference_model(
    categories: Sequence[str],
    context: Sequence[Mapping[str, object]] | Mapping[str, object],
    declared: TableDeclaration | None,
) -> ContextModel:
    """The context-trained reference model of a spec: a card table's learner on the context
    rows (`declared`: its `record.table`); else the affinity model (on the rows, or on the
    per-precursor summary)."""
    if isinstance(context, Mapping):
        return AffinityModel(beta=0.0, categories=categories).fit_summary(context)
    if declared is not None:
        return CardModel(categories, declared).fit_context(context)
    return AffinityModel(categories=categories).fit_context(context)
