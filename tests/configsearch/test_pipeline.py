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


def test_rf_scm_evaluation_reuses_fits_across_s(evaluator: Evaluator) -> None:
    model = build_model("rf-scm", True)
    first = evaluator.evaluate(model, Config(0.0, 4, 2))
    assert np.isfinite(first.mae) and first.mae > 0
    assert first.n_test == sum(min(2, len(c)) for c in evaluator.clusters(0.0, 4))
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


def test_structure_models_refuse_composition_only_tasks() -> None:
    with pytest.raises(SpecError, match="composition-only"):
        build_model("ofm-mlp", False)
    assert build_model("rf-scm", False).requires == frozenset({"magpie"})
    with pytest.raises(SpecError, match="unknown model"):
        build_model("alignn", True)
