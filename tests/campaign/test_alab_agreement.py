"""The A-Lab outcome rule against the Precursor Genome's expert labels (issue 34, item 3)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from labreplay.sdk import Missing, Record
from labreplay.suites.campaign.alab_agreement import (
    agreement_lines,
    ledger_agreement,
    outcome_agreement,
)

# What the report states for the rule the A-Lab record compiles with (real data).
REPORTED = {"overlap": 191, "decided_by_rule": 43, "decided_by_both": 43, "agreeing": 11}


def _sample(sid: str, valid: bool, category: str | None) -> Record:
    outcome = {"valid": valid, "category": category or Missing("physical failure")}
    return Record(sid, "precursor-genome", {}, outcome)


def test_counts_and_confusion_on_small_records() -> None:
    samples = [
        _sample("PG_1", True, "unreacted"),
        _sample("PG_2", True, "transformed"),
        _sample("PG_3", False, None),
        _sample("PG_4", True, "unreacted"),  # not run by the pipeline: no overlap
    ]
    outcomes = {
        "PG_1-1": {"valid": True, "category": "unreacted"},
        "PG_2-1": {"valid": True, "category": Missing("automated refinement failed: no CIFs")},
        "PG_3-1": {"valid": Missing("no XRD pattern file"), "category": Missing("no validity")},
        "OTHER-1": {"valid": False, "category": Missing("x")},
    }
    report = outcome_agreement("rule/1", outcomes, samples)
    assert (report["overlap"], report["decided_by_rule"], report["decided_by_experts"]) == (3, 1, 3)
    assert (report["decided_by_both"], report["agreeing"]) == (1, 1)
    assert report["confusion"] == {
        "undecided": {"physical_failure": 1, "transformed": 1},
        "unreacted": {"unreacted": 1},
    }
    assert report["undecided_reasons"] == {
        "automated refinement failed": 1,
        "no XRD pattern file": 1,
    }
    lines = agreement_lines(report)
    assert "decided by the rule 1, by the experts 3, by both 1; agreeing 1 (100%" in lines[0]
    assert lines[1] == "confusion (rule->experts): unreacted->unreacted 1"


def test_compile_prints_the_computed_agreement(data_dir: Path) -> None:
    report = ledger_agreement(data_dir)
    assert {k: report[k] for k in REPORTED} == REPORTED  # type: ignore[literal-required]
    assert report["decided_by_experts"] == report["overlap"]  # every ledger sample is labelled
    assert sum(sum(row.values()) for row in report["confusion"].values()) == report["overlap"]
    args = ["campaign", "compile", "--record", "alab-pipeline", "--data-dir", str(data_dir)]
    proc = subprocess.run(
        [sys.executable, "-m", "labreplay.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "COLUMNS": "400"},
    )
    assert proc.returncode == 0, proc.stderr
    printed = [line.rstrip() for line in proc.stdout.splitlines()]
    for line in agreement_lines(report):
        assert line in printed
