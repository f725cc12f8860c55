"""Reference files: exported from a real sweep byte-stably, loaded back exactly, replayed by the
real search code; the recorded full-size references give BO an edge over random search."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from labreplay.store.sqlite import Store
from labreplay.suites.configsearch import episodes
from labreplay.suites.configsearch.cli import app
from labreplay.suites.configsearch.references import (
    compare,
    export_references,
    load_reference,
    load_references,
    replay,
    targets_in_space,
)
from labreplay.suites.configsearch.runner import ConfigSearch
from labreplay.suites.configsearch.targets import chance_of_target

from .conftest import SMALL_SETTINGS, SMALL_SPACE

RECORDED = Path(__file__).resolve().parents[2] / "benchmarks" / "references" / "configsearch"


def test_export_round_trips_a_real_sweep_byte_stably(
    data_dir: Path, cache_dir: Path, tmp_path: Path
) -> None:
    store_path = tmp_path / "s.sqlite"
    with Store(store_path) as store:
        campaign = ConfigSearch(
            data_dir, "band_gap", store, SMALL_SETTINGS, SMALL_SPACE, cache_dir, min_test_points=1
        )
        run_id, _ = episodes.sweep(campaign, "rf-scm")
    with Store(store_path, readonly=True) as store:
        stored = ConfigSearch._maes(store.events(run_id))  # the values as canonically stored
        (first,) = export_references(store, tmp_path / "a")
        (second,) = export_references(store, tmp_path / "b")
    assert first.name == "band_gap__rf-scm.json.gz"
    assert first.read_bytes() == second.read_bytes()  # no timestamp, sorted rows
    ref = load_reference(first)
    assert ref.maes == {c: v for (_, c), v in stored.items()}
    assert ref.space == SMALL_SPACE and ref.protocol["n_total"] == SMALL_SETTINGS.n_total
    doc = json.loads(gzip.decompress(first.read_bytes()))
    assert doc["spec_hash"] == campaign.spec_hash and "--tasks band_gap" in doc["regenerate"]
    assert doc["model_params"] == campaign.model("rf-scm").params()
    # the reference records what the fits ran with: commit and library versions
    made = doc["sweep_provenance"]
    assert set(made) >= {"git_commit", "labreplay_version", "libraries"}
    assert made["libraries"]["numpy"] == np.__version__
    # a sweep is the truth only for the model settings it was recorded with
    with Store(store_path) as store:
        again = ConfigSearch(
            data_dir, "band_gap", store, SMALL_SETTINGS, SMALL_SPACE, cache_dir, min_test_points=1
        )
        assert again.truth_table(["rf-scm"]) is not None
        again.model("rf-scm").n_estimators += 1  # type: ignore[attr-defined]
        assert again.truth_table(["rf-scm"]) is None and not any(again.truth_se(["rf-scm"]))


def test_r_slices_of_a_sweep_assemble_into_the_full_reference(
    data_dir: Path, cache_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two sessions each sweep one r slice; export-references assembles one file whose rows are
    the full sweep's (fits are per (r, n), so a slice computes exactly what the full sweep does)."""
    from dataclasses import replace

    from labreplay.errors import DataError

    def sweep(path: Path, r_values: tuple[float, ...]) -> None:
        with Store(path) as store:
            campaign = ConfigSearch(
                data_dir, "band_gap", store, SMALL_SETTINGS,
                replace(SMALL_SPACE, r_values=r_values), cache_dir, min_test_points=1,
            )  # fmt: skip
            episodes.sweep(campaign, "rf-scm")

    r_first, r_second = SMALL_SPACE.r_values
    sweep(tmp_path / "full.sqlite", SMALL_SPACE.r_values)
    sweep(tmp_path / "slices.sqlite", (r_first,))
    with Store(tmp_path / "slices.sqlite", readonly=True) as store:
        export_references(store, tmp_path / "committed")  # a session's slice, committed
    sweep(tmp_path / "second.sqlite", (r_second,))  # a later session, a new store
    sweep(tmp_path / "slices.sqlite", (r_second,))  # or the same store, kept
    with Store(tmp_path / "full.sqlite", readonly=True) as store:
        (full,) = export_references(store, tmp_path / "full")
    with Store(tmp_path / "slices.sqlite", readonly=True) as store:
        (assembled,) = export_references(store, tmp_path / "slices")
    a, b = load_reference(full), load_reference(assembled)
    assert b.maes == a.maes and b.n_test == a.n_test and b.space == a.space
    doc = json.loads(gzip.decompress(assembled.read_bytes()))
    assert [s["r"] for s in doc["slices"]] == [[0.0], [0.5]]
    assert doc["regenerate"].count("--r-values") == 2
    # sessions that keep no store: the committed slice joins the later session's sweep
    result = CliRunner().invoke(
        app,
        ["export-references", "--store", str(tmp_path / "second.sqlite"), "--slices",
         str(tmp_path / "committed"), "--out", str(tmp_path / "joined")],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    joined = tmp_path / "joined" / full.name
    assert joined.read_bytes() == assembled.read_bytes()  # same rows, same slice provenance
    # overlapping slices are refused, also when one of them is an assembled file
    with (
        Store(tmp_path / "full.sqlite", readonly=True) as store,
        pytest.raises(DataError, match="overlap in r"),
    ):
        export_references(store, tmp_path / "never", [joined])
    sweep(tmp_path / "slices.sqlite", SMALL_SPACE.r_values)  # overlaps both slices: refused
    with (
        Store(tmp_path / "slices.sqlite", readonly=True) as store,
        pytest.raises(DataError, match="overlap in r"),
    ):
        export_references(store, tmp_path / "never")
    assert not (tmp_path / "never").exists()
    from labreplay.cli.main import run

    code = run(
        ["configsearch", "export-references", "--store", str(tmp_path / "none.sqlite"),
         "--slices", str(tmp_path / "empty"), "--out", str(tmp_path / "never")]
    )  # fmt: skip
    assert code == 2 and "--slices" in capsys.readouterr().err
    assert not (tmp_path / "never").exists() and not (tmp_path / "none.sqlite").exists()


def test_replay_uses_the_shared_initial_design_and_counts_hits(tmp_path: Path) -> None:
    refs = load_references(RECORDED)
    if not refs:
        pytest.skip("no recorded reference files")
    # the first file (band gap) has a degenerate test fold in every configuration: not scored
    ref = next(r for r in refs if not any(r.degenerate(c) for c in r.maes))
    bo = replay(ref, "bo", [42, 43], budget=6, init=3)
    rand = replay(ref, "random", [42, 43], budget=6, init=3)
    for b, r in zip(bo, rand, strict=True):
        # same seeded initial design: the first three best-so-far values agree
        assert b["normalised_trace"][:3] == r["normalised_trace"][:3]
        assert len(b["normalised_trace"]) == 6
    row = compare(ref, [42, 43], budget=6, init=3, within=6)
    assert 0 <= row["bo_hits"] <= 2 and row["targets_in_space"] == targets_in_space(ref) >= 1
    assert 0 < row["random_chance_within"] < 1
    closest = compare(ref, [42, 43], budget=6, init=3, within=6, problem="closest")
    # C_min only, and never the reference's own (r, n) block
    cmin = [c for c in ref.maes if c.n * c.s >= 30]
    assert closest["candidates"] == sum(1 for c in cmin if not (c.r == 0 and c.n == 48))
    assert closest["closest_answers_in_reference_block"] == 0
    assert isinstance(closest["argopt_in_reference_block"], bool)
    assert row["bo"]["surrogate"] == "botorch" and row["bo"]["versions"]["botorch"]


def test_chance_of_target_is_the_hypergeometric_floor() -> None:
    assert chance_of_target(1, 10, 1) == pytest.approx(0.1)
    assert chance_of_target(2, 10, 2) == pytest.approx(1 - (8 / 10) * (7 / 9))
    assert chance_of_target(0, 10, 5) == 0.0 and chance_of_target(3, 10, 10) == 1.0


def test_bo_beats_random_on_the_recorded_references() -> None:
    """A regression test of the acquisition on real landscapes (hours of model fitting each,
    recorded): pooled over every recorded task, BO needs fewer steps to the target than random
    search sharing its initial design, with a paired interval above 0."""
    from labreplay.suites.configsearch.references import replay_pool

    # two fixed references (the first regenerated with abs_error_sd), however many more get
    # recorded: the test's cost stays put; seeds run in two worker processes (same rows)
    names = ("refractive_index__rf-scm.json.gz", "shear_modulus__rf-scm.json.gz")
    refs = [load_reference(RECORDED / name) for name in names]
    pool = replay_pool(2)
    assert pool is not None
    with pool:
        rows = [compare(ref, range(42, 52), budget=8, init=3, within=8, pool=pool) for ref in refs]
    assert sum(r["steps_saved_mean"] for r in rows) / len(rows) > 0, rows
    assert sum(r["bo_hits"] for r in rows) > sum(r["random_hits"] for r in rows), rows


def test_replay_cli_and_its_errors(tmp_path: Path) -> None:
    refs = sorted(RECORDED.glob("*.json.gz"))
    if not refs:
        pytest.skip("no recorded reference files")
    ok = RECORDED / "refractive_index__rf-scm.json.gz"  # no degenerate test fold
    result = CliRunner().invoke(
        app, ["replay", "--references", str(ok), "--seeds", "2", "--budget", "4", "--json"]
    )
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.output)
    assert row["seeds"] == 2 and row["budget"] == 4 and "steps_saved_ci95" in row
    assert row["scored"] and row["degenerate_configs"] == 0
    # a replay says plainly that it writes no runs and is on no board
    text = CliRunner().invoke(
        app, ["replay", "--references", str(ok), "--seeds", "2", "--budget", "4"]
    )
    assert text.exit_code == 0 and "no runs are written" in text.output, text.output
    # band gap: every C_min configuration has a fold of zero-gap metals only -> reported, not
    # scored; --keep-degenerate gives the raw reading back
    band = RECORDED / "band_gap__crabnet.json.gz"
    args = ["replay", "--references", str(band), "--seeds", "1", "--budget", "4", "--json"]
    (unscored,) = json.loads(CliRunner().invoke(app, args).output)
    assert not unscored["scored"] and "degenerate test fold" in unscored["reason"]
    assert unscored["degenerate_configs_in_c_min"] == 472 and "bo_hits" not in unscored
    (raw,) = json.loads(CliRunner().invoke(app, [*args, "--keep-degenerate"]).output)
    assert raw["scored"] and raw["degenerate_excluded"] == 0 and raw["candidates"] == 472
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(b"not gzip")
    before = bad.read_bytes()
    done = subprocess.run(
        [sys.executable, "-m", "labreplay.cli.main", "configsearch", "replay", "--references",
         str(bad)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "bad.json.gz" in lines[0] and "Traceback" not in done.stderr
    assert bad.read_bytes() == before


def test_regenerated_references_carry_n_test_and_abs_error_sd() -> None:
    refs = load_references(RECORDED)
    regenerated = [r for r in refs if r.se_known]
    assert len(regenerated) >= 2, [r.label for r in refs]
    for ref in regenerated:
        assert all(ref.n_test[c] == c.n * c.s for c in ref.maes)
        assert all(sd is not None and sd >= 0 for sd in ref.abs_error_sd.values())
    for ref in refs:
        if not ref.se_known:  # recorded before abs_error_sd: flagged, not invented
            row = compare(ref, [42], budget=4, init=2, within=4)
            assert not row["target_se_known"] and any("abs_error_sd" in w for w in row["warnings"])


def test_which_model_on_refractive_index_is_tied_at_t12() -> None:
    from labreplay.suites.configsearch.which_model import compare_which_model

    pair = [r for r in load_references(RECORDED) if r.task == "refractive_index"]
    assert len(pair) == 2
    # fresh seeds; the verdict is the paired random design's (no search needed for it)
    row = compare_which_model(pair[0], pair[1], range(500, 520), 12, 4, locate=False)
    assert row["configurations"] > 100 and row["truth"]["verdict"] == "tied"
    lo, hi = row["truth"]["paired_difference_ci95"]
    assert lo <= 0 <= hi
    assert row["methods"]["paired random"]["tied"] >= 15


def test_which_model_swapping_the_models_mirrors_the_answer() -> None:
    from labreplay.suites.configsearch.which_model import compare_which_model

    refs = {r.model: r for r in load_references(RECORDED) if r.task == "shear_modulus"}
    one = compare_which_model(refs["crabnet"], refs["rf-scm"], range(500, 502), 6, 3,
                              surrogate="sklearn-gp")  # fmt: skip
    two = compare_which_model(refs["rf-scm"], refs["crabnet"], range(500, 502), 6, 3,
                              surrogate="sklearn-gp")  # fmt: skip
    for reading in ("truth", "truth_full"):
        a, b = one[reading], two[reading]
        assert a["difference"] == "crabnet - rf-scm" and b["difference"] == "rf-scm - crabnet"
        assert a["paired_difference"] == pytest.approx(-b["paired_difference"], abs=1e-12)
        lo, hi = a["paired_difference_ci95"]
        assert b["paired_difference_ci95"] == pytest.approx([-hi, -lo], abs=1e-12)
        assert a["verdict"] == b["verdict"] != "tied"  # the same model named either way
    assert one["methods"]["paired random"] == two["methods"]["paired random"]
    assert one["largest_difference"] == two["largest_difference"]


def test_which_model_verdict_leaves_out_guided_steps() -> None:
    from labreplay.suites.configsearch.search import Candidate, Step, which_model_answer
    from labreplay.suites.configsearch.space import Config

    def step(i: int, phase: str, a: float, b: float) -> Step:
        return Step(i, phase, Candidate(Config(0.0, 8 * i, 4), None), {"a": a, "b": b},
                    abs(a - b), 0.0, None, 0.0)  # fmt: skip

    # a guided search that piled onto configurations where a looks far better
    steps = [step(1, "init", 1.0, 1.1), step(2, "init", 1.2, 1.0), step(3, "init", 1.0, 1.05)]
    steps += [step(i, "bo", 0.1, 1.0) for i in range(4, 10)]
    answer = which_model_answer(steps, ["a", "b"])
    assert answer["configurations"] == 3 and answer["guided_steps_left_out"] == 6
    assert answer["verdict"] == "tied"
    assert answer["largest_difference"]["abs_difference"] == pytest.approx(0.9)


def test_which_model_truth_interval_is_clustered_by_r_n_block() -> None:
    from scipy.stats import t

    from labreplay.suites.configsearch.search import Candidate, Step, which_model_answer
    from labreplay.suites.configsearch.space import Config

    # 4 (r, n) blocks of 5 configurations (s = 1..5), each block's difference shared by its
    # configurations: 4 observations, not 20
    gaps = [0.3, 0.2, -0.1, 0.2]
    steps = [
        Step(i, "exhaustive", Candidate(Config(0.1 * g, 8, s), None), {"a": 1.0, "b": 1.0 - d},
             d, 0.0, None, 0.0)
        for i, (g, d, s) in enumerate(((g, d, s) for g, d in enumerate(gaps)
                                       for s in range(1, 6)), 1)
    ]  # fmt: skip
    naive = which_model_answer(steps, ["a", "b"])
    assert naive["verdict"] == "b" and "interval_blocks" not in naive
    clustered = which_model_answer(steps, ["a", "b"], by_block=True)
    assert clustered["paired_difference"] == pytest.approx(naive["paired_difference"])
    assert clustered["interval_blocks"] == 4 and clustered["verdict"] == "tied"
    # equal blocks: the t interval over the 4 block means (3 degrees of freedom)
    half = t.ppf(0.975, 3) * np.std(gaps, ddof=1) / 2
    lo, hi = clustered["paired_difference_ci95"]
    assert (lo, hi) == pytest.approx((np.mean(gaps) - half, np.mean(gaps) + half))
    # one block: nothing resolved
    one = which_model_answer(steps[:5], ["a", "b"], by_block=True)
    assert one["interval_blocks"] == 1 and one["verdict"] == "tied"


README_EXAMPLE = re.compile(r"<!-- optimiser-example -->\n```python\n(.*?)```", re.S)


def test_readme_optimiser_example_runs_through_replay(tmp_path: Path) -> None:
    readme = Path(__file__).resolve().parents[2] / "docs" / "suites" / "configsearch.md"
    (code,) = README_EXAMPLE.findall(readme.read_text())
    (tmp_path / "my_optimiser.py").write_text(code)
    ref = RECORDED / "refractive_index__rf-scm.json.gz"
    done = subprocess.run(
        [sys.executable, "-m", "labreplay.cli.main", "configsearch", "replay", "--references",
         str(ref), "--seeds", "3", "--agent", "my_optimiser:ForestOptimizer", "--json"],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)
    assert row["agent"]["label"] == "my_optimiser:ForestOptimizer"
    assert row["agent"]["invalid_steps"] == 0 and 0 <= row["agent"]["hits"] <= 3
    bad = subprocess.run(
        [sys.executable, "-m", "labreplay.cli.main", "configsearch", "replay", "--references",
         str(ref), "--agent", "my_optimiser:Nope"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert bad.returncode == 2 and "my_optimiser:Nope" in bad.stderr
    assert "Traceback" not in bad.stderr
