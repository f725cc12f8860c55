"""Issue 49: the usual winner (leave-table-out popularity) is a runnable reference agent, reads
no row of the question's own table, and is the row every substrate-specific skill is read
against; no printed reading of a precedent lift calls it chemistry."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from labreplay.suites.conditions.questions import Question, agent_view, load_questions, table_id_of
from labreplay.suites.conditions.scoring import answer_key
from labreplay.suites.conditions.usual_winner import UsualWinner


def _answers(questions: list[Question]) -> dict[str, Any]:
    agent = UsualWinner(questions)
    return {str(q["id"]): agent.answer(dict(agent_view(q))) for q in questions}


def _flip_gold(questions: list[Question], table: str) -> list[Question]:
    """Every base question of `table` gets a different gold: its worst option becomes the only
    winner (utilities reversed), as if that table's outcomes had come out the other way."""
    out = copy.deepcopy(questions)
    for q in out:
        if table_id_of(q) != table or q["question_type"] == "fib_all":
            continue
        scores = q["meta"]["effective_scores"]
        top = max(float(s or 0.0) for s in scores)
        q["meta"]["effective_scores"] = [top - float(s or 0.0) + 0.01 for s in scores]
        q["answer"] = [min(range(len(scores)), key=lambda i: (float(scores[i] or 0.0), i))]
    return out


def test_the_usual_winner_reads_no_row_of_the_questions_own_table(questions_file: Path) -> None:
    questions = load_questions(questions_file)
    before = _answers(questions)
    tables = sorted({table_id_of(q) for q in questions if q["question_type"] != "fib_all"})
    changed_elsewhere = 0
    for table in tables[:: max(1, len(tables) // 12)]:  # a dozen tables over the datasets
        after = _answers(_flip_gold(questions, table))
        own = [str(q["id"]) for q in questions if table_id_of(q) == table]
        assert own and all(after[i] == before[i] for i in own), table
        # the flip has teeth: other tables of the dataset read it (the rule is leave-one-out)
        changed_elsewhere += sum(after[i] != before[i] for i in before if i not in own)
    assert changed_elsewhere > 0


def test_the_usual_winner_counts_gold_values_in_other_tables_only() -> None:
    def mc(qid: str, table: str, ligands: list[str], gold: int) -> Question:
        scores = [0.9 if i == gold else 0.2 for i in range(len(ligands))]
        return {
            "id": qid,
            "question_type": "mc_single",
            "varying_keys": ["ligand"],
            "options": [{"ligand": [{"content": x}]} for x in ligands],
            "answer": [gold],
            "input": {"reactants": [], "products": [], "fixed_conditions": {}},
            "meta": {"dataset": "d", "parent_table_id": table, "effective_scores": scores},
        }  # type: ignore[typeddict-item]

    questions = [
        mc("a1", "A", ["L1", "L2", "L3"], 0),  # L1 wins twice in table A only
        mc("a2", "A", ["L1", "L2", "L3"], 0),
        mc("b1", "B", ["L1", "L2", "L3"], 1),  # L2 wins once in B, once in C
        mc("c1", "C", ["L3", "L2", "L1"], 1),
    ]
    assert [answer_key(q).answer for q in questions] == [frozenset({0})] * 2 + [frozenset({1})] * 2
    got = _answers(questions)
    assert got["a1"] == {"option": 1}  # L2: 2 wins elsewhere; A's own two L1 wins unseen
    assert got["b1"] == {"option": 0}  # L1 has 2 (table A) vs L2 1 (table C)
    assert got["c1"] == {"option": 2}  # L1 2 vs L2 1: the option holding L1


def test_every_conditions_board_carries_the_usual_winner_row(
    questions_file: Path, tmp_path: Path, natural_width: object
) -> None:
    from typer.testing import CliRunner

    import labreplay
    from labreplay.cli import main as cli_main
    from labreplay.store.sqlite import Store
    from labreplay.suites.conditions.runner import leaderboard, question_spec

    spec = question_spec(questions_file, load_questions(questions_file))
    store = tmp_path / "runs.sqlite"
    with Store(store) as db:
        for agent in ("ranker", "usual_winner"):
            labreplay.run("conditions", [spec], agent, db, seed=0, questions=questions_file)
        board = leaderboard(db)
    by_agent = {str(r["agent"]): r for r in board["runs"]}
    (reference,) = board["usual_winner"].values()
    # the reference row is the agent the runner runs, scored on the same questions
    for key in ("mc_single_score", "mc_all_score", "fib_strict"):
        assert reference[key] == by_agent["usual_winner"][key]
    assert by_agent["usual_winner"]["skill_mc_all_score"] == 0.0
    ranker = by_agent["ranker_leave_table_out"]
    assert ranker["skill_mc_all_score"] is not None
    gap = float(ranker["mc_all_score"]) - float(reference["mc_all_score"] or 0.0)  # type: ignore[arg-type]
    assert abs(float(ranker["skill_mc_all_score"]) - gap) < 1e-9  # type: ignore[arg-type]
    assert board["withheld_twins"][spec.spec_id], "compile withheld leaking twins"
    result = CliRunner().invoke(cli_main.app, ["conditions", "leaderboard", "--store", str(store)])
    assert result.exit_code == 0, result.output
    assert "usual_winner (reference)" in result.output
    assert "skill over the usual winner, MC_all score [95% CI]" in result.output
    assert "chemistry" not in result.output.lower()
    assert "precedent twins withheld at compile" in result.output
