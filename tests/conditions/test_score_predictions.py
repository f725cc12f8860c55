"""`conditions score`: every malformed prediction is named (line, id, field, value) and the file
is refused (exit 2) unless --lenient, which scores them as invalid and says how many."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from itertools import product
from pathlib import Path
from typing import Any

import pytest

from labreplay.suites.conditions.evaluate import (
    LISTED,
    check_predictions,
    problem_lines,
    score_read,
)
from labreplay.suites.conditions.importer import ImportOptions, import_table
from labreplay.suites.conditions.report import write_compiled


@pytest.fixture(scope="module")
def question_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two substrates, each a 9-well ligand x base table (3 of 12 combinations unrun):
    MC_single, MC_all and FIB questions."""
    root = tmp_path_factory.mktemp("score")
    table = root / "screen.csv"
    with table.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["substrate", "ligand", "base", "yield"])
        grid = list(product(["1a", "1b"], ["L1", "L2", "L3", "L4"], ["B1", "B2", "B3"]))
        for i, (substrate, lig, base) in enumerate(grid):
            if i % 4 != 3:
                writer.writerow([substrate, lig, base, 10 + (7 * i) % 60])
    compiled = import_table(
        table,
        ImportOptions(
            reaction_cols=["substrate"], condition_cols=["ligand", "base"], yield_col="yield"
        ),
    )
    out = root / "questions.jsonl"
    write_compiled(compiled, out)
    return out


def _questions(path: Path) -> dict[str, dict[str, Any]]:
    from labreplay.suites.conditions.questions import load_questions

    return {q["id"]: q for q in load_questions(path)}


def _by_type(qs: dict[str, dict[str, Any]], qtype: str) -> dict[str, Any]:
    return next(q for q in qs.values() if q["question_type"] == qtype)


def _write(path: Path, records: list[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "labreplay.cli.main", "conditions", "score", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_each_malformed_kind_is_named_with_id_field_and_value(
    question_file: Path, tmp_path: Path
) -> None:
    qs = _questions(question_file)
    fib = _by_type(qs, "fib_all")
    mc, *single = [q for q in qs.values() if q["question_type"] != "fib_all"]
    n_opt = len(mc["options"])
    assert len(single) >= 5 and fib["varying_keys"] == ["ligand", "base"]
    cases: list[tuple[dict[str, Any], str, str, str]] = [
        (
            {"id": mc["id"], "answer": {"option": n_opt}},
            "answer.option",
            str(n_opt),
            "out of range",
        ),
        ({"id": single[0]["id"], "answer": {"option": -1}}, "answer.option", "-1", "negative"),
        ({"id": single[1]["id"], "answer": {"option": "2"}}, "answer.option", '"2"', "a string"),
        ({"id": single[2]["id"], "answer": {"option": 1.0}}, "answer.option", "1.0", "a float"),
        ({"id": single[3]["id"], "answer": {"option": True}}, "answer.option", "true", "boolean"),
        ({"id": single[4]["id"], "answer": {}}, "answer.option", "missing", "needs it"),
        (
            {"id": fib["id"], "answer": {"choices": {"ligand": 0, "bse": 1}}},
            "answer.choices.bse",
            "1",
            "not a slot",
        ),
        ({"id": "made_up", "answer": {"option": 0}}, "id", '"made_up"', "not in the question"),
    ]
    preds = _write(tmp_path / "p.jsonl", [c[0] for c in cases])
    read = check_predictions(preds, qs)
    described = [p.describe() for p in read.problems]
    # the FIB record has two problems (unknown slot 'bse', slot 'base' not filled)
    assert len(read.problems) == len(cases) + 1
    for line, (rec, field, value, why) in enumerate(cases, 1):
        mine = [d for d in described if d.startswith(f"line {line},") and f"'{field}'" in d]
        assert len(mine) == 1, (line, described)
        assert f"id {rec['id']!r}" in mine[0] and f"value {value}" in mine[0], mine[0]
        assert why in mine[0], mine[0]
    assert any("'answer.choices.base', value missing: slot not filled" in d for d in described)
    assert read.invalid_ids == {c[0]["id"] for c in cases[:-1]}


def test_bad_fib_slots_and_lines_that_are_not_predictions(
    question_file: Path, tmp_path: Path
) -> None:
    qs = _questions(question_file)
    fib = _by_type(qs, "fib_all")
    # the other substrate's FIB (FIB precedents come from outside the table: no twin here)
    other_fib = next(
        q for q in qs.values() if q["question_type"] == "fib_all" and q["id"] != fib["id"]
    )
    n_lig = len(fib["candidates"]["ligand"])
    preds = tmp_path / "p.jsonl"
    preds.write_text(
        "\n".join(
            [
                json.dumps({"id": fib["id"], "answer": {"choices": {"ligand": n_lig, "base": 0}}}),
                json.dumps({"id": other_fib["id"], "answer": {"choices": [0, 1]}}),
                "[1, 2]",
                "{not json",
                json.dumps({"answer": {"option": 0}}),
                json.dumps({"id": 7, "answer": {"option": 0}}),
                json.dumps({"id": fib["id"] + "x"}),
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    described = [p.describe() for p in check_predictions(preds, qs).problems]
    assert described[0].startswith(f"line 1, id {fib['id']!r}, field 'answer.choices.ligand'")
    assert f"value {n_lig}: candidate index out of range" in described[0]
    assert "field 'answer.choices', value [0, 1]: must be an object" in described[1]
    assert described[2].startswith("line 3, id -, field '(line)', value [1, 2]")
    assert described[3].startswith("line 4, id -, field '(line)'") and "JSON" in described[3]
    assert "line 5, id -, field 'id', value missing" in described[4]
    assert "line 6, id -, field 'id', value 7" in described[5]
    assert "line 7" in described[6] and "not in the question file" in described[6]


def test_cli_exits_2_listing_each_one_then_lenient_scores_them_invalid(
    question_file: Path, tmp_path: Path
) -> None:
    qs = _questions(question_file)
    ids = sorted(qs)
    records = [{"id": qid, "answer": {"option": 99}} for qid in ids]  # FIB ones lack choices
    records += [{"id": f"ghost_{i}", "answer": {"option": 0}} for i in range(LISTED)]
    preds = _write(tmp_path / "p.jsonl", records)
    before = preds.read_bytes()
    proc = _cli("--questions", question_file, "--predictions", preds)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    total = len(ids) + LISTED
    assert len(lines) == LISTED + 2  # the listing, the count of the rest, the error
    assert all(line.startswith("labreplay: malformed prediction: line ") for line in lines[:-2])
    assert f"and {total - LISTED} more malformed prediction(s)" in lines[-2]
    assert lines[-1].startswith("labreplay: error: ") and f"{total} malformed" in lines[-1]
    assert "--lenient" in lines[-1] and preds.read_bytes() == before
    proc = _cli("--questions", question_file, "--predictions", preds, "--lenient", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["malformed_predictions"] == total and out["malformed_scored_invalid"] == len(ids)
    assert out["missing_predictions"] == 0 and len(out["malformed"]) == LISTED
    n_invalid = sum(v.get("n_invalid", 0) for v in out["summary"]["by_type"].values())
    assert n_invalid == len(ids)
    lenient_note = f"--lenient: {total} malformed prediction(s); {len(ids)} question(s) scored"
    assert lenient_note in proc.stderr


def test_empty_file_is_refused_and_good_file_scores(question_file: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n", encoding="utf-8")
    for extra in ((), ("--lenient",)):
        proc = _cli("--questions", question_file, "--predictions", empty, *extra)
        assert proc.returncode == 2 and "holds no prediction" in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
    qs = _questions(question_file)
    good = [
        {"id": q["id"], "answer": {"choices": {k: 0 for k in q["varying_keys"]}}}
        if q["question_type"] == "fib_all"
        else {"id": q["id"], "text": "Answer: 1"}
        for q in qs.values()
    ]
    out = score_read(list(qs.values()), check_predictions(_write(tmp_path / "ok.jsonl", good), qs))
    assert out["malformed_predictions"] == 0 and out["missing_predictions"] == 0


def test_listing_is_capped_with_a_count() -> None:
    from labreplay.suites.conditions.evaluate import PredictionProblem

    problems = [PredictionProblem(n, f"q{n}", "id", f"q{n}", "x") for n in range(1, 31)]
    lines = problem_lines(problems, limit=5)
    assert len(lines) == 6 and lines[-1] == "... and 25 more malformed prediction(s)"
