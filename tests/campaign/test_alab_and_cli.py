"""The A-Lab record compiles and runs under the sdl1 family; the CLI round trip works."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.reliability.conftest import run_cli_in_process

from labreplay.suites.campaign.api import compile_specs, load_records
from labreplay.suites.campaign.model import label_of
from labreplay.suites.campaign.runner import run_assignment


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "labreplay.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_alab_record_compiles_and_runs(data_dir):
    from labreplay.suites.campaign.agents import BayesAgent

    records = load_records("alab-pipeline", data_dir)
    assert len(records) == 592
    _, specs, index = compile_specs("alab-pipeline", records=records, seed=0)
    assert index["protocol_params"]["panel_requires_outcome"] is True
    assert specs, "the A-Lab record must yield at least one assignment"
    by_id = {r.record_id: r for r in records}
    for s in specs:  # every held-out query of the A-Lab panel can be scored
        assert all(label_of(by_id[q["experiment_id"]].outcome) for q in s.body["queries"])
    result = run_assignment(specs[0], BayesAgent, None, 0)
    assert set(result["branches"]) == {"adaptive", "random", "no-evidence"}
    assert result["adaptive_auc"] == result["adaptive_auc"]  # not NaN


def test_cli_compile_run_leaderboard_export(tmp_path: Path):
    """The campaign CLI's subprocess smoke test: compile, run, leaderboard and export as a user
    runs them; the second agent, the resumed runs and the refusal run in-process."""
    specs, store = tmp_path / "specs", tmp_path / "runs.sqlite"
    assert _cli("campaign", "compile", "--seed", "0", "--out", str(specs)).returncode == 0

    def run(agent: str, cli: Callable[..., subprocess.CompletedProcess[str]] = _cli):
        return cli(
            "campaign",
            "run",
            "--specs",
            str(specs),
            "--agent",
            agent,
            "--store",
            str(store),
            "--only",
            "long-1,short-2",
            "--json",
        )

    for agent, cli in (("bayes", _cli), ("random", run_cli_in_process)):
        proc = run(agent, cli)
        assert proc.returncode == 0, proc.stderr
        results = json.loads(proc.stdout)
        assert [r["assignment"]["id"] for r in results] == ["long-1", "short-2"]
    again = run("bayes", run_cli_in_process)
    assert json.loads(again.stdout) == json.loads(run("bayes", run_cli_in_process).stdout)
    board = _cli("campaign", "leaderboard", "--store", str(store), "--json")
    assert board.returncode == 0, board.stderr
    data = json.loads(board.stdout)
    for kind in ("long", "short"):  # one assignment of each on its own board
        table = data["tables"][kind]
        assert {r["system"] for r in table["rows"]} == {"bayes"}
        assert "random" in {r["system"] for r in table["references"]}  # reference, not ranked
        assert all(r["assignments"] == 1 for r in table["rows"])
    assert data["bootstrap"]["resamples"] == 10_000
    export = _cli("export", "--store", str(store), "--out", str(tmp_path / "export"))
    assert export.returncode == 0, export.stderr
    runs = (tmp_path / "export" / "runs.jsonl").read_text().splitlines()
    # 2 agents x 2 assignments x (adaptive + 3 random replicates by default + no-evidence),
    # resumed not duplicated
    assert len(runs) == 20
    branches = sorted({json.loads(r)["branch"] for r in runs})
    assert branches == ["adaptive", "no-evidence", "random", "random-2", "random-3"]
    # Forecasts are exported in the events: panel checkpoints and accepted local forecasts.
    events = [
        json.loads(x) for x in (tmp_path / "export" / "events.jsonl").read_text().splitlines()
    ]
    payloads = [(e["kind"], json.loads(e["payload"])) for e in events]
    panel = [p["forecasts"] for kind, p in payloads if kind == "checkpoint"]
    local = [
        p["action"]
        for kind, p in payloads
        if kind == "action" and p["accepted"] and p["action"]["type"] == "submit_forecast"
    ]
    assert panel and local and all("p_valid" in a for a in local)
    assert all(len(f) in (10, 11, 32) for f in panel)
    provenance = json.loads(json.loads(runs[0])["provenance"])
    for field in ("labreplay_version", "git_commit", "git_dirty", "dataset_hashes", "spec_hash"):
        assert field in provenance
    bad = run_cli_in_process(
        "campaign",
        "run",
        "--specs",
        str(tmp_path / "nowhere"),
        "--agent",
        "bayes",
        "--store",
        str(store),
    )
    assert bad.returncode == 2 and "index.json" in bad.stderr
