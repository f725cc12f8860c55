"""The evaluation pipeline on real band-gap data, small declared setting (see conftest)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from labreplay.errors import SpecError
from labreplay.suites.configsearch.cache import CacheStats
from labreplay.suites.configsearch.models import build_model, model_names
from labreplay.suites.configsearch.pipeline import Evaluator
from labreplay.suites.configsearch.space import Config

from .conftest import SMALL_SETTINGS


@pytest.fixture(scope="module")
def evaluator(data_dir: Path, cache_dir: Path) -> Evaluator:
    return Evaluator(data_dir, "band_gap", SMALL_SETTINGS, cache_dir)


def test_sample_is_nested_across_shares_and_seeded(evaluator: Evaluator) -> None:
    at_0 = evaluator.sample(0.0)
    at_half = evaluator.sample(0.5)
    assert len(at_0) == len(at_half) == 200
    assert sum(m.source == "jarvis" for m in at_half) == 100
    # the MP part of r=0.5 is the first half of the MP part of r=0
    assert [m.key for m in at_half if m.source == "mp"] == [m.key for m in at_0[:100]]


def test_ood_clusters_and_folds_follow_the_protocol(evaluator: Evaluator) -> None:
    emb = evaluator.embedding(0.0)
    assert emb["embedding"].shape == (200, 2)
    assert len(emb["ood"]) == 60
    # the OOD candidates are the 60 lowest-density samples
    assert emb["density"][emb["ood"]].max() <= np.sort(emb["density"])[59] + 1e-12
    clusters = evaluator.clusters(0.0, 4)
    assert len(clusters) == 4
    members = np.concatenate(clusters)
    assert sorted(members.tolist()) == sorted(emb["ood"].tolist())  # a partition of the OOD set


def test_every_fold_has_exactly_s_test_points_the_anchors_nearest_candidates(
    evaluator: Evaluator,
) -> None:
    ood = evaluator.embedding(0.0)["ood"]
    x = evaluator.features.matrix(evaluator.feature_kind, evaluator.sample(0.0))
    # n = 6 over 60 candidates: some clusters are smaller than s_max, which used to cut the
    # test set short; now every fold supplies s points for every s <= s_max
    folds = evaluator.folds(0.0, 6)
    assert min(len(f.members) for f in folds) < evaluator.settings.s_max
    for fold in folds:
        assert len(fold.test_order) == evaluator.settings.s_max
        anchor = fold.test_order[0]
        assert anchor in fold.members
        dist = np.linalg.norm(x[ood] - x[anchor], axis=1)
        # the test order is the anchor's nearest OOD candidates, nearest first
        expected = np.sort(dist)[: evaluator.settings.s_max]
        assert np.allclose(np.linalg.norm(x[fold.test_order] - x[anchor], axis=1), expected)
        assert set(fold.test_order) <= set(ood)
    model = build_model("rf-scm", True)
    results = evaluator.evaluate_training_sets(model, 0.0, 6, (1, 3, 10))
    for result in results:
        s = result.config.s
        assert result.fold_test_sizes == (s,) * 6 and result.n_test == 6 * s
        assert 1 <= result.n_test_distinct <= 6 * s
        assert result.degenerate_folds <= 6
    with pytest.raises(SpecError, match="held-out depth"):
        evaluator.evaluate(model, Config(0.0, 6, evaluator.settings.s_max + 1))


def test_degenerate_folds_are_flagged_and_left_out_of_the_clean_mae(evaluator: Evaluator) -> None:
    model = build_model("rf-scm", True)
    (one,) = evaluator.evaluate_training_sets(model, 0.0, 6, (1,))
    target = np.array([m.target for m in evaluator.sample(0.0)])
    anchors = [f.test_order[0] for f in evaluator.folds(0.0, 6)]
    # band gap: zero-gap metals are a point mass, so a metal anchor is a degenerate s = 1 fold
    assert 0.0 in evaluator.point_masses(0.0)
    assert one.degenerate_folds == sum(target[a] == 0.0 for a in anchors)
    if one.degenerate_folds == 6:
        assert one.mae_nondegenerate is None
    else:
        assert one.mae_nondegenerate is not None


def test_training_never_sees_a_test_point(evaluator: Evaluator) -> None:
    seen: list[np.ndarray] = []

    class Spy:
        name, requires = "spy", frozenset({"magpie"})

        def params(self) -> dict[str, object]:
            return {"spy": True}

        def fit(self, data: object, train: np.ndarray, val: np.ndarray, seed: int) -> None:
            seen.append(np.union1d(train, val))

        def predict(self, data: object, rows: np.ndarray) -> np.ndarray:
            return np.zeros(len(rows))

    evaluator.fold_predictions(Spy(), 0.5, 4)  # type: ignore[arg-type]
    for rows, fold in zip(seen, evaluator.folds(0.5, 4), strict=True):
        assert not set(rows) & (set(fold.members) | set(fold.test_order))


def test_rf_scm_evaluation_reuses_fits_across_s(evaluator: Evaluator) -> None:
    model = build_model("rf-scm", True)
    first = evaluator.evaluate(model, Config(0.0, 4, 2))
    assert np.isfinite(first.mae) and first.mae > 0
    assert first.n_test == 8 and first.fold_test_sizes == (2, 2, 2, 2)
    again = evaluator.evaluate(model, Config(0.0, 4, 3))
    assert again.fits_trained == 0 and again.fits_reused == 4  # s only picks predictions
    same = evaluator.evaluate(model, Config(0.0, 4, 2))
    assert same.mae == first.mae


def test_a_fresh_evaluator_reads_the_disk_cache_and_agrees(
    data_dir: Path, cache_dir: Path, evaluator: Evaluator
) -> None:
    model = build_model("rf-scm", True)
    expected = evaluator.evaluate(model, Config(0.0, 4, 1)).mae
    stats = CacheStats()
    fresh = Evaluator(data_dir, "band_gap", SMALL_SETTINGS, cache_dir, stats)
    assert fresh.evaluate(model, Config(0.0, 4, 1)).mae == expected
    assert stats.misses["fits"] == 0 and stats.misses["embedding"] == 0
    assert stats.ratio() == 1.0


def test_neural_models_train_on_real_folds(evaluator: Evaluator) -> None:
    assert {"rf-scm", "crabnet", "ofm-mlp"} <= set(model_names())
    for name in ("crabnet", "ofm-mlp"):
        result = evaluator.evaluate(build_model(name, True), Config(0.0, 4, 3))
        # a model that learned nothing would sit near the spread of the target; a broken one
        # (unscaled inputs) far above it
        assert 0 < result.mae < 3.0, (name, result.mae)


def test_crabnet_fits_are_bit_identical_for_one_seed_and_trimming_is_exact(
    evaluator: Evaluator,
) -> None:
    import torch

    from labreplay.suites.configsearch.crabnet import _network, trimmed_batches

    model = build_model("crabnet", True)
    data = evaluator.model_data(0.0, model)
    train, val, seed = evaluator.fold_split(0.0, 4, 0, model.name)
    test = evaluator.folds(0.0, 4)[0].test_order
    runs = []
    for _ in range(2):
        model.fit(data, train, val, seed)
        runs.append(model.predict(data, test))
    assert np.array_equal(runs[0], runs[1])  # same seed -> the same bits
    model.fit(data, train, val, seed + 1)
    assert not np.array_equal(model.predict(data, test), runs[0])  # the seed matters
    # per-batch trimming of the padding is the full-padding network up to float rounding
    z, frac = model._encoded(data)  # type: ignore[attr-defined]
    rows = np.arange(len(data.target))
    trimmed = trimmed_batches(z, frac)(rows)
    assert trimmed[0].shape[1] == int((z > 0).sum(axis=1).max()) < z.shape[1]
    net = _network(0).eval()
    with torch.no_grad():
        full = net(torch.from_numpy(z), torch.from_numpy(frac)).numpy()
        cut = net(*trimmed).numpy()
    assert np.allclose(full, cut, rtol=1e-5, atol=1e-6)


def test_every_crabnet_setting_enters_its_params() -> None:
    from labreplay.suites.configsearch.crabnet import CompositionAttention

    base = CompositionAttention().params()
    for changed in ({"epochs": 60}, {"patience": 4}, {"batch_size": 64}):
        params = CompositionAttention(**changed).params()  # type: ignore[arg-type]
        assert params != base and params.items() >= changed.items()


def test_structure_models_refuse_composition_only_tasks() -> None:
    with pytest.raises(SpecError, match="composition-only"):
        build_model("ofm-mlp", False)
    assert build_model("rf-scm", False).requires == frozenset({"magpie"})
    with pytest.raises(SpecError, match="unknown model"):
        build_model("schnet", True)
