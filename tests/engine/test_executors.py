"""Conditions results are identical in-process, on threads and on a real Dask LocalCluster, and
equal to the object API's run (`run_agent`)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from labreplay.execute import Executor, InProcessExecutor, ThreadedExecutor
from labreplay.store.sqlite import Store
from labreplay.store.verify import verify_store


def _rows(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    conn = sqlite3.connect(path)
    try:
        return {
            "runs": conn.execute("SELECT run_id, spec_hash, status FROM runs").fetchall(),
            "events": conn.execute(
                "SELECT run_id, seq, kind, payload, hash FROM events ORDER BY run_id, seq"
            ).fetchall(),
            "scores": conn.execute(
                "SELECT run_id, metric, value, detail FROM scores ORDER BY run_id, metric"
            ).fetchall(),
        }
    finally:
        conn.close()


def _run(
    store: Store, questions: Path, agent: str, seed: int, executor: Executor | None = None
) -> dict[str, object]:
    """One conditions run through the one door, on `executor`."""
    import labreplay
    from labreplay.suites.conditions.questions import load_questions
    from labreplay.suites.conditions.runner import question_spec

    spec = question_spec(questions, load_questions(questions))
    (result,) = labreplay.run(
        "conditions", [spec], agent, store, seed=seed, executor=executor, questions=questions
    )
    return result


def test_conditions_identical_in_process_threads_and_dask(
    question_file: Path, tmp_path: Path
) -> None:
    pytest.importorskip("distributed")
    from dask.distributed import LocalCluster

    from labreplay.execute import DaskExecutor
    from labreplay.suites.conditions.agents import reference_agent
    from labreplay.suites.conditions.questions import load_questions
    from labreplay.suites.conditions.run import run_agent

    questions = load_questions(question_file)
    paths = {k: tmp_path / f"{k}.sqlite" for k in ("api", "in-process", "threads", "dask")}
    with Store(paths["api"]) as store:
        api = run_agent(store, question_file, questions, reference_agent("ranker", questions, 0), 0)
    with Store(paths["in-process"]) as store:
        local = _run(store, question_file, "ranker", 0, InProcessExecutor())
    with Store(paths["threads"]) as store, ThreadedExecutor(3) as threads:
        threaded = _run(store, question_file, "ranker", 0, threads)
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None)
    try:
        with Store(paths["dask"]) as store, DaskExecutor(cluster=cluster) as dask:
            distributed = _run(store, question_file, "ranker", 0, dask)
    finally:
        cluster.close()
    reference = _rows(paths["api"])
    assert len(reference["events"]) == len(questions) + 1  # the header event, then the answers
    for name in ("in-process", "threads", "dask"):
        assert _rows(paths[name]) == reference, name
    assert api["run_id"] == local["run_id"] == threaded["run_id"] == distributed["run_id"]
    with Store(paths["dask"]) as store:
        assert verify_store(store).ok


def test_a_killed_executor_run_resumes_to_the_same_store(
    question_file: Path, tmp_path: Path
) -> None:
    whole, part = tmp_path / "whole.sqlite", tmp_path / "part.sqlite"
    with Store(whole) as store:
        _run(store, question_file, "random", 3)
    with Store(part) as store:
        _run(store, question_file, "random", 3)
    conn = sqlite3.connect(part)  # killed after the first 120 answers were stored
    conn.execute("DELETE FROM events WHERE seq >= 120")
    conn.execute("DELETE FROM scores")
    conn.execute("UPDATE runs SET status='running', finished=NULL, summary=NULL")
    conn.commit()
    conn.close()
    with Store(part) as store, ThreadedExecutor(2) as threads:
        again = _run(store, question_file, "random", 3, threads)
    assert again["resumed"] is True
    assert _rows(part) == _rows(whole)
