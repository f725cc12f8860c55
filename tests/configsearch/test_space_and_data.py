from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from labreplay.errors import DataError, SpecError
from labreplay.suites.configsearch.data import TASKS, load_jarvis, load_matbench
from labreplay.suites.configsearch.pipeline import Evaluator, PipelineSettings
from labreplay.suites.configsearch.space import Config, paper_space


def test_paper_space_has_858_points_with_the_n60_cap() -> None:
    points = paper_space().points()
    assert len(points) == 858
    assert len(set(points)) == 858
    assert max(c.s for c in points if c.n == 60) == 8
    assert Config(0.0, 48, 10) in points
    encoded = paper_space().encode(points)
    assert encoded.shape == (858, 3)
    assert encoded.min() == 0.0 and encoded.max() == 1.0


def test_pools_are_real_and_targets_follow_the_declared_definitions(data_dir: Path) -> None:
    gap = load_jarvis(data_dir, "band_gap")
    metal = load_jarvis(data_dir, "metallicity")
    assert 1100 <= len(gap) <= 1143  # README: 1,143 rows with the gap, 2 duplicate jids
    by_key = {m.key: m.target for m in gap.materials}
    for m in metal.materials:
        assert m.target == (1.0 if by_key[m.key] <= 0.001 else 0.0)
    assert len(load_matbench(data_dir, "band_gap")) == 24000
    assert set(np.unique([m.target for m in load_matbench(data_dir, "metallicity").materials])) == {
        0.0,
        1.0,
    }
    # refractive index on JARVIS: sqrt of the mean of meps x, y, z, recomputed from the raw row
    rows = {}
    with (data_dir / "jarvis/jarvis_structures_with_leaderboard_targets.jsonl").open() as handle:
        for line in handle:
            row = json.loads(line)
            rows.setdefault(row["jid"], row)
    refr = load_jarvis(data_dir, "refractive_index")
    assert 600 <= len(refr) <= 654
    sample = refr.materials[0]
    raw = rows[sample.key.split("#", 1)[1]]
    expect = math.sqrt(sum(raw[f"dft_3d_meps{a}"]["value"] for a in "xyz") / 3)
    assert sample.target == pytest.approx(expect)
    bulk = load_matbench(data_dir, "bulk_modulus")
    assert len(bulk) == 10987 and all(m.cif for m in bulk.materials[:5])
    assert not TASKS["formation_energy"].structure_based


def test_infeasible_jarvis_share_is_reported_not_resampled(data_dir: Path, cache_dir: Path) -> None:
    evaluator = Evaluator(data_dir, "band_gap", PipelineSettings(), cache_dir)
    assert evaluator.infeasible_reason(Config(0.7, 4, 1)) is None
    reason = evaluator.infeasible_reason(Config(0.8, 4, 1))
    assert reason is not None and "1280" in reason and str(len(evaluator.jarvis)) in reason
    with pytest.raises(SpecError, match="infeasible"):
        evaluator.sample(0.8)


def test_unknown_task_and_bad_files_fail_with_named_errors(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="unknown configsearch task 'nope'"):
        load_jarvis(tmp_path, "nope")
    (tmp_path / "jarvis").mkdir()
    (tmp_path / "jarvis/jarvis_structures_with_leaderboard_targets.jsonl").write_text(
        '{"jid": "JVASP-1", "atoms": {"elements": ["Si"]}}\n{broken\n'
    )
    with pytest.raises(DataError, match=r"jarvis_structures.*line 2"):
        load_jarvis(tmp_path, "band_gap")
    with pytest.raises(DataError, match="file not found"):
        load_matbench(tmp_path, "band_gap")
