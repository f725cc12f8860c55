"""Issue 36 on the built-in data: precedents that carry chemistry, not exclusion; noise floors;
ratio responses refused as yields unless declared; intervals clustered by source table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from labreplay.errors import DataError
from labreplay.suites.conditions.agents import ExclusionBaseline, PrecedentRanker
from labreplay.suites.conditions.compiler import (
    NoiseFloor,
    compile_table,
    noise_floor,
    replicate_sd,
)
from labreplay.suites.conditions.datasets import ADAPTERS, load_tables
from labreplay.suites.conditions.precedent_audit import HEADLINE_METRICS, reference_lifts
from labreplay.suites.conditions.scoring import answer_key
from labreplay.suites.conditions.summary import cluster_bootstrap
from labreplay.suites.conditions.tables import TableRule, build_tables


@pytest.fixture(scope="module")
def lifts(compiled_all: Any) -> dict[str, Any]:
    return reference_lifts(compiled_all.questions, 0)


def test_exclusion_baseline_lift_contains_zero_on_every_dataset(lifts: dict[str, Any]) -> None:
    per = lifts["exclusion"]
    assert len(per) > 5  # every dataset with precedent twins, and "all"
    for ds, metrics in per.items():
        for metric in HEADLINE_METRICS:
            if metric in metrics and metrics[metric]["ci95"] is not None:
                assert metrics[metric]["contains_zero"], (ds, metric, metrics[metric])
    overall = per["all"]["mc.score"]
    # 319 source tables with twins after the option-set cut (20 per set; was 993)
    assert overall["clusters"] > 300 and abs(overall["mean"]) < 0.02


def test_precedent_ranker_keeps_a_positive_lift(lifts: dict[str, Any]) -> None:
    overall = lifts["precedent_ranker"]["all"]["mc.score"]
    assert overall["ci95"][0] > 0, overall  # the precedents' outcomes carry chemistry
    # ...and it beats the exclusion baseline by more than the baseline's own interval
    assert overall["mean"] > lifts["exclusion"]["all"]["mc.score"]["ci95"][1]


def test_precedents_are_chosen_blind_to_outcomes(data_dir: Path) -> None:
    """Shuffling the outcomes among a reaction's rows changes no precedent choice."""
    chosen = []
    for shuffle in (False, True):
        tables = load_tables("olympus_suzuki", data_dir, 0)
        if shuffle:
            rows = tables[0].reaction_rows or tables[0].rows
            rng = np.random.default_rng(7)
            utilities = [r.utility for r in rows]
            for r, u in zip(rows, rng.permutation(utilities), strict=True):
                r.utility = float(u)
        picked = {}
        for table in tables:
            questions, _ = compile_table(table, 0, "x", floor=NoiseFloor(0.0, 0.0))
            for q in questions:
                if q["meta"]["variant"] == "with_precedents":
                    picked[q["id"]] = q["meta"]["precedent_entries"]
        chosen.append(picked)
    common = set(chosen[0]) & set(chosen[1])
    assert len(common) >= 10
    assert all(chosen[0][qid] == chosen[1][qid] for qid in common)


def test_exclusion_baseline_picks_the_least_shown_option() -> None:
    def opt(name: str) -> dict[str, Any]:
        return {"ligand": [{"content": name, "SMILES": ""}]}

    view = {
        "id": "q1",
        "question_type": "mc_single",
        "varying_keys": ["ligand"],
        "options": [opt("A"), opt("B"), opt("C")],
        "precedents": [
            {"conditions": opt("A"), "outcome": {"yield": 80.0}},
            {"conditions": opt("B"), "outcome": {"yield": 10.0}},
            {"conditions": opt("A"), "outcome": {"yield": 70.0}},
        ],
    }
    assert ExclusionBaseline(0).answer(view) == {"option": 2}  # C: never shown
    assert PrecedentRanker(0).answer(view) == {"option": 0}  # A: 75% where it was run


def test_intervals_resample_source_tables() -> None:
    # two tables, one all +1 and one all -1: a question-level bootstrap would be narrow
    values = [1.0] * 50 + [-1.0] * 50
    tables = ["t1"] * 50 + ["t2"] * 50
    found = cluster_bootstrap(values, tables, seed=0)
    assert found["clusters"] == 2 and found["ci95"][0] < -1 and found["ci95"][1] > 1
    many = cluster_bootstrap(values * 6, [f"{t}{i}" for i in range(6) for t in tables], seed=0)
    assert many["clusters"] == 12 and "source tables" in many["resampled"]


def test_noise_floors_exclude_and_count(compiled_all: Any) -> None:
    skipped = compiled_all.skipped
    assert skipped["below_yield_floor"] > 0 and skipped["within_noise"] > 0
    rules = {name: a.rule for name, a in ADAPTERS.items()}
    for q in compiled_all.questions:
        key = answer_key(q)
        rule = rules[key.dataset]
        utilities = sorted(set(q["meta"]["effective_scores"]), reverse=True)
        if rule.response == "yield" and rule.objective != "selectivity":
            assert max(y or 0.0 for y in q["meta"]["yields"]) >= 100 * rule.yield_floor, q["id"]
        assert len(utilities) > 1 and utilities[0] - utilities[1] > 0, q["id"]


def test_within_noise_uses_the_tables_replicate_sd(data_dir: Path) -> None:
    """Reizman's replicated runs give a pooled SD (utility units) that replaces 2 points."""
    tables = load_tables("summit_reizman", data_dir, 0)
    rule = ADAPTERS["summit_reizman"].rule
    table = next(t for t in tables if (replicate_sd(t.rows) or 0) > 0.02)
    sd = replicate_sd(table.rows) or 0.0
    questions, _ = compile_table(table, 0, "x", floor=noise_floor(rule, tables))
    assert questions
    for q in questions:
        utilities = sorted(set(q["meta"]["effective_scores"]), reverse=True)
        assert utilities[0] - utilities[1] >= sd, q["id"]


def test_ratio_response_is_refused_as_a_yield_unless_declared(data_dir: Path) -> None:
    rule = TableRule("r", "", "", ("ligand",), yield_column="P/IS ratio")
    with pytest.raises(DataError) as err:
        build_tables([], rule, 0)
    assert "P/IS ratio" in str(err.value) and "ratio" in str(err.value)
    cernak = ADAPTERS["currybo_cernak"].rule
    assert cernak.response == "ratio"  # MALDI product/standard ratios, declared
    tables = load_tables("currybo_cernak", data_dir, 0)
    floor = noise_floor(cernak, tables)
    largest = max(r.utility for t in tables for r in t.rows)
    assert floor.yield_floor == pytest.approx(0.05 * largest)


def test_a_ratio_response_is_never_shown_as_a_yield(compiled_all: Any) -> None:
    from labreplay.suites.conditions.prompts import render_prompt
    from labreplay.suites.conditions.questions import agent_view

    twins = [
        q
        for q in compiled_all.questions
        if q["meta"]["dataset"] == "currybo_cernak" and q["meta"]["variant"] == "with_precedents"
    ]
    assert twins
    for q in twins:
        for ref in q["input"]["reference_conditions"]:
            assert ref["outcome"]["yield"] is None and ref["outcome"]["response_ratio"] is not None
    prompt = render_prompt(agent_view(twins[0]))
    assert "response ratio" in prompt and "yield 0" not in prompt


def test_no_answer_is_correct_in_more_than_40_percent(compiled_all: Any) -> None:
    from labreplay.suites.conditions.independence import answer_shares

    shares = answer_shares(compiled_all.questions)
    assert shares
    for ds, per in shares.items():
        for qtype, share in per.items():
            if share["questions"] >= 5:  # fewer: reported, not capped
                assert share["top_share"] <= 0.4 + 1e-9, (ds, qtype, share)
    before = compiled_all.answer_shares["before"]
    assert max(s["top_share"] for per in before.values() for s in per.values()) > 0.4
    assert compiled_all.skipped["answer_share_cap"] > 0


def test_cap_keeps_nothing_when_two_answers_share_a_type(compiled_all: Any) -> None:
    from labreplay.suites.conditions.independence import answer_of, cap_answer_share

    mc = [
        q
        for q in compiled_all.questions
        if q["question_type"] == "mc_single" and q["meta"]["variant"] == "no_precedents"
    ]
    ds = mc[0]["meta"]["dataset"]
    same = [q for q in mc if q["meta"]["dataset"] == ds and answer_of(q) == answer_of(mc[0])]
    other = [q for q in mc if q["meta"]["dataset"] == ds and answer_of(q) != answer_of(mc[0])]
    two = [*same[:3], *[q for q in other if answer_of(q) == answer_of(other[0])][:2]]
    assert len(two) == 5
    kept, withheld = cap_answer_share(two, 0)
    assert kept == [] and withheld == {ds: len(two)}


def test_leave_table_out_ranker_is_a_reference_row(questions_file: Path) -> None:
    import json

    info = json.loads(questions_file.with_name(questions_file.name + ".spec.json").read_text())
    rows = info["ranker_reference"]
    assert rows["buchwald_hartwig"]["mc_all"]["n"] >= 15  # 20 per option set, then the cap
    for per in rows.values():
        for row in per.values():
            assert 0 <= row["accuracy"] <= 1 and row["floor_score"] > 0
    assert info["precedent_references"]["exclusion"]["all"]["mc.score"]["contains_zero"]
