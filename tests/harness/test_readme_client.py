"""The README's minimal stdio client runs as written and records, on every branch, the
trajectory hashes and adaptive AUC of the same policy in-process (`labreplay.run` at the same
defaults)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import labreplay
from labreplay.store.sqlite import Store
from labreplay.suites.campaign.agents import BayesAgent

from .clients import played_digest

pytest.importorskip("mcp")

README = Path(__file__).resolve().parents[2] / "docs" / "harnesses.md"


def readme_client() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("<!-- harness-client -->")
    body = text[start:].split("```python\n", 1)[1].split("```", 1)[0]
    assert 25 <= len(body.splitlines()) <= 45  # "about 30 lines"
    return body


def test_readme_client_matches_in_process(
    campaign_specs: list[Any], spec_dir: Path, served_env: dict[str, str], tmp_path: Path
) -> None:
    client = tmp_path / "client.py"
    client.write_text(readme_client(), encoding="utf-8")
    store = tmp_path / "mcp.sqlite"
    out = subprocess.run(
        [sys.executable, str(client), str(spec_dir), str(store), "short-1"],
        capture_output=True,
        text=True,
        env=served_env,
        timeout=300,
        check=True,
    )
    done = json.loads(out.stdout.strip().splitlines()[-1])
    (reference,) = labreplay.run("campaign", campaign_specs[:1], BayesAgent, tmp_path / "l.sqlite")
    assert done["done"] and done["played"][0]["branches"] == list(reference["branches"])
    assert len(reference["branches"]) == 5  # adaptive, 3 random replicates, no-evidence
    with Store(tmp_path / "l.sqlite") as db:
        local = {r.branch: played_digest(db.events(r.run_id)) for r in db.runs(suite="campaign")}
    with Store(store, readonly=True) as db:
        runs = {r.branch: r for r in db.runs(suite="campaign")}
        for branch, row in reference["branches"].items():
            # the played events (the header names the harness by design)
            assert played_digest(db.events(runs[branch].run_id)) == local[branch], branch
            assert db.scores(runs[branch].run_id)["adaptive_auc"] == row["adaptive_auc"]
            assert runs[branch].agent == "bayes-over-mcp"
