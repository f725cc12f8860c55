"""The OOD evaluation pipeline for one configuration c = (r, n, s) (paper section 6.1).

Stages and what each is cached by:
  sample        (task, seed, r)            JARVIS share r of n_total, nested across r (below)
  features      per material               FeatureStore
  embedding     (task, seed, r)            t-SNE to 2-D, Gaussian KDE, the n_ood sparsest samples
  clusters      (task, seed, r, n)         k-means of the OOD candidates in feature space
  folds         (task, seed, r, n)         per cluster: its members, and the test order = the
                                            anchor (member nearest the centroid) then its
                                            s_max - 1 nearest OOD candidates (feature space)
  fits          (task, model, seed, r, n)  one fit per fold; every s reuses the same fits,
                                            because the held-out block does not depend on s:
                                            s only picks which predictions count

Test sets (declared, paper step 6): a fold's s test points are the anchor and its s - 1 nearest
neighbours among ALL OOD candidates (not only the cluster's members), so every fold has exactly s
test points whenever s <= s_max <= n_ood; a configuration with s > s_max or s > n_ood is
infeasible, never silently shortened. The training set excludes the cluster (paper: "all samples
except this cluster") and also the anchor's s_max nearest candidates, so no test point of any s
is ever trained on and one fit per fold serves every s. Each evaluation records its per-fold test
sizes and the number of distinct test materials (folds of nearby anchors may share neighbours).

Degenerate folds (declared): a fold whose test targets all equal one value that at least 5% of
the sample shares (a point mass of the target: zero-gap metals, a 0/1 class) is flagged; its
error says little about extrapolation. Every evaluation records how many folds are degenerate and
the MAE without them, so the spread of MAE over configurations can be shown with and without.

Sampling is nested (declared): one seeded permutation per side; a share r takes the first
round(r * n_total) JARVIS materials and the first n_total - that MP materials. So the 11 samples of
one seed share materials, features are computed for at most n_total + |JARVIS| materials per
task, and differences between r values are not blurred by resampling noise. A configuration whose
JARVIS count exceeds the JARVIS pool is infeasible and is reported, never resampled.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NotRequired, TypedDict

import numpy as np

from labreplay.errors import DataError, SpecError
from labreplay.sdk import derive_seed, make_rng, sha256_json
from labreplay.suites.configsearch.cache import (
    PIPELINE_VERSION,
    CacheStats,
    cache_root,
    load_npz,
    save_npz,
)
from labreplay.suites.configsearch.data import (
    Material,
    load_jarvis,
    load_matbench,
    task_def,
    unverified_files,
)
from labreplay.suites.configsearch.events import EvaluationPayload
from labreplay.suites.configsearch.features import FeatureStore
from labreplay.suites.configsearch.models import ModelData, PropertyModel
from labreplay.suites.configsearch.space import Config

DEGENERATE_SHARE = 0.05


@dataclass(frozen=True)
class Fold:
    """One fold: the cluster's members and its test order (anchor, then nearest candidates);
    both are sample indices. The s test points of a configuration are test_order[:s]."""

    members: np.ndarray
    test_order: np.ndarray


class PipelineProvenance(TypedDict):
    """What a configsearch spec records of its pipeline (`Evaluator.provenance`)."""

    task: str
    task_description: str
    mp_pool: int
    jarvis_pool: int
    jarvis_excluded: dict[str, int]  # reason -> JARVIS entries left out
    files: list[str]
    feature_space: str
    settings: dict[str, int | float]
    pipeline_version: str
    unverified_data: NotRequired[list[str]]  # --allow-modified-data: files off the manifest


@dataclass(frozen=True)
class PipelineSettings:
    n_total: int = 1600
    n_ood: int = 480
    val_fraction: float = 0.1
    seed: int = 42
    tsne_perplexity: float = 30.0
    # PCA to 50 dims before t-SNE (sklearn's advice for dense high-dim input; cuts cost, not
    # the neighbourhoods t-SNE preserves)
    tsne_pca_dims: int = 50
    # depth of the held-out block per fold: the largest s any configuration may ask for
    s_max: int = 10

    def __post_init__(self) -> None:
        if self.n_ood >= self.n_total or self.n_ood < 4:
            raise SpecError(f"n_ood={self.n_ood} must be in [4, n_total={self.n_total})")
        if not 1 <= self.s_max <= self.n_ood:
            raise SpecError(f"s_max={self.s_max} must be in [1, n_ood={self.n_ood}]")
        if not 0.0 <= self.val_fraction < 0.5:
            raise SpecError(f"val_fraction={self.val_fraction} must be in [0, 0.5)")

    def to_json(self) -> dict[str, int | float]:
        return asdict(self)


@dataclass(frozen=True)
class Evaluation:
    config: Config
    model: str
    mae: float
    accuracy: float | None
    n_test: int
    fits_trained: int
    fits_reused: int
    seconds: float
    fold_test_sizes: tuple[int, ...] = ()
    n_test_distinct: int = 0
    degenerate_folds: int = 0
    mae_nondegenerate: float | None = None
    # sample SD (ddof 1) of the pooled absolute errors: SE(c) = abs_error_sd / sqrt(n_test)
    abs_error_sd: float | None = None

    def to_json(self) -> EvaluationPayload:
        return {
            "config": self.config.to_json(),
            "model": self.model,
            "mae": self.mae,
            "accuracy": self.accuracy,
            "n_test": self.n_test,
            "fold_test_sizes": list(self.fold_test_sizes),
            "n_test_distinct": self.n_test_distinct,
            "degenerate_folds": self.degenerate_folds,
            "mae_nondegenerate": self.mae_nondegenerate,
            "abs_error_sd": self.abs_error_sd,
            # the fold fits this evaluation needs; whether they came from the cache is run-time
            # bookkeeping (CacheStats), kept out of the hashed trajectory
            "fold_fits": self.config.n,
        }


class Evaluator:
    """Evaluates m(o, c) for one task on the real data, caching every stage."""

    def __init__(
        self,
        data_dir: Path,
        task: str,
        settings: PipelineSettings | None = None,
        cache_dir: Path | None = None,
        stats: CacheStats | None = None,
        n_jobs: int = 1,
        allow_modified_data: bool = False,
    ) -> None:
        # threads for t-SNE, k-means and model fits; changes speed, never results
        self.n_jobs = max(1, n_jobs)
        self.task = task
        self.definition = task_def(task)
        self.settings = settings or PipelineSettings()
        self.stats = stats or CacheStats()
        self.root = cache_root(cache_dir)
        self.features = FeatureStore(self.root, self.stats)
        # the task's shared files against the manifest before any is read (a user's dataset
        # has none); modified ones are refused, or with --allow-modified-data enter the spec
        self.unverified = unverified_files(data_dir, task, allow_modified_data)
        self.mp = load_matbench(data_dir, task)
        self.jarvis = load_jarvis(data_dir, task)
        seed, n_total = self.settings.seed, self.settings.n_total
        if len(self.mp) < n_total:
            raise DataError(
                f"task {task}: {len(self.mp)} materials, fewer than n_total={n_total}",
                file=", ".join(self.mp.files),
                field="n_total",
            )
        self._mp_order = make_rng(seed, "configsearch", "sample", task, "mp").permutation(
            len(self.mp)
        )[:n_total]
        self._jarvis_order = make_rng(seed, "configsearch", "sample", task, "jarvis").permutation(
            len(self.jarvis)
        )
        self.space_key = sha256_json(
            [PIPELINE_VERSION, task, self.settings.to_json(), len(self.mp), len(self.jarvis)]
        )[:16]
        self._memory: dict[str, Any] = {}
        self.feature_kind = "ofm" if self.definition.structure_based else "composition_ofm"

    # ------------------------------------------------------------------ feasibility & sample
    def jarvis_count(self, r: float) -> int:
        return round(r * self.settings.n_total)

    def infeasible_reason(self, config: Config) -> str | None:
        if config.n > self.settings.n_ood:
            return f"n={config.n} clusters exceed the {self.settings.n_ood} OOD candidates"
        if config.s > self.settings.s_max:
            return f"s={config.s} exceeds the held-out depth s_max={self.settings.s_max}"
        need = self.jarvis_count(config.r)
        if need > len(self.jarvis):
            return (
                f"r={config.r:g} needs {need} JARVIS materials with {self.task} targets; only "
                f"{len(self.jarvis)} JARVIS structures carry this target here"
            )
        return None

    def sample(self, r: float) -> list[Material]:
        n_j = self.jarvis_count(r)
        if n_j > len(self.jarvis):
            raise SpecError(
                f"task {self.task}: share r={r:g} is infeasible ({n_j} > "
                f"{len(self.jarvis)} JARVIS materials)"
            )
        jarvis = [self.jarvis.materials[i] for i in self._jarvis_order[:n_j]]
        mp = [self.mp.materials[i] for i in self._mp_order[: self.settings.n_total - n_j]]
        return jarvis + mp

    def _cached(self, name: str, key: Sequence[object]) -> tuple[Path, str]:
        digest = sha256_json([self.space_key, name, *key])[:20]
        return self.root / self.task / name / f"{digest}.npz", f"{name}:{digest}"

    # ------------------------------------------------------------------ stages
    def embedding(self, r: float) -> dict[str, np.ndarray]:
        """2-D t-SNE of the sample's OFM, KDE density, indices of the n_ood sparsest samples."""
        path, mem = self._cached("embedding", [r])
        if mem in self._memory:
            self.stats.hit("embedding")
            return dict(self._memory[mem])
        stored = load_npz(path)
        if stored is None:
            self.stats.miss("embedding")
            stored = self._embed(r)
            save_npz(path, **stored)
        else:
            self.stats.hit("embedding")
        self._memory[mem] = stored
        return stored

    def _embed(self, r: float) -> dict[str, np.ndarray]:
        from scipy.stats import gaussian_kde
        from sklearn.decomposition import PCA
        from sklearn.manifold import TSNE
        from threadpoolctl import threadpool_limits

        x = self.features.matrix(self.feature_kind, self.sample(r))
        seed = derive_seed(self.settings.seed, "configsearch", "tsne", self.task, f"{r:g}")
        dims = min(self.settings.tsne_pca_dims, x.shape[1], x.shape[0] - 1)
        perplexity = min(self.settings.tsne_perplexity, (x.shape[0] - 1) / 3)
        # BLAS/OpenMP pools capped: uncapped they oversubscribe a loaded machine
        with threadpool_limits(limits=self.n_jobs):
            reduced = PCA(n_components=dims, random_state=seed).fit_transform(x)
            emb = TSNE(
                2, perplexity=perplexity, init="pca", random_state=seed, n_jobs=self.n_jobs
            ).fit_transform(reduced)
        density = gaussian_kde(emb.T)(emb.T)
        # stable sort: ties broken by sample position, so the choice is reproducible
        ood = np.argsort(density, kind="stable")[: self.settings.n_ood]
        return {"embedding": emb, "density": density, "ood": np.sort(ood)}

    def folds(self, r: float, n: int) -> list[Fold]:
        """Per k-means cluster of the OOD candidates: its members and its test order (anchor
        first, then the anchor's nearest OOD candidates; see the module doc)."""
        path, mem = self._cached("folds", [r, n, self.settings.s_max])
        if mem in self._memory:
            self.stats.hit("clusters")
            return list(self._memory[mem])
        stored = load_npz(path)
        if stored is None:
            self.stats.miss("clusters")
            folds = self._cluster(r, n)
            arrays = {f"m{k}": f.members for k, f in enumerate(folds)}
            arrays |= {f"t{k}": f.test_order for k, f in enumerate(folds)}
            save_npz(path, **arrays)
        else:
            self.stats.hit("clusters")
            folds = [Fold(stored[f"m{k}"], stored[f"t{k}"]) for k in range(n)]
        self._memory[mem] = folds
        return folds

    def clusters(self, r: float, n: int) -> list[np.ndarray]:
        """The members of each cluster (sample indices), a partition of the OOD candidates."""
        return [f.members for f in self.folds(r, n)]

    def _cluster(self, r: float, n: int) -> list[Fold]:
        from sklearn.cluster import KMeans
        from threadpoolctl import threadpool_limits

        ood = self.embedding(r)["ood"]
        x = self.features.matrix(self.feature_kind, self.sample(r))[ood]
        seed = derive_seed(
            self.settings.seed, "configsearch", "kmeans", self.task, f"{r:g}", str(n)
        )
        with threadpool_limits(limits=self.n_jobs):
            model = KMeans(n_clusters=n, n_init=10, random_state=seed).fit(x)
        depth = self.settings.s_max
        folds = []
        for k in range(n):
            members = np.flatnonzero(model.labels_ == k)
            to_centre = np.linalg.norm(x[members] - model.cluster_centers_[k], axis=1)
            anchor = members[int(np.argmin(to_centre))]
            to_anchor = np.linalg.norm(x - x[anchor], axis=1)
            to_anchor[anchor] = -1.0  # the anchor first, even if a duplicate sits at distance 0
            # ties broken by candidate position, so the order is reproducible
            order = np.lexsort((np.arange(len(ood)), to_anchor))[:depth]
            members_sorted = members[np.lexsort((members, to_anchor[members]))]
            folds.append(Fold(ood[members_sorted], ood[order]))
        return folds

    def model_data(self, r: float, model: PropertyModel) -> ModelData:
        key = f"data:{r:g}:{','.join(sorted(model.requires))}"
        if key not in self._memory:
            sample = self.sample(r)
            features = {
                kind: self.features.matrix(kind, sample)
                for kind in sorted(model.requires)
                if kind not in ("formula", "structure")
            }
            self._memory[key] = ModelData(
                features=features,
                formulas=[m.formula for m in sample],
                target=np.array([m.target for m in sample]),
                # graph models build their own inputs from the materials (declared in gnn.py)
                extra={"materials": sample} if "structure" in model.requires else {},
            )
        data: ModelData = self._memory[key]
        return data

    def fold_split(
        self, r: float, n: int, k: int, model_name: str
    ) -> tuple[np.ndarray, np.ndarray, int]:
        """Fold k's (train rows, validation rows, fit seed): the sample minus the fold's
        held-out block (cluster + test order), a seeded val_fraction of it held for early
        stopping. Public so benchmarks time fits on exactly the folds a sweep fits."""
        fold = self.folds(r, n)[k]
        everything = np.arange(len(self.sample(r)))
        rest = np.setdiff1d(everything, np.union1d(fold.members, fold.test_order))
        rng = make_rng(
            self.settings.seed, "configsearch", "validation", self.task, f"{r:g}", str(n), str(k)
        )
        n_val = math.floor(self.settings.val_fraction * len(rest))
        shuffled = rng.permutation(rest)
        val, train = np.sort(shuffled[:n_val]), np.sort(shuffled[n_val:])
        fit_seed = derive_seed(
            self.settings.seed, "configsearch", "fit", self.task, model_name, f"{r:g}", str(n),
            str(k),
        )  # fmt: skip
        return train, val, fit_seed

    def fold_predictions(
        self, model: PropertyModel, r: float, n: int
    ) -> tuple[list[np.ndarray], int, int]:
        """Each fold's predictions for its test order (anchor, then neighbours), from one fit per
        fold on the sample minus the fold's held-out block (cluster + test order)."""
        missing_inputs = model.requires - {"formula", "magpie", "composition_ofm"}
        if missing_inputs and not self.definition.structure_based:
            raise SpecError(
                f"model {model.name} needs {sorted(missing_inputs)}; task "
                f"{self.task} is composition-only"
            )
        path, _ = self._cached("fits", [model.name, model.params(), r, n, self.settings.s_max])
        folds = self.folds(r, n)
        stored = load_npz(path)
        if stored is not None:
            self.stats.hit("fits", n)
            return [stored[f"p{k}"] for k in range(n)], 0, n
        self.stats.miss("fits", n)
        data = self.model_data(r, model)
        predictions = []
        for k, fold in enumerate(folds):
            train, val, fit_seed = self.fold_split(r, n, k, model.name)
            model.fit(data, train, val, fit_seed)
            predictions.append(np.asarray(model.predict(data, fold.test_order), dtype=float))
        save_npz(path, **{f"p{k}": p for k, p in enumerate(predictions)})
        return predictions, n, 0

    def point_masses(self, r: float) -> np.ndarray:
        """Target values shared by at least 5% of the sample (see degenerate folds above)."""
        key = f"masses:{r:g}"
        if key not in self._memory:
            values, counts = np.unique(
                np.array([m.target for m in self.sample(r)]), return_counts=True
            )
            self._memory[key] = values[counts >= DEGENERATE_SHARE * counts.sum()]
        masses: np.ndarray = self._memory[key]
        return masses

    def evaluate(self, model: PropertyModel, config: Config) -> Evaluation:
        """m(o, c): MAE over the pooled test predictions of all n folds."""
        return self.evaluate_training_sets(model, config.r, config.n, (config.s,))[0]

    def evaluate_training_sets(
        self, model: PropertyModel, r: float, n: int, s_values: tuple[int, ...]
    ) -> list[Evaluation]:
        """Every (r, n, s) for the given s from the same n fold fits: the unit of work a
        distributed sweep hands to one worker, so no worker refits what another fitted."""
        for s in s_values:
            reason = self.infeasible_reason(Config(r, n, s))
            if reason is not None:
                raise SpecError(f"configuration {Config(r, n, s).label()} is infeasible: {reason}")
        started = time.perf_counter()
        folds = self.folds(r, n)
        predictions, trained, reused = self.fold_predictions(model, r, n)
        target = np.array([m.target for m in self.sample(r)])
        masses = self.point_masses(r)
        fit_seconds = time.perf_counter() - started
        out = []
        for i, s in enumerate(s_values):
            tests = [f.test_order[:s] for f in folds]
            if any(len(t) != s for t in tests):  # unreachable while s <= s_max <= n_ood
                raise SpecError(f"a fold of {Config(r, n, s).label()} has fewer than s points")
            truths = [target[t] for t in tests]
            errors = [np.abs(p[:s] - y) for p, y in zip(predictions, truths, strict=True)]
            degenerate = [bool(np.all(y == y[0]) and np.isin(y[0], masses)) for y in truths]
            kept = [e for e, d in zip(errors, degenerate, strict=True) if not d]
            pred = np.concatenate([p[:s] for p in predictions])
            truth = np.concatenate(truths)
            pooled = np.concatenate(errors)
            accuracy = None
            if self.definition.classification:
                accuracy = float(np.mean((pred >= 0.5) == (truth >= 0.5)))
            out.append(
                Evaluation(
                    config=Config(r, n, s),
                    model=model.name,
                    mae=float(np.mean(pooled)),
                    accuracy=accuracy,
                    n_test=len(truth),
                    fits_trained=trained if i == 0 else 0,
                    fits_reused=reused if i == 0 else n,
                    seconds=fit_seconds if i == 0 else 0.0,
                    fold_test_sizes=tuple(len(t) for t in tests),
                    n_test_distinct=len(np.unique(np.concatenate(tests))),
                    degenerate_folds=sum(degenerate),
                    mae_nondegenerate=float(np.mean(np.concatenate(kept))) if kept else None,
                    abs_error_sd=float(np.std(pooled, ddof=1)) if len(pooled) > 1 else None,
                )
            )
        return out

    def provenance(self) -> PipelineProvenance:
        out: PipelineProvenance = {
            "task": self.task,
            "task_description": self.definition.description,
            "mp_pool": len(self.mp),
            "jarvis_pool": len(self.jarvis),
            "jarvis_excluded": dict(self.jarvis.excluded),
            "files": sorted(set(self.mp.files) | set(self.jarvis.files)),
            "feature_space": self.feature_kind,
            "settings": self.settings.to_json(),
            "pipeline_version": PIPELINE_VERSION,
        }
        if (
            self.unverified
        ):  # only when non-empty, so the specs of unmodified data keep their hashes
            out["unverified_data"] = self.unverified
        return out
