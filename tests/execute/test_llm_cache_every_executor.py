"""The LLM response cache is consulted in every executor mode: a resumed threaded LLM campaign
makes zero new model calls.

Against the local LLM server when LABREPLAY_LLM_BASE_URL is set (marked llm), and always against
the fault server of `labreplay.testing` (a real HTTP server on 127.0.0.1 that counts requests).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from labreplay.compile.spec import EnvironmentSpec
from labreplay.execute import ThreadedExecutor
from labreplay.store.sqlite import Store
from labreplay.suites.campaign.runner import run_assignments
from labreplay.testing import fault_server as stub


def _crash_before_persist(path: Path) -> None:
    """The state of a run killed after its model calls, before its runs were written."""
    conn = sqlite3.connect(path)
    for table in ("events", "scores", "llm_calls"):
        conn.execute(f"DELETE FROM {table}")
    conn.execute("UPDATE runs SET status='running', finished=NULL, summary=NULL")
    conn.commit()
    conn.close()


def _count(path: Path, sql: str) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute(sql).fetchone()[0])
    finally:
        conn.close()


def _resume_twice(
    path: Path,
    specs: list[EnvironmentSpec],
    agent: str,
    options: dict[str, Any],
    controls: tuple[str, ...] = ("random", "no-evidence"),
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """Run, lose the runs (keep the cache), run again; also returns how many calls of the
    first pass failed (no response to replay: those are asked again, legitimately)."""
    with Store(path) as store, ThreadedExecutor(2) as threads:
        first = run_assignments(specs, agent, store, 0, controls, threads, options)
    failed = _count(path, "SELECT COUNT(*) FROM llm_calls WHERE error IS NOT NULL AND cached=0")
    _crash_before_persist(path)
    with Store(path) as store, ThreadedExecutor(2) as threads:
        again = run_assignments(specs, agent, store, 0, controls, threads, options)
    return first, again, failed


def test_resumed_threaded_campaign_repeats_no_call_fault_server(
    tmp_path: Path, few_specs: list[EnvironmentSpec]
) -> None:
    path = tmp_path / "llm.sqlite"
    reply = stub.ok('{"type": "stop"}')
    with stub.StubServer(stub.constant(reply)) as server:
        options = {"base_url": server.base_url, "max_tokens": 32, "max_repairs": 0}
        first, again, failed = _resume_twice(path, few_specs[:2], "openai:stub", options)
        assert failed == 0
        calls_first = _count(path, "SELECT COUNT(*) FROM response_cache")
        seen = len(server.chat_requests)
        assert seen > 0 and calls_first > 0
        # the second pass: every call answered from the cache, none reached the server
        assert len(server.chat_requests) == seen
    assert _count(path, "SELECT COUNT(*) FROM llm_calls WHERE cached=0") == 0
    assert _count(path, "SELECT COUNT(*) FROM llm_calls") > 0
    assert [r["branches"] for r in again] == [r["branches"] for r in first]


@pytest.mark.llm
@pytest.mark.slow
def test_resumed_threaded_campaign_repeats_no_call_local_llm(
    tmp_path: Path, small_llm_assignment: EnvironmentSpec
) -> None:
    url = os.environ.get("LABREPLAY_LLM_BASE_URL")
    if not url:
        pytest.skip("LABREPLAY_LLM_BASE_URL is not set (no local LLM server)")
    path = tmp_path / "llm.sqlite"
    options = {
        "base_url": url,
        "max_tokens": 48,
        "max_repairs": 0,
        "temperature": 0.0,
        "timeout_s": 300.0,
    }
    # the adaptive branch only: the fault-server test covers the controls' calls, and a real
    # model's calls are what make CI slow
    first, again, failed = _resume_twice(
        path, [small_llm_assignment], "openai:smollm2", options, ()
    )
    assert _count(path, "SELECT COUNT(*) FROM response_cache") > 0
    if failed == 0:
        # every call completed in the first pass: the second is answered from the cache alone
        assert _count(path, "SELECT COUNT(*) FROM llm_calls WHERE cached=0") == 0
        assert [r["branches"] for r in again] == [r["branches"] for r in first]
    else:
        # a call that got no response then (a timeout on a loaded server) is asked again; if it
        # answers now, the trajectory and every later prompt may differ, so only the calls the
        # two passes share are certain to come from the cache
        assert _count(path, "SELECT COUNT(*) FROM llm_calls WHERE cached=1") > 0
