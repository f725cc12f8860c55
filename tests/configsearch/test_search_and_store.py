"""Searches and the store on a small real sweep (see conftest for the declared setting)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from labreplay.errors import SpecError
from labreplay.runtime.trajectory import Trajectory
from labreplay.store.sqlite import Store
from labreplay.suites.configsearch.episodes import run_search, sweep
from labreplay.suites.configsearch.report import write_report
from labreplay.suites.configsearch.runner import ConfigSearch
from labreplay.suites.configsearch.space import Config

from .conftest import SMALL_SETTINGS, SMALL_SPACE


def _campaign(data_dir: Path, cache_dir: Path, store: Store) -> ConfigSearch:
    return ConfigSearch(
        data_dir, "band_gap", store, SMALL_SETTINGS, SMALL_SPACE, cache_dir, min_test_points=1
    )


class _StopAfter:
    """A progress sink that interrupts the sweep, as a crash would."""

    def __init__(self, n: int) -> None:
        self.left = n

    def advance(self, n: int = 1) -> None:
        self.left -= n
        if self.left <= 0:
            raise KeyboardInterrupt


def test_sweep_resumes_without_duplicates(data_dir: Path, cache_dir: Path, tmp_path: Path) -> None:
    with Store(tmp_path / "s.sqlite") as store:
        campaign = _campaign(data_dir, cache_dir, store)
        assert len(campaign.feasible) == 12 and not campaign.infeasible
        with pytest.raises(KeyboardInterrupt):
            sweep(campaign, "rf-scm", _StopAfter(5))
        run_id, table = sweep(campaign, "rf-scm")
        events = store.events(run_id)
        assert sum(e["kind"] == "evaluation" for e in events) == 12
        Trajectory.verify(events, campaign.spec_hash)
        assert store.run(run_id).status == "complete"
        assert set(table) == {("rf-scm", c) for c in campaign.feasible}
        summary = store.run(run_id).summary
        assert summary is not None and summary["max_min_ratio"] >= 1.0


def _run(campaign: ConfigSearch, method: str, seed: int, **kw: Any) -> Any:
    return run_search(campaign, ["rf-scm"], "best-model", method, kw.get("budget", 6), 3, seed)


def test_bo_and_random_share_the_initial_design_and_are_deterministic(
    data_dir: Path, cache_dir: Path, tmp_path: Path
) -> None:
    with Store(tmp_path / "a.sqlite") as a, Store(tmp_path / "b.sqlite") as b:
        ca, cb = _campaign(data_dir, cache_dir, a), _campaign(data_dir, cache_dir, b)
        sweep(ca, "rf-scm")
        run_a, bo, summary = _run(ca, "bo", 7)
        _, rnd, _ = _run(ca, "random", 7)
        assert [s.candidate for s in bo.steps[:3]] == [s.candidate for s in rnd.steps[:3]]
        assert len({s.candidate for s in bo.steps}) == 6  # never proposes a point twice
        assert [s.phase for s in bo.steps] == ["init"] * 3 + ["bo"] * 3
        trace = bo.trace()
        assert all(x >= y for x, y in itertools.pairwise(trace))
        # no search beats the exhaustive optimum as the target reads it (best-model: MAEs shrunk
        # toward their (r, n) block, so the raw best so far may lie below it)
        assert "steps_to_target" in summary and summary["final_normalised"] <= 1.0 + 1e-12
        assert summary["bo_overhead_max_s"] < 10.0  # recorded (a loaded CI machine is slow)
        # the run names its surrogate, acquisition, kernel and library versions; random none
        bo_params = a.run(run_a).agent_params["surrogate"]
        assert bo_params["surrogate"] == "botorch" and bo_params["versions"]["botorch"]
        assert "LogExpectedImprovement" in bo_params["acquisition"] and bo_params["kernel"]
        # same inputs + seed -> identical trajectory hashes in an independent store
        run_b, _, _ = _run(cb, "bo", 7)
        assert [e["hash"] for e in a.events(run_a)] == [e["hash"] for e in b.events(run_b)]
        # a finished run is read back from the store, not redone
        again = _run(ca, "bo", 7)
        assert again[0] == run_a and again[1].trace() == pytest.approx(trace, rel=1e-11)


def test_closest_and_discriminate_problems(data_dir: Path, cache_dir: Path, tmp_path: Path) -> None:
    with Store(tmp_path / "c.sqlite") as store:
        campaign = _campaign(data_dir, cache_dir, store)
        with pytest.raises(SpecError, match="unknown ground truth"):
            campaign.ground_truth(["rf-scm"], "median")
        sweep(campaign, "rf-scm")
        sweep(campaign, "ofm-mlp")
        _, result, summary = run_search(
            campaign, ["rf-scm", "ofm-mlp"], "discriminate", "bo", 5, 2, 3
        )
        assert summary["evaluations"] == 10  # every model at every chosen configuration
        assert summary["answer"]["objective"] == max(s.objective for s in result.steps)
        _, closest, csum = run_search(campaign, ["rf-scm"], "closest", "random", 4, 2, 3, gt="mean")
        assert csum["gt_evaluations"] == 12 and closest.ground_truth["rf-scm"] > 0
        with pytest.raises(SpecError, match="at least two models"):
            run_search(campaign, ["rf-scm"], "discriminate", "bo", 4, 2, 1)
        report = write_report(store, tmp_path / "out")
        assert {s["model"] for s in report["sweeps"]} == {"rf-scm", "ofm-mlp"}
        assert (tmp_path / "out/configsearch_report.md").read_text().count("|") > 20
        assert any(f.startswith("trace_") for f in report["files"])
        assert Config(0.5, 6, 3) in campaign.feasible


def test_a_run_made_before_its_sweep_gains_its_target_later(
    data_dir: Path, cache_dir: Path, tmp_path: Path
) -> None:
    with Store(tmp_path / "late.sqlite") as store:
        campaign = _campaign(data_dir, cache_dir, store)
        _, _, early = run_search(campaign, ["rf-scm"], "best-model", "random", 3, 2, 5)
        assert "steps_to_target" not in early and early["used_fits"] >= 4
        before = write_report(store, tmp_path / "r0")
        (group,) = before["searches"]
        assert group["truth_known"] is False and "n_total=200" in group["protocol"]
        md = (tmp_path / "r0/configsearch_report.md").read_text()
        assert "no seed-42 run" in md  # the seed-42 section says why it is empty
        sweep(campaign, "rf-scm")
        _, _, late = run_search(campaign, ["rf-scm"], "best-model", "random", 3, 2, 5)
        assert "steps_to_target" in late and "final_normalised" in late
        after = write_report(store, tmp_path / "r1")
        (group,) = after["searches"]
        assert group["truth_known"] is True and group["mean_final_normalised"] is not None
        (swept,) = after["sweeps"]
        assert swept["short_folds"] == 0 and swept["test_points"]["min"] == 4


def test_bo_vs_random_comparison_is_paired_over_seeds(
    data_dir: Path, cache_dir: Path, tmp_path: Path
) -> None:
    with Store(tmp_path / "pair.sqlite") as store:
        campaign = _campaign(data_dir, cache_dir, store)
        sweep(campaign, "rf-scm")
        for seed in range(3):
            for method in ("bo", "random"):
                run_search(campaign, ["rf-scm"], "best-model", method, 4, 2, seed)
        report = write_report(store, tmp_path / "out")
        (pair,) = report["comparisons"]
        assert pair["paired_seeds"] == 3
        lo, hi = pair["ci95"]
        assert lo <= pair["mean_steps_saved"] <= hi
