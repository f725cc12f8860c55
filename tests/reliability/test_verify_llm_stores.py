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

from labreplay._hashing import sha256_bytes
from labreplay.store.sqlite import Store
from labreplay.testing.fault_server import StubServer
from labreplay.testing.schema_server import SchemaAnswerer

from .conftest import copy_of
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


def _forged(store: Path, target: Path, *sql: str) -> Path:
    forged = copy_of(store, target)
    conn = sqlite3.connect(forged)
    with conn:
        for statement in sql:
            assert conn.execute(statement).rowcount >= 1, statement
    conn.close()
    return forged


# One UPDATE each on a field a board filters or ranks on; what verify must name.
ROW_FORGERIES = {
    # an in-process run passed off as a model-endpoint one (`--require-isolated` ranks it)
    "model": (
        "UPDATE runs SET model='gpt-4o' WHERE agent='bayes' AND branch='adaptive'",
        "table runs, field model: 'gpt-4o', but the run's header event says None",
    ),
    "sandbox": (
        "UPDATE runs SET provenance=json_set(provenance, '$.agent_sandbox', 'bwrap') "
        "WHERE suite='conditions'",
        "table runs, field provenance.agent_sandbox: 'bwrap', but the run's header event",
    ),
    "spec_id": (
        "UPDATE runs SET spec_id='seed0/long-1' WHERE agent='bayes' AND branch='adaptive'",
        "table runs, field spec_id: 'seed0/long-1', but the run's spec",
    ),
    # a search demoted (or any run of a suite whose status was not re-derived)
    "status": (
        "UPDATE runs SET status='failed' WHERE suite='configsearch'",
        "table runs, field status: 'failed', but the events, calls and the failed-run rule "
        "give 'complete'",
    ),
    "call-accounting": (
        "UPDATE runs SET summary=json_set(summary, '$.failed_calls', 0, '$.llm_calls', 1) "
        "WHERE suite='configsearch'",
        "table runs, field summary.llm_calls: 1, but table llm_calls gives 2",
    ),
}


@pytest.mark.parametrize("forgery", sorted(ROW_FORGERIES))
def test_one_update_of_a_field_a_board_reads_fails_verify_naming_it(
    forgery: str, llm_store: tuple[Path, Path], tmp_path: Path
) -> None:
    sql, expected = ROW_FORGERIES[forgery]
    forged = _forged(llm_store[0], tmp_path / "forged.sqlite", sql)
    code, report = _verify(forged)
    assert code == 1 and any(expected in p for p in report["problems"]), report


def test_a_forged_model_is_not_ranked_as_an_isolated_model_endpoint(
    llm_store: tuple[Path, Path], tmp_path: Path
) -> None:
    forged = _forged(llm_store[0], tmp_path / "forged.sqlite", ROW_FORGERIES["model"][0])
    proc = run_cli(
        "campaign", "leaderboard", "--store", str(forged), "--require-isolated", "--verified",
        "--json",
    )  # fmt: skip
    assert proc.returncode == 1 and "field model" in proc.stderr, proc.stderr


def test_scores_edited_after_the_question_file_was_deleted_fail_unless_allowed(
    llm_store: tuple[Path, Path], tmp_path: Path
) -> None:
    """Without the question file nothing recomputes the conditions scores: verify fails,
    saying what it could not check; `--allow-unverifiable` lists the run as unverifiable."""
    forged = _forged(
        llm_store[0],
        tmp_path / "forged.sqlite",
        "DELETE FROM contents",
        "UPDATE scores SET value=0.99 WHERE metric='mc_all_score'",
    )
    code, report = _verify(forged)
    problems = report["problems"]
    assert code == 1 and len(problems) == 1, report
    assert "(conditions," in problems[0] and "scores (" in problems[0], problems
    assert "no question file with sha256" in problems[0], problems
    assert "--allow-unverifiable" in problems[0], problems
    code, report = _verify(forged, "--allow-unverifiable")
    assert code == 0 and report["problems"] == [], report
    assert any("no question file" in n for n in report["unverifiable"]), report


def test_a_forged_superseded_row_fails_verify(llm_store: tuple[Path, Path], tmp_path: Path) -> None:
    """A removal record is an unsigned row: one that contradicts the store fails, and a
    deleted control is missing whatever `superseded` says of it."""
    store = llm_store[0]
    with Store(store, readonly=True) as db:
        control = next(r for r in db.runs() if r.agent == "bayes" and r.branch == "random")
    columns = "(run_id, suite, spec_id, branch, agent, status, head_hash, removed, reason)"
    forgeries = {
        # the control deleted and its removal "recorded" to excuse it
        "excused-control": (
            (
                f"DELETE FROM runs WHERE run_id='{control.run_id}'",
                f"INSERT INTO superseded {columns} VALUES ('{control.run_id}', 'campaign', "
                f"'{control.spec_id}', 'random', 'bayes', 'complete', NULL, "
                "'2026-01-01T00:00:00Z', 'removed to be redone')",
            ),
            "no 'random' control run, which a board needs beside this run (removed by store",
        ),
        # a removal of a run that never was
        "invented-run": (
            (
                f"INSERT INTO superseded {columns} VALUES ('{'a' * 24}', 'campaign', "
                "'seed0/short-9', 'adaptive', 'gpt-5', 'complete', NULL, "
                "'2026-01-01T00:00:00Z', 'removed to be redone')",
            ),
            f"table superseded, run {'a' * 24}, field spec_id: no stored 'campaign' spec",
        ),
        # the redone run's removal record under another agent
        "other-agent": (
            (
                f"INSERT INTO superseded {columns} VALUES ('{control.run_id}', 'campaign', "
                f"'{control.spec_id}', 'random', 'gpt-5', 'failed', NULL, "
                "'2026-01-01T00:00:00Z', 'removed to be redone')",
            ),
            f"table superseded, run {control.run_id}, field agent: 'gpt-5', but the run",
        ),
    }
    for name, (sql, expected) in forgeries.items():
        forged = _forged(store, tmp_path / f"{name}.sqlite", *sql)
        code, report = _verify(forged)
        assert code == 1 and any(expected in p for p in report["problems"]), (name, report)


@pytest.fixture(scope="module")
def signed_store(
    llm_store: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path]:
    """(the LLM store signed, its public key)."""
    root = tmp_path_factory.mktemp("signed")
    store = copy_of(llm_store[0], root / "signed.sqlite")
    assert run_cli("store", "keygen", "--out", str(root / "keys")).returncode == 0
    key = root / "keys" / "labreplay-signing-key.pem"
    signing = run_cli("store", "sign", "--store", str(store), "--key", str(key))
    assert signing.returncode == 0, signing.stderr
    conn = sqlite3.connect(store)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return store, root / "keys" / "labreplay-signing-key.pub.pem"


def test_a_signed_llm_store_verifies_and_an_edited_message_or_superseded_row_fails(
    signed_store: tuple[Path, Path], tmp_path: Path
) -> None:
    store, public = signed_store
    code, report = _verify(store, "--public-key", str(public))
    assert code == 0 and report["problems"] == [], report
    with Store(store, readonly=True) as db:
        control = next(r for r in db.runs() if r.agent == "bayes" and r.branch == "random")
    columns = "(run_id, suite, spec_id, branch, agent, status, head_hash, removed, reason)"
    forgeries = {
        # the stored message no longer says what was signed (an export reader reads it)
        "run-message": (
            "UPDATE signatures SET message=replace(message, '\"format\"', '\"formats\"') "
            "WHERE subject != '*store*'",
            "table signatures, field message: is not the message the signature covers",
        ),
        "manifest-message": (
            "UPDATE signatures SET message=replace(message, '\"format\"', '\"formats\"') "
            "WHERE subject = '*store*'",
            "table signatures, field message: is not the message the signature covers",
        ),
        # a removal record consistent with the store, added after signing
        "superseded": (
            f"INSERT INTO superseded {columns} VALUES ('{control.run_id}', 'campaign', "
            f"'{control.spec_id}', 'random', 'bayes', 'failed', NULL, "
            "'2026-01-01T00:00:00Z', 'removed to be redone')",
            "table superseded: rows added, removed or edited since signing",
        ),
    }
    for name, (sql, expected) in forgeries.items():
        forged = _forged(store, tmp_path / f"{name}.sqlite", sql)
        code, report = _verify(forged, "--public-key", str(public))
        assert code == 1 and any(expected in p for p in report["problems"]), (name, report)
        if name == "superseded":  # consistent with the store: only the signature sees it
            assert _verify(forged)[0] == 0, name


def test_a_store_signed_before_superseded_rows_were_signed_verifies_until_one_is_added(
    signed_store: tuple[Path, Path], tmp_path: Path
) -> None:
    """A manifest of the earlier form (labreplay-store-signature/1, no `superseded` digest)
    still verifies; once the store has a removal record it cannot vouch for, it says so."""
    from labreplay.store import signing

    store, public = signed_store
    old = copy_of(store, tmp_path / "old.sqlite")
    key = signing.load_private_key(public.parent / signing.PRIVATE_KEY_NAME)
    with Store(old) as db:
        runs = [r for r in db.runs() if r.status != "running"]
        digests = {r.run_id: sha256_bytes(signing.run_message(db, r)) for r in runs}
        rows = [s for s in db.signatures() if s.subject != signing.MANIFEST_SUBJECT]
        manifest = signing._manifest_message(digests, None)  # the /1 form
        kid = signing.key_id(key.public_key())
        db.replace_signatures(
            [*rows, signing._signature_row(signing.MANIFEST_SUBJECT, kid, manifest, key)]
        )
    assert b"labreplay-store-signature/1" in manifest
    code, report = _verify(old, "--public-key", str(public))
    assert code == 0 and report["problems"] == [], report
    conn = sqlite3.connect(old)
    with conn:
        conn.execute(
            "INSERT INTO superseded SELECT run_id, suite, spec_id, branch, agent, 'failed', "
            "NULL, '2026-01-01T00:00:00Z', 'removed to be redone' FROM runs LIMIT 1"
        )
    conn.close()
    code, report = _verify(old, "--public-key", str(public))
    assert code == 1, report
    assert any("table superseded: 1 row(s)" in p and "sign the store again" in p
               for p in report["problems"]), report  # fmt: skip
