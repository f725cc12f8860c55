"""Repair (issue 35): a run whose checkpoint forecast fell back after one transient failure is
redone by `store remove` + the same run command, and the redo asks the model again exactly
the calls that failed: every call that was answered comes back from the response cache.
Against the schema-answering server on 127.0.0.1, which fails one checkpoint request.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from labreplay.store.sqlite import Store
from labreplay.testing import fault_server as stub
from labreplay.testing.schema_server import SchemaAnswerer

pytest.importorskip("openai")


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "labreplay.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "200"},
        check=False,
    )


class FailsOneCheckpoint:
    """Answers every request, except the first checkpoint forecast: HTTP 503 once."""

    def __init__(self) -> None:
        self.inner = SchemaAnswerer()
        self.failed = 0

    def __call__(self, request: stub.SeenRequest, n: int) -> stub.StubReply:
        body = request.body or {}
        name = (body.get("response_format") or {}).get("json_schema", {}).get("name")
        if name == "panel_forecast" and not self.failed:
            self.failed += 1
            return stub.server_error(503)
        return self.inner(request, n)


def test_a_run_with_a_forecast_fallback_is_redone_asking_only_the_failed_call(
    tmp_path: Path, campaign_specs_source: Path
) -> None:
    specs = campaign_specs_source  # `campaign compile` once per session; runs only read it
    store = tmp_path / "s.sqlite"
    argv = ("campaign", "run", "--specs", str(specs), "--store", str(store), "--only",
            "short-1", "--agent", "openai:m", "--max-retries", "0", "--json")  # fmt: skip
    responder = FailsOneCheckpoint()
    with stub.StubServer(responder) as server:
        first = run_cli(*argv, "--base-url", server.base_url)
        sent_first = len(server.chat_requests)
        with Store(store, readonly=True) as db:
            broken = next(r for r in db.runs() if r.branch == "adaptive")
        run_cli(*argv, "--base-url", server.base_url)  # resumed: finds the run complete
        sent_again = len(server.chat_requests) - sent_first
        removed = run_cli("store", "remove", "--store", str(store), "--assignment", "short-1")
        redo = run_cli(*argv, "--base-url", server.base_url)
        sent_redo = len(server.chat_requests) - sent_first - sent_again
    assert first.returncode == 0 and responder.failed == 1, first.stderr
    assert broken.summary is not None and broken.summary["checkpoint_fallbacks"] > 0
    assert sent_again == 0  # a finished run is only read back: nothing is asked again
    # `--assignment short-1` names the campaign assignment of spec ".../seed0/short-1"
    assert removed.returncode == 0, removed.stderr
    assert redo.returncode == 0, redo.stderr
    assert sent_redo == 1  # exactly the call that failed; the rest from the response cache
    with Store(store, readonly=True) as db:
        superseded = db.table("superseded")
        runs = {r.branch: r for r in db.runs()}
        calls = db.llm_calls(runs["adaptive"].run_id)
    assert {row["branch"] for row in superseded} == {"adaptive", "random", "no-evidence"}
    assert broken.run_id in {row["run_id"] for row in superseded}
    assert runs["adaptive"].status == "complete" and runs["adaptive"].summary is not None
    assert runs["adaptive"].summary["checkpoint_fallbacks"] == 0
    assert sum(not c["cached"] for c in calls) == 1 and not any(c["error"] for c in calls)
    assert [r["status"] for r in json.loads(redo.stdout)] == ["complete"]
