"""`store verify` on a store holding an LLM run of every suite (campaign, conditions,
configsearch), answered by the local schema-answering server: untouched, it verifies (exit 0;
every summary holds the one call accounting); forged with one SQL edit, it fails (exit 1)
naming the field. Small on purpose: one short assignment, four questions, a 12-config search.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from labreplay.store.sqlite import Store
from labreplay.testing.fault_server import StubServer
from labreplay.testing.schema_server import SchemaAnswerer

from .conftest import run_cli_in_process as run_cli

# the configsearch tests' small setting (tests/configsearch/conftest.py), budget 4, init 2
SMALL_SEARCH = [
    "--task", "band_gap", "--n-total", "200", "--n-ood", "60", "--r-values", "0,0.5",
    "--n-values", "4,6", "--s-values", "1,2,3", "--min-test-points", "1", "--budget", "4",
    "--init", "2", "--seed", "5",
]  # fmt: skip
LLM = ("--agent", "openai:frontier", "--timeout", "10", "--max-retries", "0")


def _questions(root: Path) -> Path:
    from labreplay.records.sources import resolve_data_dir
    from labreplay.suites.conditions.compiler import compile_datasets
    from labreplay.suites.conditions.report import write_compiled

    path = root / "mitsunobu.jsonl"
    write_compiled(compile_datasets(["edbo_mitsunobu"], resolve_data_dir(), seed=0), path)
    return path


@pytest.fixture(scope="module")
def llm_store(
    tmp_path_factory: pytest.TempPathFactory, campaign_specs_source: Path
) -> tuple[Path, Path]:
    """(store, question file): one LLM run of each suite, then the store checkpointed so a
    copy is whole."""
    if not os.environ.get("LABREPLAY_DATA_DIR"):
        pytest.skip("LABREPLAY_DATA_DIR is not set")
    root = tmp_path_factory.mktemp("llm-store")
    store, questions = root / "s.sqlite", _questions(root)
    with StubServer(SchemaAnswerer()) as server:
        url = ("--base-url", server.base_url)
        runs = [
            ("campaign", "run", "--specs", str(campaign_specs_source), "--only", "short-1",
             "--controls", "random"),
            # an in-process reference agent beside it (no model): what a forger promotes
            ("campaign", "run", "--specs", str(campaign_specs_source), "--only", "short-1",
             "--controls", "random", "--agent", "bayes"),
            ("conditions", "run", "--questions", str(questions), "--limit", "4"),
            ("configsearch", "run", *SMALL_SEARCH),
        ]  # fmt: skip
        for args in runs:
            llm = () if "bayes" in args else (*LLM, *url)
            proc = run_cli(*args, *llm, "--store", str(store), "--json")
            assert proc.returncode == 0, (args[0], proc.stderr)
    conn = sqlite3.connect(store)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return store, questions


def _verify(store: Path, *extra: str) -> tuple[int, dict[str, object]]:
    proc = run_cli("store", "verify", "--store", str(store), "--json", *extra)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def test_an_untouched_store_with_an_llm_run_of_every_suite_verifies(
    llm_store: tuple[Path, Path],
) -> None:
    store, _ = llm_store
    with Store(store, readonly=True) as db:
        llm_runs = {r.suite: r for r in db.runs() if db.llm_calls(r.run_id)}
        assert {r.agent for r in db.runs(suite="campaign")} == {"openai:frontier", "bayes"}
        assert sorted(llm_runs) == ["campaign", "conditions", "configsearch"]
        for run in llm_runs.values():
            calls = db.llm_calls(run.run_id)
            summary = run.summary or {}
            # one schema: every suite's summary accounts for its calls the same way
            assert summary["llm_calls"] == len(calls), run.suite
            assert summary["failed_calls"] == sum(bool(c["error"]) for c in calls), run.suite
            assert summary["usage"]["calls"] == len(calls), run.suite
    code, report = _verify(store)
    assert code == 0 and report["problems"] == [], report
