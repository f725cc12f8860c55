"""The figures docs/suites/campaign.md quotes about the shared data (the seed-0 partition of the
Precursor Genome, the A-Lab record's decidable runs and its agreement with the expert ledger)
are what a fresh compile gives now, read off the page as `test_readme_result` reads the
README (issue 51)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "suites" / "campaign.md"


def _said(pattern: str) -> tuple[int, ...]:
    """The integers `pattern` captures on the page (its prose is re-wrapped: any whitespace)."""
    text = " ".join(PAGE.read_text(encoding="utf-8").split())
    found = re.search(pattern, text)
    assert found, f"docs/suites/campaign.md lost: {pattern}"
    return tuple(int(g.replace(",", "")) for g in found.groups())


@pytest.fixture(scope="module")
def data_dir() -> Path:
    if not os.environ.get("LABREPLAY_DATA_DIR"):
        pytest.skip("LABREPLAY_DATA_DIR is not set: the figures are the data's")
    from labreplay.records.sources import resolve_data_dir

    return resolve_data_dir()


def test_the_partition_figures_are_the_seed_0_compile(
    data_dir: Path, compiled_campaign: Any
) -> None:
    partition, specs, index = compiled_campaign(record="precursor-genome", seed=0)
    long = [s for s in specs if s.body["assignment"]["kind"] == "long"]
    short = [s for s in specs if s.body["assignment"]["kind"] == "short"]
    said = _said(
        r"(\d+) evaluation precursors, a (\d+)-pair held-out panel, (\d+) long assignments of "
        r"(\d+) candidates rotating (\d+) panel experiments .*? (\d+) short assignments covering "
        r"the other (\d+), (\d+) context pairs; budgets of (\d+) experiments, (\d+) evidence "
        r"inspections and (\d+) expert reviews per long assignment"
    )
    budgets = long[0].body["budgets"]
    assert said == (
        len(partition.eval_precursors),
        index["panel_size"],
        len(long),
        len(long[0].body["candidates"]),
        index["long_experiments"],
        len(short),
        index["short_experiments"],
        index["context_size"],
        budgets["experiments"],
        budgets["evidence"],
        budgets["reviews"],
    )


def test_the_alab_figures_are_the_record_and_the_ledger(data_dir: Path) -> None:
    from labreplay.suites.campaign.alab_agreement import ledger_agreement
    from labreplay.suites.campaign.api import load_records
    from labreplay.suites.campaign.protocol import decidable

    records = load_records("alab-pipeline", data_dir)
    decided = sum(1 for r in records if decidable(r))
    assert _said(r"(\d+) of its (\d+) runs are decidable") == (decided, len(records))
    report = ledger_agreement(data_dir)
    assert _said(
        r"on the (\d+) samples both records hold \(today (\d+) of the (\d+) it decides\)"
    ) == (
        report["overlap"],
        report["agreeing"],
        report["decided_by_rule"],
    )
