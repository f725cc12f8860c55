"""Configsearch on the shared driver: a sweep on a real Dask LocalCluster (one unit per (r, n)
training set, fits made on the workers) stores the same trajectory as in-process, and searches
per seed on threads store what `run_search` stores."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from labreplay.execute import InProcessExecutor, ThreadedExecutor
from labreplay.store.sqlite import Store
from labreplay.store.verify import verify_store
from labreplay.suites.configsearch.episodes import run_search, run_searches, sweep
from labreplay.suites.configsearch.runner import ConfigSearch

from .conftest import SMALL_SETTINGS, SMALL_SPACE


def _events(path: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT r.branch, r.seed, e.seq, e.kind, e.payload, e.hash FROM events e "
            "JOIN runs r USING (run_id) ORDER BY r.branch, r.seed, e.seq"
        ).fetchall()
    finally:
        conn.close()


def test_sweep_on_dask_equals_in_process(data_dir: Path, cache_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    from dask.distributed import LocalCluster

    from labreplay.execute import DaskExecutor

    local, remote = tmp_path / "local.sqlite", tmp_path / "dask.sqlite"
    with Store(local) as store:
        local_campaign = ConfigSearch(
            data_dir, "band_gap", store, SMALL_SETTINGS, SMALL_SPACE, cache_dir, min_test_points=1
        )
        sweep(local_campaign, "rf-scm")
    fresh_cache = tmp_path / "worker-cache"  # nothing cached: the workers fit everything
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None)
    try:
        with Store(remote) as store, DaskExecutor(cluster=cluster) as dask:
            campaign = ConfigSearch(
                data_dir,
                "band_gap",
                store,
                SMALL_SETTINGS,
                SMALL_SPACE,
                fresh_cache,
                min_test_points=1,
            )
            sweep(campaign, "rf-scm", None, dask)
    finally:
        cluster.close()
    assert len(_events(local)) == 13 and _events(remote) == _events(local)
    assert any(fresh_cache.rglob("*")), "the workers wrote the shared pipeline cache"
    with Store(remote) as store:
        assert verify_store(store).ok


def test_searches_per_seed_on_threads_equal_run(
    data_dir: Path, cache_dir: Path, tmp_path: Path
) -> None:
    one, many = tmp_path / "one.sqlite", tmp_path / "many.sqlite"
    with Store(one) as store:
        campaign = ConfigSearch(
            data_dir, "band_gap", store, SMALL_SETTINGS, SMALL_SPACE, cache_dir, min_test_points=1
        )
        expected = [
            run_search(campaign, ["rf-scm"], "best-model", "bo", 5, 3, s)[2] for s in (1, 2)
        ]
    with Store(many) as store, ThreadedExecutor(2) as threads:
        campaign = ConfigSearch(
            data_dir, "band_gap", store, SMALL_SETTINGS, SMALL_SPACE, cache_dir, min_test_points=1
        )
        got = run_searches(
            campaign, ["rf-scm"], "best-model", "bo", 5, 3, [1, 2], "reference", threads
        )
        again = run_searches(
            campaign, ["rf-scm"], "best-model", "bo", 5, 3, [1, 2], "reference", InProcessExecutor()
        )
    assert _events(many) == _events(one)
    assert [g[2]["answer"] for g in got] == [e["answer"] for e in expected]
    assert [a[0] for a in again] == [g[0] for g in got]  # finished runs read back


def test_check_agent_configsearch_references(data_dir: Path, cache_dir: Path) -> None:
    import labreplay
    from labreplay.testing import check_agent

    options = {
        "settings": SMALL_SETTINGS,
        "space": SMALL_SPACE,
        "cache_dir": cache_dir,
        "min_test_points": 1,  # the 12-configuration test space has n*s <= 18
    }
    (spec,) = labreplay.compile("configsearch", data_dir, task="band_gap", **options)
    for method in labreplay.suite.get_suite("configsearch").reference_agents():
        check_agent(
            lambda m=method: m, "configsearch", spec, seed=7, data_dir=data_dir, budget=5, **options
        )


class _NotACandidate:
    """An optimiser whose every suggestion lies outside the space (an invalid step each)."""

    name = "not-a-candidate"

    def params(self) -> dict[str, object]:
        return {}

    def suggest(self, history: object) -> dict[str, object]:
        return {"r": 9.0, "n": 1, "s": 1}

    def observe(self, result: object) -> None:
        pass


def test_agent_problems_name_an_invalid_suggestion(data_dir: Path, cache_dir: Path) -> None:
    """An invalid step records no configuration: the check names it (it raised TypeError)."""
    import labreplay

    options = {
        "settings": SMALL_SETTINGS,
        "space": SMALL_SPACE,
        "cache_dir": cache_dir,
        "min_test_points": 1,
    }
    (spec,) = labreplay.compile("configsearch", data_dir, task="band_gap", **options)
    suite = labreplay.suite.get_suite("configsearch")
    problems = suite.agent_problems(_NotACandidate, spec, 7, data_dir=data_dir, budget=4, **options)
    assert [p.split(":")[0] for p in problems] == ["validity"]
    assert "step 4" in problems[0] and "not a candidate" in problems[0]
