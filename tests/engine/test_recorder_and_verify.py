"""One trajectory and recorder for every suite; `labreplay store verify`."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from labreplay.compile.spec import EnvironmentSpec, spec_from_stored
from labreplay.errors import StoreError
from labreplay.runtime.recorder import Recorder, RunHeader, open_recorder
from labreplay.runtime.trajectory import Trajectory
from labreplay.store.sqlite import Store
from labreplay.store.verify import verify_store

SPEC = EnvironmentSpec("probe", "p", "1", "s1", {"rule": "none"})


def _verify_cli(store: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "labreplay.cli.main", "store", "verify", "--store", str(store)],
        capture_output=True,
        text=True,
        check=False,
    )


def test_an_answer_with_float_noise_matches_its_stored_hash(tmp_path: Path) -> None:
    """The bug of the old conditions chain: 0.1 + 0.2 hashed by json.dumps, stored canonical."""
    with Store(tmp_path / "s.sqlite") as store:
        rec = open_recorder(store, RunHeader(SPEC, "main", "probe", {}, 0))
        rec.append("answer", {"score": 0.1 + 0.2, "raw": {"x": 1e-17}})
        rec.finish("complete", {})
        assert verify_store(store).ok
        assert Trajectory.verify(store.events(rec.run_id), SPEC.spec_hash)


def test_resume_continues_a_verified_prefix_and_refuses_an_edited_one(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    header = RunHeader(SPEC, "main", "probe", {}, 0)
    with Store(path) as store:
        rec = open_recorder(store, header, batch=2)
        for i in range(5):
            rec.append("answer", {"i": i})
        # killed here: 4 events flushed in two batches, the fifth lost with the process
    with Store(path) as store:
        rec = open_recorder(store, header)
        assert rec.existed and [e["payload"]["i"] for e in rec.resume()] == [0, 1, 2, 3]
        rec.append("answer", {"i": 4})
        rec.finish("complete", {"n": 5})
        one_pass = Recorder(SPEC.spec_hash)
        for i in range(5):
            one_pass.append("answer", {"i": i})
        assert store.events(rec.run_id)[-1]["hash"] == one_pass.head  # same chain as unbroken
    conn = sqlite3.connect(path)
    conn.execute("UPDATE events SET payload='{\"i\":9}' WHERE seq=2")
    conn.commit()
    conn.close()
    with Store(path) as store, pytest.raises(StoreError, match="seq 2"):
        open_recorder(store, header)


def test_replay_mode_refuses_a_recomputation_that_disagrees(tmp_path: Path) -> None:
    header = RunHeader(SPEC, "main", "probe", {}, 0)
    with Store(tmp_path / "s.sqlite") as store:
        first = open_recorder(store, header, batch=1)
        first.append("step", {"a": 1})
        first.append("step", {"b": 2})
        again = open_recorder(store, header, batch=1)
        again.append("step", {"a": 1})  # the same event: checked, not written twice
        with pytest.raises(StoreError, match="recomputed event 1 differs"):
            again.append("step", {"b": 3})
        assert store.event_count() == 2


def test_conditions_runs_are_bound_to_an_environment_spec_and_verify(
    question_file: Path, tmp_path: Path
) -> None:
    from labreplay.suites.conditions.agents import RandomAgent
    from labreplay.suites.conditions.questions import load_questions
    from labreplay.suites.conditions.run import run_agent

    path = tmp_path / "results.sqlite"
    questions = load_questions(question_file)
    with Store(path) as store:
        summary = run_agent(store, question_file, questions, RandomAgent(0), seed=0)
        run = store.run(summary["run_id"])
        spec = spec_from_stored(store.get_spec(run.spec_hash), run.spec_hash)
        assert spec.suite == "conditions" and spec.body["n_questions"] == len(questions)
        # one answer event per question, after the run's header event (seq 0)
        assert store.event_count(run.run_id) == len(questions) + 1
        assert store.events(run.run_id)[0]["kind"] == "header"
    ok = _verify_cli(path)
    assert ok.returncode == 0, ok.stderr
    assert f"1 runs, {len(questions) + 1} events verified" in ok.stdout
    before = path.read_bytes()
    conn = sqlite3.connect(path)
    conn.execute(
        "UPDATE events SET payload=replace(payload, '\"question_id\"', '\"question_id \"') "
        "WHERE seq=7"
    )
    conn.commit()
    conn.close()
    assert path.read_bytes() != before
    bad = _verify_cli(path)
    assert bad.returncode == 1
    assert summary["run_id"] in bad.stderr and "seq 7" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_a_failed_run_redone_is_reopened_under_the_header_it_records_then(tmp_path: Path) -> None:
    """A failed run is reset and redone; its row then says what the redo's header says (the
    sandbox and model it ran with), so `store verify` can hold the row to the header."""
    from labreplay.runtime.header import HEADER_KIND, header_payload
    from labreplay.runtime.recorder import open_run

    def attempt(store: Store, sandbox: str, status: str) -> str:
        header = RunHeader(SPEC, "main", "probe", {}, 0, model="m", extra_provenance={
            "agent_isolation": "subprocess", "agent_sandbox": sandbox})  # fmt: skip
        rec, _ = open_run(store, header)
        rec.append(HEADER_KIND, header_payload(
            agent="probe", agent_params={}, isolation="subprocess", sandbox=sandbox, seed=0,
            branch="main", spec_hash=SPEC.spec_hash, protocol=SPEC.protocol, model="m"))  # fmt: skip
        rec.finish(status, {"cause": "agent unavailable"} if status == "failed" else {})
        return rec.run_id

    with Store(tmp_path / "s.sqlite") as store:
        first = attempt(store, "none", "failed")
        assert attempt(store, "bwrap", "complete") == first
        assert store.run(first).provenance["agent_sandbox"] == "bwrap"
        report = verify_store(store)
    assert report.ok, report.problems
