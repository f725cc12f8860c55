"""The utility robustness audit: yield-only, additive and maximin beside the product utility,
with 2 agents an order that holds or flips (no correlation claimed), and what it cannot tell."""

from __future__ import annotations

import csv
import json
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from labreplay.cli import main as cli_main
from labreplay.suites.conditions.importer import ImportOptions, import_table
from labreplay.suites.conditions.questions import load_questions
from labreplay.suites.conditions.report import write_compiled
from labreplay.suites.conditions.robustness import (
    AuditQuestion,
    audit_question,
    utility_audit,
)


@pytest.fixture(scope="module")
def ee_questions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three substrates, a partial ligand x base grid each, with yield and ee."""
    rng = np.random.default_rng(5)
    root = tmp_path_factory.mktemp("audit")
    table = root / "ee.csv"
    with table.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["substrate", "ligand", "base", "yield", "ee"])
        for cell in product(["1a", "1b", "1c"], ["L0", "L1", "L2", "L3"], ["DBU", "MTBD", "K3PO4"]):
            if rng.random() >= 0.3:
                y, ee = rng.uniform(5, 95), rng.uniform(-20, 98)
                writer.writerow([*cell, round(float(y), 1), round(float(ee), 1)])
    compiled = import_table(
        table, ImportOptions(["substrate"], ["ligand", "base"], "yield", ee_col="ee")
    )
    out = root / "ee.jsonl"
    write_compiled(compiled, out)
    return out


def test_alternative_utilities_of_one_question(ee_questions: Path) -> None:
    q = next(q for q in load_questions(ee_questions) if q["question_type"] == "mc_all")
    view = audit_question(q)
    assert view is not None and view.has_selectivity
    ys = [s["yield"] / 100 for s in q["meta"]["scores"]]
    fs = [(1 + s["ee"] / 100) / 2 for s in q["meta"]["scores"]]
    for name, values in (
        ("yield_only", ys),
        ("additive", [(y + f) / 2 for y, f in zip(ys, fs, strict=True)]),
        ("maximin", [min(y, f) for y, f in zip(ys, fs, strict=True)]),
        ("product", [y * f for y, f in zip(ys, fs, strict=True)]),
    ):
        assert view.rel[name] == pytest.approx([v / max(values) for v in values], abs=1e-6)


def _view(qid: str, table: str, selective: bool = True) -> AuditQuestion:
    rel = {u: (1.0, 0.5) for u in ("product", "yield_only", "additive", "maximin")}
    return AuditQuestion(qid, table, rel, selective)


def _scores(product_: float, additive: float) -> dict[str, float]:
    return {"product": product_, "yield_only": product_, "additive": additive, "maximin": product_}


def test_two_agents_report_a_flip_and_claim_no_correlation() -> None:
    questions = {f"q{i}": _view(f"q{i}", f"t{i % 3}") for i in range(6)}
    runs = {
        "a": {qid: _scores(1.0, 0.5) for qid in questions},
        "b": {qid: _scores(0.5, 1.0) for qid in questions},
    }
    audit = utility_audit(runs, questions)
    assert audit["order_product"] == ["a", "b"]
    additive = audit["comparisons"]["additive"]
    assert additive["flipped_pairs"] == [["a", "b"]] and additive["spearman_rho"] is None
    assert audit["comparisons"]["maximin"]["same_order_as_product"]
    assert audit["gap"]["additive"]["mean"] == pytest.approx(-0.5)
    assert audit["gap"]["additive"]["ci95"][1] < 0  # every table says so: outside noise
    assert "flips under additive (outside noise)" in audit["can_tell"]
    assert "holds under yield_only (outside noise), maximin (outside noise)" in audit["can_tell"]
    assert "under the product utility a leads b by +0.500 (outside noise)" in audit["can_tell"]
    assert "needs at least 3 agents; none is claimed" in audit["cannot_tell"]
    assert "6 MC_all question(s) with selectivity" in audit["cannot_tell"]


def test_two_agents_within_noise_say_so() -> None:
    """Two agents whose per-table gaps disagree in sign: the order is reported with its noise,
    and what 2 agents cannot tell is said."""
    questions = {f"q{i}": _view(f"q{i}", f"t{i % 4}") for i in range(8)}
    runs = {
        "a": {q: _scores(0.9 if int(q[1:]) % 4 < 2 else 0.5, 0.7) for q in questions},
        "b": {q: _scores(0.6, 0.7 if int(q[1:]) % 4 else 0.9) for q in questions},
    }
    audit = utility_audit(runs, questions)
    assert audit["order_product"] == ["a", "b"]
    assert "leads b by +0.100 (within noise: interval holds 0)" in audit["can_tell"]
    assert "which agent is better where the gap interval holds 0" in audit["cannot_tell"]
    assert all(c["spearman_rho"] is None for c in audit["comparisons"].values())


def test_reversed_means_within_noise_are_no_flip() -> None:
    """Issue 49: an order is said to flip only where the gap's interval excludes 0; means that
    reverse by a hair while the tables disagree are reported as within noise."""
    questions = {f"q{i}": _view(f"q{i}", f"t{i % 4}") for i in range(8)}
    b_additive = {0: 0.4, 1: 1.0, 2: 0.5, 3: 0.95}  # gaps a - b per table: +.3 -.3 +.2 -.25
    runs = {
        "a": {q: _scores(0.9, 0.7) for q in questions},
        "b": {q: _scores(0.6, b_additive[int(q[1:]) % 4]) for q in questions},
    }
    audit = utility_audit(runs, questions)
    additive = audit["comparisons"]["additive"]
    assert audit["gap"]["additive"]["mean"] == pytest.approx(-0.0125)  # means reversed
    assert additive["order"] == ["b", "a"]
    assert additive["flipped_pairs"] == [] and additive["same_order_as_product"]
    assert additive["reversed_within_noise"] == [["a", "b"]]
    assert "no flip" in audit["can_tell"]
    assert "additive (means reversed within noise)" in audit["can_tell"]


def test_one_agent_tells_nothing_and_three_give_a_correlation() -> None:
    questions = {f"q{i}": _view(f"q{i}", "t", selective=False) for i in range(4)}
    one = utility_audit({"a": {q: _scores(0.7, 0.7) for q in questions}}, questions)
    assert one["can_tell"].startswith("nothing") and "comparisons" not in one
    runs = {
        name: {q: _scores(p, p) for q in questions}
        for name, p in (("a", 0.9), ("b", 0.6), ("c", 0.3))
    }
    three = utility_audit(runs, questions)
    assert three["comparisons"]["additive"]["spearman_rho"] == pytest.approx(1.0)
    assert "gap" not in three and "no flip" in three["can_tell"]
    assert "additive and maximin equal yield-only on every question" in three["cannot_tell"]


def test_leaderboard_audits_two_real_runs(ee_questions: Path, tmp_path: Path) -> None:
    cli_main._add_suite_groups()
    runner = CliRunner()
    store = tmp_path / "s.db"
    for agent in ("random", "ranker"):
        argv = ["conditions", "run", "--questions", str(ee_questions), "--agent", agent]
        result = runner.invoke(cli_main.app, [*argv, "--store", str(store), "--json"])
        assert result.exit_code == 0, result.output
    result = runner.invoke(cli_main.app, ["conditions", "leaderboard", "--store", str(store)])
    assert result.exit_code == 0 and "cannot tell: a rank correlation" in result.output
    board = runner.invoke(
        cli_main.app, ["conditions", "leaderboard", "--store", str(store), "--json"]
    )
    data: dict[str, Any] = json.loads(board.output)
    (audit,) = data["utility_audit"].values()
    assert audit["n_agents"] == 2 and audit["n_with_selectivity"] == audit["n_mc_all_questions"]
    for run in data["runs"]:  # the audit's product score is the headline MC_all score
        label = f"{run['agent']} (seed {run['seed']})"
        assert audit["mc_all_score"][label]["product"] == pytest.approx(run["mc_all_score"])
    assert set(audit["gap"]) == {"product", "yield_only", "additive", "maximin"}
