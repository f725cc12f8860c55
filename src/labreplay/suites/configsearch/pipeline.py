"""The OOD evaluation pipeline for one configuration c = (r, n, s) (paper section 6.1).

Stages and what each is cached by:
  sample        (task, seed, r)            JARVIS share r of n_total, nested across r (below)
  features      per material               FeatureStore
  embedding     (task, seed, r)            t-SNE to 2-D, Gaussian KDE, the n_ood sparsest samples
  clusters      (task, seed, r, n)         k-means of the OOD candidates in feature space
  folds         (task, seed, r, n, s)      cluster anchor + s-1 nearest neighbours (cheap, derived)
  fits          (task, model, seed, r, n)  one fit per cluster; every s reuses the same fits,
                                            because the training set (all but the cluster) does
                                            not depend on s: s only picks which predictions count

Sampling is nested (declared): one seeded permutation per side; a share r takes the first
round(r * n_total) JARVIS materials and the first n_total - that MP materials. So the 11 samples of
one seed share materials, features are computed for at most n_total + |JARVIS| materials per
task, and differences between r values are not blurred by resampling noise. A configuration whose
JARVIS count exceeds the JARVIS pool is infeasible and is reported, never resampled.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from labreplay._hashing import sha256_json
from labreplay._rng import derive_seed, make_rng
from labreplay.errors import SpecError
from labreplay.suites.configsearch.cache import (
    PIPELINE_VERSION,
    CacheStats,
    cache_root,
    load_npz,
    save_npz,
)
from labreplay.suites.configsearch.data import Material, load_jarvis, load_matbench, task_def
from labreplay.suites.configsearch.features import FeatureStore
from labreplay.suites.configsearch.models import ModelData, PropertyModel
from labreplay.suites.configsearch.space import Config


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

    def __post_init__(self) -> None:
        if self.n_ood >= self.n_total or self.n_ood < 4:
            raise SpecError(f"n_ood={self.n_ood} must be in [4, n_total={self.n_total})")
        if not 0.0 <= self.val_fraction < 0.5:
            raise SpecError(f"val_fraction={self.val_fraction} must be in [0, 0.5)")

    def to_json(self) -> dict[str, Any]:
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

    def to_json(self) -> dict[str, Any]:
        return {
            "config": self.config.to_json(),
            "model": self.model,
            "mae": self.mae,
            "accuracy": self.accuracy,
            "n_test": self.n_test,
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
    ) -> None:
        self.task = task
        self.definition = task_def(task)
        self.settings = settings or PipelineSettings()
        self.stats = stats or CacheStats()
        self.root = cache_root(cache_dir)
        self.features = FeatureStore(self.root, self.stats)
        self.mp = load_matbench(data_dir, task)
        self.jarvis = load_jarvis(data_dir, task)
        seed, n_total = self.settings.seed, self.settings.n_total
        if len(self.mp) < n_total:
            raise SpecError(f"task {task}: MP pool has {len(self.mp)} < n_total={n_total}")
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

    def _cached(self, name: str, key: list[Any]) -> tuple[Path, str]:
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

        x = self.features.matrix(self.feature_kind, self.sample(r))
        seed = derive_seed(self.settings.seed, "configsearch", "tsne", self.task, f"{r:g}")
        dims = min(self.settings.tsne_pca_dims, x.shape[1], x.shape[0] - 1)
        reduced = PCA(n_components=dims, random_state=seed).fit_transform(x)
        perplexity = min(self.settings.tsne_perplexity, (x.shape[0] - 1) / 3)
        emb = TSNE(2, perplexity=perplexity, init="pca", random_state=seed).fit_transform(reduced)
        density = gaussian_kde(emb.T)(emb.T)
        # stable sort: ties broken by sample position, so the choice is reproducible
        ood = np.argsort(density, kind="stable")[: self.settings.n_ood]
        return {"embedding": emb, "density": density, "ood": np.sort(ood)}

    def clusters(self, r: float, n: int) -> list[np.ndarray]:
        """Per k-means cluster: sample indices ordered anchor first (nearest the centroid), then
        by feature-space distance to the anchor."""
        path, mem = self._cached("clusters", [r, n])
        if mem in self._memory:
            self.stats.hit("clusters")
            return list(self._memory[mem])
        stored = load_npz(path)
        if stored is None:
            self.stats.miss("clusters")
            ordered = self._cluster(r, n)
            save_npz(path, **{f"c{k}": v for k, v in enumerate(ordered)})
        else:
            self.stats.hit("clusters")
            ordered = [stored[f"c{k}"] for k in range(len(stored))]
        self._memory[mem] = ordered
        return ordered

    def _cluster(self, r: float, n: int) -> list[np.ndarray]:
        from sklearn.cluster import KMeans

        ood = self.embedding(r)["ood"]
        x = self.features.matrix(self.feature_kind, self.sample(r))[ood]
        seed = derive_seed(
            self.settings.seed, "configsearch", "kmeans", self.task, f"{r:g}", str(n)
        )
        model = KMeans(n_clusters=n, n_init=10, random_state=seed).fit(x)
        ordered = []
        for k in range(n):
            members = np.flatnonzero(model.labels_ == k)
            to_centre = np.linalg.norm(x[members] - model.cluster_centers_[k], axis=1)
            anchor = members[int(np.argmin(to_centre))]
            to_anchor = np.linalg.norm(x[members] - x[anchor], axis=1)
            order = members[np.lexsort((members, to_anchor))]  # anchor has distance 0
            ordered.append(ood[order])
        return ordered

    def model_data(self, r: float, model: PropertyModel) -> ModelData:
        key = f"data:{r:g}:{','.join(sorted(model.requires))}"
        if key not in self._memory:
            sample = self.sample(r)
            features = {
                kind: self.features.matrix(kind, sample)
                for kind in sorted(model.requires)
                if kind != "formula"
            }
            self._memory[key] = ModelData(
                features=features,
                formulas=[m.formula for m in sample],
                target=np.array([m.target for m in sample]),
            )
        data: ModelData = self._memory[key]
        return data

    def fold_predictions(
        self, model: PropertyModel, r: float, n: int
    ) -> tuple[list[np.ndarray], int, int]:
        """Predictions for every member of every cluster (same order as `clusters`)."""
        missing_inputs = model.requires - {"formula", "magpie", "composition_ofm"}
        if missing_inputs and not self.definition.structure_based:
            raise SpecError(
                f"model {model.name} needs {sorted(missing_inputs)}; task "
                f"{self.task} is composition-only"
            )
        path, _ = self._cached("fits", [model.name, model.params(), r, n])
        clusters = self.clusters(r, n)
        stored = load_npz(path)
        if stored is not None:
            self.stats.hit("fits", n)
            return [stored[f"p{k}"] for k in range(n)], 0, n
        self.stats.miss("fits", n)
        data = self.model_data(r, model)
        everything = np.arange(len(data.target))
        predictions = []
        for k, members in enumerate(clusters):
            rest = np.setdiff1d(everything, members)
            rng = make_rng(
                self.settings.seed,
                "configsearch",
                "validation",
                self.task,
                f"{r:g}",
                str(n),
                str(k),
            )
            n_val = math.floor(self.settings.val_fraction * len(rest))
            shuffled = rng.permutation(rest)
            val, train = np.sort(shuffled[:n_val]), np.sort(shuffled[n_val:])
            fit_seed = derive_seed(
                self.settings.seed,
                "configsearch",
                "fit",
                self.task,
                model.name,
                f"{r:g}",
                str(n),
                str(k),
            )
            model.fit(data, train, val, fit_seed)
            predictions.append(np.asarray(model.predict(data, members), dtype=float))
        save_npz(path, **{f"p{k}": p for k, p in enumerate(predictions)})
        return predictions, n, 0

    def evaluate(self, model: PropertyModel, config: Config) -> Evaluation:
        """m(o, c): MAE over the pooled test predictions of all n folds."""
        reason = self.infeasible_reason(config)
        if reason is not None:
            raise SpecError(f"configuration {config.label()} is infeasible: {reason}")
        started = time.perf_counter()
        clusters = self.clusters(config.r, config.n)
        predictions, trained, reused = self.fold_predictions(model, config.r, config.n)
        target = np.array([m.target for m in self.sample(config.r)])
        truth = np.concatenate([target[members[: config.s]] for members in clusters])
        pred = np.concatenate([p[: config.s] for p in predictions])
        accuracy = None
        if self.definition.classification:
            accuracy = float(np.mean((pred >= 0.5) == (truth >= 0.5)))
        return Evaluation(
            config=config,
            model=model.name,
            mae=float(np.mean(np.abs(pred - truth))),
            accuracy=accuracy,
            n_test=len(truth),
            fits_trained=trained,
            fits_reused=reused,
            seconds=time.perf_counter() - started,
        )

    def provenance(self) -> dict[str, Any]:
        return {
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
