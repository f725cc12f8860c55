"""The A-Lab outcome rule against the Precursor Genome's expert labels (issue 34, item 3)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.reliability.conftest import run_cli_in_process

from labreplay.sdk import Missing, Record
from labreplay.suites.campaign.alab_agreement import (
    agreement_lines,
    ledger_agreement,
    outcome_agreement,
)
from labreplay.suites.campaign.alab_outcome import category_of, derive_outcome

# What the report states for the rule the A-Lab record compiles with (real data).
REPORTED = {"overlap": 191, "decided_by_rule": 24, "decided_by_both": 24, "agreeing": 14}


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


def test_compile_prints_the_computed_agreement(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = ledger_agreement(data_dir)
    assert {k: report[k] for k in REPORTED} == REPORTED  # type: ignore[literal-required]
    assert report["decided_by_experts"] == report["overlap"]  # every ledger sample is labelled
    assert sum(sum(row.values()) for row in report["confusion"].values()) == report["overlap"]
    args = ["campaign", "compile", "--record", "alab-pipeline", "--data-dir", str(data_dir)]
    monkeypatch.setenv("COLUMNS", "400")
    proc = run_cli_in_process(*args)
    assert proc.returncode == 0, proc.stderr
    printed = [line.rstrip() for line in proc.stdout.splitlines()]
    for line in agreement_lines(report):
        assert line in printed


def _phases(*pairs: tuple[str, float]) -> list[dict[str, object]]:
    return [{"name": f"{name}_225_(icsd_1)-0", "weight_fraction": w} for name, w in pairs]


def test_category_rule_reads_phases_as_the_ledger_defines_categories() -> None:
    pair = ["NiO", "WO3"]
    assert category_of(_phases(("NiO", 0.05), ("WO3", 0.03)), pair) == "unreacted"
    # a refined structure's non-stoichiometry is still the precursor
    assert category_of(_phases(("Ni0.96O1", 0.05), ("WO3", 0.03)), pair) == "unreacted"
    # a product and one precursor left over (stoichiometric excess): the limiting one consumed
    assert category_of(_phases(("NiWO4", 0.07), ("WO3", 0.02)), pair) == "completely_reacted"
    assert category_of(_phases(("NiWO4", 0.07)), pair) == "completely_reacted"
    both = _phases(("NiWO4", 0.07), ("WO3", 0.02), ("NiO", 0.01))
    assert category_of(both, pair) == "partially_reacted"
    # a precursor that changed on its own (Fe3O4 -> Fe2O3: 0.029 apart, not the same phase)
    iron = ["Fe3O4", "Y2O3"]
    assert category_of(_phases(("Fe2O3", 0.04), ("Y2O3", 0.05)), iron) == "transformed"
    assert category_of(_phases(("Fe3O4", 0.04), ("Y2O3", 0.05)), iron) == "unreacted"
    # hydrate water on the precursor side is ignored
    assert category_of(_phases(("LiOH", 0.1), ("TiO2", 0.1)), ["LiOH(H2O)", "TiO2"]) == (
        "unreacted"
    )
    # a phase refined to zero weight is absent; water says nothing about the precursors
    absent = _phases(("NiWO4", 0.0), ("NiO", 0.05), ("WO3", 0.03), ("H2O2", 0.01))
    assert category_of(absent, pair) == "unreacted"


def test_category_rule_leaves_what_it_cannot_see_missing() -> None:
    only_one = category_of(_phases(("HfO2", 0.2)), ["HfO2", "SiO2"])
    assert isinstance(only_one, Missing) and only_one.reason.endswith(": SiO2")
    for phases, precursors, words in [
        (_phases(("NiO", 0.0)), ["NiO", "WO3"], "no phase weight"),
        (_phases(("NiO", 0.1)), [], "no precursors recorded"),
        (_phases(("NiO", 0.1)), ["NiO", "NH4NO3"], "characteristic element: NH4NO3"),
        (_phases(("not a formula", 0.1)), ["NiO", "WO3"], "unparseable phase formula"),
    ]:
        result = category_of(phases, precursors)
        assert isinstance(result, Missing) and words in result.reason, (phases, result)


def test_a_missing_xrd_file_is_never_a_physical_failure() -> None:
    refinement = Missing("no automated refinement in the pipeline export")
    cases = [  # (recovered mg, XRD pattern recorded) -> valid
        ((120.0, True), True),
        ((120.0, False), "no XRD pattern file"),
        ((None, False), "recovered mass not recorded"),
        ((-3.0, True), "negative recovered mass"),
        ((0.0, True), "contradictory"),
        ((0.0, False), False),  # nothing recovered, whatever the export holds
    ]
    for (mass, scanned), expected in cases:
        run = {
            "facts": {"weight_collected_mg": mass, "xrd_recorded": scanned},
            "evidence": {"automated_refinement": refinement},
            "precursors": ["NiO", "WO3"],
        }
        valid = derive_outcome(run)["valid"]
        if isinstance(expected, str):
            assert isinstance(valid, Missing) and expected in valid.reason
        else:
            assert valid is expected


def test_the_rule_reads_the_experts_own_refinements_as_they_do(pg_records: list[Record]) -> None:
    """`category_of` on each classified ledger sample's selected refinement: it must give the
    experts' category almost always, so that a disagreement on an A-Lab run comes from the
    automated phase identification, not from the reading of phases."""
    decided = agreeing = compared = 0
    for record in pg_records:
        refinements = record.evidence["refinement"]
        if record.outcome["valid"] is not True or isinstance(refinements, Missing):
            continue
        chosen = [i for i in refinements if i["content"]["selected"] is not False]
        phases = chosen[-1]["content"]["phases"] if chosen else None
        if not phases:
            continue
        compared += 1
        got = category_of(phases, record.descriptors["precursors"])
        decided += isinstance(got, str)
        agreeing += got == record.outcome["category"]
    assert (compared, decided, agreeing) == (995, 982, 951)
