"""The reference learner of a record card's table: a logistic regression over the card's
declared descriptors, fitted on the visible context rows, then updated from what is learned
about candidates through a Gaussian (Laplace) posterior over its coefficients.

Declared choices, nothing tuned on held-out rows: a descriptor with a number in any context row
is numeric (standardised on the context rows; a missing value takes the context mean), any other
is categorical (one-hot, left 0/1; a missing value sets no column); a list value (the `groups`)
one-hots each item. Multinomial logistic regression with an L2 penalty whose C is chosen from
`C_GRID` by cross-validated log loss on the context rows, with whole groups held out in each
fold as the campaign holds out groups (scikit-learn `LogisticRegressionCV`, newton-cg:
deterministic). The classes are the card's categories, plus a physical failure only when the
card declares a validity column. Classes the context never shows keep the smoothed context base
rate's share (`BASE_SHARE`).

A learned outcome (an inspected candidate's posterior, or a true outcome for the ceilings) is
one more weighted observation of the same model: a Newton step of the Laplace posterior (prior:
the context fit, covariance the inverse Hessian of its penalised loss; a level the context never
saw gets a fresh coefficient with prior variance C). So it moves every query that shares a
coefficient with the candidate (a level, a numeric descriptor, the intercept), by the posterior
covariance, and a held-out group's queries through its own new level.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeGuard

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.sparse import csr_matrix

from labreplay.suites.campaign.card_text import TableDeclaration
from labreplay.suites.campaign.json_values import json_object
from labreplay.suites.campaign.model import AffinityModel, classes_of, label_of

FAILURE = "physical_failure"
C_GRID = (0.001, 0.01, 0.1, 1.0, 10.0)
FOLDS = 5  # grouped cross-validation folds (fewer when there are fewer groups)
RESERVE = 64  # columns made at a time for levels the context never saw
BASE_SHARE = 0.01  # of the smoothed context base rate mixed into every prediction

LEARNER = (
    "logistic regression on the context rows (C from 0.001-10 by cross-validation with whole "
    "groups held out): categorical descriptors one-hot, numeric ones scaled by their SD"
)

Array = np.ndarray[Any, np.dtype[np.float64]]


def _number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


class CardModel:
    def __init__(self, categories: Sequence[str], declared: TableDeclaration) -> None:
        self.validity = declared["validity"] is True
        self.classes = classes_of(categories) if self.validity else tuple(categories)
        self.descriptors = list(declared["descriptors"])
        # numeric descriptor: (mean, sd, lowest, highest) on the context rows
        self.scale: dict[str, tuple[float, float, float, float]] = {}
        self.columns: dict[str, int] = {"": 0}  # feature -> column; "" is the intercept
        self.fitted: list[str] = []  # the classes the fit saw, in its order
        self.C = 1.0  # without two groups to cross-validate on
        self._x: dict[str, Array] = {}
        self.mean: Array = np.zeros((0, 0))  # coefficients (intercept first) x logits
        self._cov: Array | None = None
        self._prior: list[Array] = []  # the fit's covariance, shared by its copies (`copy`)

    def _features(self, desc: Mapping[str, object]) -> dict[str, float]:
        out = {"": 1.0}
        for d in self.descriptors:
            value = desc.get(d)
            if d in self.scale:
                # Not centred (the free intercept absorbs a shift; X stays sparse); a value
                # beyond the context's range reads as its nearest edge: the fit saw nothing
                # beyond (a column constant on the context rows is no evidence either way).
                mean, sd, low, high = self.scale[d]
                v = min(max(float(value), low), high) if _number(value) else mean
                out[d] = v / sd if sd > 0 else 0.0
            elif isinstance(value, list):
                out.update({f"{d}={v}": 1.0 for v in value})
            elif value is not None and not isinstance(value, Mapping):  # not a typed Missing
                out[f"{d}={value}"] = 1.0
        return out

    def _vector(self, desc: Mapping[str, object]) -> Array:
        """The feature vector; a level never seen before gets its own column (prior mean 0,
        variance C, uncorrelated: no context row has it)."""
        key = json.dumps(desc, sort_keys=True, default=str)
        if key not in self._x:
            feats = self._features(desc)
            new = [f for f in feats if f not in self.columns]
            if new and self.fitted:
                self._grow(new)
            x = np.zeros(len(self.mean))
            for f, v in feats.items():
                if f in self.columns:
                    x[self.columns[f]] = v
            self._x[key] = x
        x = self._x[key]
        return np.pad(x, (0, len(self.mean) - len(x)))

    def _grow(self, features: Sequence[str]) -> None:
        """Columns for `features`; room is made RESERVE at a time (a column no feature maps to
        keeps mean 0 and never moves), so the covariance is not copied for each new level."""
        for f in features:
            self.columns[f] = len(self.columns)
        if len(self.columns) > len(self.mean):
            room = len(self.columns) - len(self.mean) + RESERVE
            self.mean = np.vstack([self.mean, np.zeros((room, self.mean.shape[1]))])
            if self._cov is not None:
                self._cov = self._padded(self._cov)

    def _padded(self, cov: Array) -> Array:
        """`cov` with the columns added since, each with prior variance C."""
        size, old = self.mean.size, len(cov)
        out = self.C * np.eye(size)
        out[:old, :old] = cov
        return out

    @property
    def cov(self) -> Array:
        """The Laplace covariance (computed when first needed: the context-trained score
        never learns): the inverse Hessian of the penalised loss at the fit (the intercept,
        unpenalised in the fit, gets the same prior: it removes the softmax's redundant
        direction and moves little against all the context rows)."""
        if self._cov is None and self._prior:
            self._cov = self._padded(self._prior[0])
        if self._cov is None:
            X, curvature = self._design
            d, k = X.shape[1], self.mean.shape[1]
            hess = np.zeros((d, k, d, k))
            for a in range(k):
                for b in range(k):
                    hess[:, a, :, b] = (X.T @ X.multiply(curvature[:, a, b][:, None])).toarray()
            eye = np.eye(d * k)
            self._prior.append(cho_solve(cho_factor(hess.reshape(d * k, -1) + eye / self.C), eye))
            self._cov = self._padded(self._prior[0])
        return self._cov

    def copy(self) -> CardModel:
        """The fitted model before anything was learned (its arrays are never changed in
        place, so they are shared)."""
        out = copy.copy(self)
        out.columns, out._x, out._cov = dict(self.columns), {}, None
        return out

    def fit_context(self, rows: Sequence[Mapping[str, object]]) -> CardModel:
        pairs = [
            (json_object(r["descriptors"]), label)
            for r in rows
            if (label := label_of(json_object(r["outcome"]))) in self.classes
        ]
        for d in self.descriptors:
            numbers = np.array([float(v) for x, _ in pairs if _number(v := x.get(d))])
            if len(numbers):
                self.scale[d] = (
                    float(numbers.mean()),
                    float(numbers.std()),
                    numbers.min(),
                    numbers.max(),
                )
        counts = {k: 0.5 + sum(1 for _, y in pairs if y == k) for k in self.classes}
        self.base = {k: n / sum(counts.values()) for k, n in counts.items()}
        if len({y for _, y in pairs}) >= 2:
            feats = [self._features(x) for x, _ in pairs]
            for f in sorted({f for fs in feats for f in fs}):
                self.columns.setdefault(f, len(self.columns))
            cells = [(i, self.columns[f], v) for i, fs in enumerate(feats) for f, v in fs.items()]
            i, j, v = zip(*cells, strict=True)
            X = csr_matrix((v, (i, j)), shape=(len(feats), len(self.columns)))
            groups = [json.dumps(x.get("groups"), default=str) for x, _ in pairs]
            self._fit(X, np.array([y for _, y in pairs]), groups)
        return self

    def _fit(self, X: csr_matrix, y: np.ndarray[Any, np.dtype[np.str_]], groups: list[str]) -> None:
        from sklearn.linear_model import LogisticRegression, LogisticRegressionCV
        from sklearn.model_selection import GroupKFold

        folds = min(FOLDS, len(set(groups)))
        fit: LogisticRegression | LogisticRegressionCV
        if folds >= 2:  # C by log loss on context groups held out, as the campaign does
            splits = list(GroupKFold(n_splits=folds).split(X, y, groups))
            fit = LogisticRegressionCV(
                Cs=list(C_GRID), cv=splits, scoring="neg_log_loss", solver="newton-cg",
                max_iter=1000, l1_ratios=(0.0,), use_legacy_attributes=False,
            ).fit(X[:, 1:], y)  # fmt: skip
            self.C = float(np.ravel(fit.C_)[0])
        else:
            fit = LogisticRegression(C=self.C, solver="newton-cg", max_iter=1000).fit(X[:, 1:], y)
        self.fitted = [str(k) for k in fit.classes_]
        self.mean = np.vstack([fit.intercept_, np.asarray(fit.coef_, dtype=float).T])
        self._design = X, self._curvature(self._probs(np.asarray(X @ self.mean)))

    def _probs(self, logits: Array) -> Array:
        """The fitted classes' probabilities (rows) from the model's logits (rows); a binary
        fit has one logit, of its second class against the first."""
        z = np.column_stack([np.zeros(len(logits)), logits]) if len(self.fitted) == 2 else logits
        e = np.exp(z - z.max(axis=1, keepdims=True))
        return np.asarray(e / e.sum(axis=1, keepdims=True), dtype=float)

    def _curvature(self, p: Array) -> Array:
        """The Hessian of -log p over the logits, per row: diag(p) - p p^T (binary: its
        second class's entry)."""
        h = np.einsum("ik,kl->ikl", p, np.eye(p.shape[1])) - np.einsum("ik,il->ikl", p, p)
        return np.asarray(h[:, 1:, 1:] if len(self.fitted) == 2 else h, dtype=float)

    def predict(self, desc: Mapping[str, object]) -> dict[str, float]:
        fitted = dict(self.base)
        if self.fitted:
            fitted = dict.fromkeys(self.classes, 0.0)
            p = self._probs((self._vector(desc) @ self.mean)[None, :])[0]
            fitted.update(zip(self.fitted, map(float, p), strict=True))
        out = {k: (1 - BASE_SHARE) * fitted[k] + BASE_SHARE * self.base[k] for k in self.classes}
        return out if self.validity else {**out, FAILURE: 0.0}

    def learn(self, desc: Mapping[str, object], dist: Mapping[str, float], weight: float) -> None:
        self._update(desc, dist, weight, covariance=True)

    def _update(
        self, desc: Mapping[str, object], dist: Mapping[str, float], weight: float, covariance: bool
    ) -> None:
        """One Newton step of the posterior with `dist` observed at `desc`, counted `weight`
        times (Woodbury: the cost is the coefficients' count squared, not cubed)."""
        target = np.array([float(dist.get(k, 0.0)) for k in self.fitted])
        if not self.fitted or target.sum() <= 0:
            return  # nothing fitted to update, or an outcome the fit cannot hold
        x = self._vector(desc)
        d, k = self.mean.shape
        p = self._probs((x @ self.mean)[None, :])[0]
        step = weight * (target / target.sum() - p)
        step = step[1:] if len(self.fitted) == 2 else step
        curv = weight * self._curvature(p[None, :])[0]
        nz = np.flatnonzero(x)  # cov (x kron I), from the columns x sets
        cov_u = self.cov[:, (nz[:, None] * k + np.arange(k)).ravel()].reshape(d * k, len(nz), k)
        cov_u = np.tensordot(cov_u, x[nz], axes=([1], [0]))
        latent = np.tensordot(x[nz], cov_u.reshape(d, k, k)[nz], axes=1)  # its logits' cov
        gain = cov_u @ np.linalg.inv(np.eye(k) + curv @ latent)
        self.mean = self.mean + (gain @ step).reshape(d, k)
        if covariance:
            self._cov = self.cov - gain @ curv @ cov_u.T

    @contextmanager
    def trying(
        self, desc: Mapping[str, object], dist: Mapping[str, float], weight: float
    ) -> Iterator[None]:
        """Learn `dist` for `desc` for the block, then take it back exactly."""
        self._vector(desc)  # any new level's column stays: it carries no information
        mean = self.mean if self.fitted else None
        self._update(desc, dist, weight, covariance=False)  # the forecasts read the mean only
        try:
            yield
        finally:
            if mean is not None:
                self.mean = mean

    def touches(self, a: Mapping[str, object], b: Mapping[str, object]) -> bool:
        """Every query moves with a learned outcome (through the intercept at least)."""
        return True


ContextModel = AffinityModel | CardModel
_FITS: dict[str, CardModel] = {}  # the last fits: the runs and the board refit one spec often


def _fitted(
    key: str,
    categories: Sequence[str],
    declared: TableDeclaration,
    context: Sequence[Mapping[str, object]],
) -> CardModel:
    if key not in _FITS:
        while len(_FITS) >= 2:
            del _FITS[next(iter(_FITS))]
        _FITS[key] = CardModel(categories, declared).fit_context(context)
    return _FITS[key].copy()


_ROWS_KEYS: list[tuple[object, str]] = []  # the last rows read and their key


def _rows_key(rows: Sequence[Mapping[str, object]]) -> str:
    """The rows' content hash; the last one kept with its rows, since a compile's specs share
    one list of context rows and dumping it per spec cost more than the fit on a large table."""
    if not _ROWS_KEYS or _ROWS_KEYS[0][0] is not rows:
        text = json.dumps(rows, sort_keys=True, default=str)
        _ROWS_KEYS[:] = [(rows, hashlib.sha256(text.encode()).hexdigest())]
    return _ROWS_KEYS[0][1]


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
        key = json.dumps([categories, declared], sort_keys=True, default=str) + _rows_key(context)
        return _fitted(hashlib.sha256(key.encode()).hexdigest(), categories, declared, context)
    return AffinityModel(categories=categories).fit_context(context)
