"""Files defended in depth: a hostile question, predictions or data file is one line naming the
file, record, field and value, exit 2, and nothing is created (no store, no run left running)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from tests.reliability.conftest import assert_one_line_error
from tests.reliability.conftest import run_cli_in_process as run_cli


def _question(qid: str, effective: list[Any], table: str | None = "t1") -> dict[str, Any]:
    meta: dict[str, Any] = {"dataset": "ds", "effective_scores": effective}
    if table is not None:
        meta["parent_table_id"] = table
    return {
        "id": qid,
        "question_type": "single_varying",
        "varying_keys": ["ligand"],
        "input": {"reactants": [], "products": [], "constant_conditions": {}},
        "options": [{"ligand": [{"content": f"L{j}", "SMILES": ""}]} for j in range(3)],
        "answer": [0],
        "meta": meta,
    }


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


GOOD = json.dumps(_question("q1", [0.9, 0.5, 0.1]))

# name -> (second line of the question file, what the error must name)
HOSTILE = {
    "deep": ("[" * 100_000 + "]" * 100_000, "nested deeper"),
    "nan": (json.dumps(_question("q2", [math.nan, 0.2, 0.1], "t2")), "NaN"),
    "infinity": (json.dumps(_question("q2", [math.inf, 0.2, 0.1], "t2")), "Infinity"),
    "string_score": (json.dumps(_question("q2", ["high", 0.2, 0.1], "t2")), "'high'"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_question_line_is_a_data_error_naming_it(tmp_path: Path, case: str) -> None:
    """Was: RecursionError, a NaN/inf mean, or the ranker's float('high') -- tracebacks."""
    from labreplay.errors import DataError
    from labreplay.suites.conditions.questions import load_questions

    line, named = HOSTILE[case]
    questions = _write(tmp_path / "q.jsonl", [GOOD, line])
    with pytest.raises(DataError) as refused:
        load_questions(questions)
    message = str(refused.value)
    assert str(questions) in message and "line 2" in message and named in message


def test_conditions_run_refuses_a_nan_score_before_any_store(tmp_path: Path) -> None:
    questions = _write(tmp_path / "q.jsonl", [GOOD, HOSTILE["nan"][0]])
    store = tmp_path / "s.db"
    proc = run_cli(
        "conditions", "run", "--questions", str(questions), "--agent", "ranker",
        "--store", str(store),
    )  # fmt: skip
    message = assert_one_line_error(proc)
    assert str(questions) in message and "line 2" in message and "NaN" in message
    assert not store.exists()  # refused before any store or run exists (none left `running`)


def test_conditions_score_refuses_a_nan_score_and_json_is_strict(tmp_path: Path) -> None:
    preds = _write(
        tmp_path / "p.jsonl",
        ['{"id":"q1","answer":{"option":0}}', '{"id":"q2","answer":{"option":0}}'],
    )
    nan_file = _write(tmp_path / "nan.jsonl", [GOOD, HOSTILE["nan"][0]])
    argv = ["conditions", "score", "--predictions", str(preds), "--json", "--questions"]
    message = assert_one_line_error(run_cli(*argv, str(nan_file)))
    assert "NaN" in message and "line 2" in message
    good = _write(tmp_path / "good.jsonl", [GOOD, json.dumps(_question("q2", [0.8, 0.2, 0.1]))])
    proc = run_cli(*argv, str(good))
    assert proc.returncode == 0, proc.stderr
    json.loads(proc.stdout, parse_constant=lambda name: pytest.fail(f"{name} in --json"))


def test_a_question_without_parent_table_id_is_its_own_table(tmp_path: Path) -> None:
    """An official record need not name its table: the ranker treats it as its own table."""
    questions = _write(
        tmp_path / "q.jsonl",
        [json.dumps(_question(q, [0.9, 0.5, 0.1], table=None)) for q in ("q1", "q2")],
    )
    proc = run_cli(
        "conditions", "run", "--questions", str(questions), "--agent", "ranker",
        "--store", str(tmp_path / "s.db"), "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["mc_single_accuracy"] == 1


def test_configsearch_dataset_corrupt_gzip_is_one_line_naming_the_file(tmp_path: Path) -> None:
    """Was: zlib.error, a traceback."""
    import gzip

    body = bytearray(gzip.compress(b'{"id": "a", "cif": "x", "t": 1}\n' * 50))
    for i in range(12, 30):  # the header stays valid, the deflate stream does not
        body[i] ^= 0xFF
    dataset = tmp_path / "bad.jsonl.gz"
    dataset.write_bytes(bytes(body))
    proc = run_cli(
        "configsearch", "run", "--dataset", str(dataset), "--target", "t",
        "--store", str(tmp_path / "s.db"),
    )  # fmt: skip
    message = assert_one_line_error(proc)
    assert str(dataset) in message and "decompress" in message


def test_user_json_readers_are_strict(tmp_path: Path) -> None:
    """Specs, index.json, predictions and datasets: deep nesting and NaN are refused in one
    line naming the file (was: RecursionError, or NaN read as a number)."""
    from labreplay.compile.spec import load_spec
    from labreplay.errors import DataError, SpecError
    from labreplay.suites.campaign.api import load_specs
    from labreplay.suites.conditions.evaluate import check_predictions
    from labreplay.suites.configsearch.dataset import read_dataset

    deep = "[" * 100_000 + "]" * 100_000
    spec = tmp_path / "spec.json"
    spec.write_text(deep, encoding="utf-8")
    with pytest.raises(SpecError, match="nested deeper"):
        load_spec(spec)
    (tmp_path / "index.json").write_text('{"assignments": NaN}', encoding="utf-8")
    with pytest.raises(SpecError, match=r"index\.json.*NaN"):
        load_specs(tmp_path)
    preds = _write(tmp_path / "p.jsonl", ['{"id": "q1", "answer": {"option": NaN}}'])
    (problem,) = check_predictions(preds, {}).problems
    assert problem.describe().startswith("line 1,") and "NaN" in problem.describe()
    dataset = _write(tmp_path / "d.jsonl", [deep])
    with pytest.raises(DataError, match=r"d\.jsonl.*line 1.*nested deeper"):
        read_dataset(dataset, "t", "mine", "mp")


def test_conditions_compile_checks_data_files_against_the_manifest(
    tmp_path: Path, data_env: None
) -> None:
    """Was: a data copy with one yield edited compiled with no UNVERIFIED mark (campaign
    refuses such data)."""
    import os

    rel = Path("reactions/buchwald_hartwig_ahneman2018/rxnpredict_data_table.csv")
    real = Path(os.environ["LABREPLAY_DATA_DIR"]) / rel
    lines = real.read_text(encoding="utf-8").split("\n")
    head, _, _ = lines[1].rpartition(",")
    lines[1] = head + ",99.5"  # one yield edited
    copy = tmp_path / "data"
    (copy / rel).parent.mkdir(parents=True)
    (copy / rel).write_text("\n".join(lines), encoding="utf-8")
    out = tmp_path / "q.jsonl"
    argv = ["conditions", "compile", "--dataset", "buchwald_hartwig", "--data-dir", str(copy)]
    message = assert_one_line_error(run_cli(*argv, "--out", str(out)))
    assert rel.as_posix() in message and "sha256 differs" in message
    assert not out.exists()
    proc = run_cli(*argv, "--out", str(out), "--allow-modified-data", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["unverified_data"] == [rel.as_posix()]
    spec = json.loads(Path(str(out) + ".spec.json").read_text(encoding="utf-8"))
    assert spec["spec"]["unverified_data"] == [rel.as_posix()]


def test_conditions_board_marks_runs_on_questions_from_modified_data(
    tmp_path: Path, data_env: None
) -> None:
    """Was: questions compiled with --allow-modified-data ranked on the conditions leaderboard
    with no mark (only the compile spec carried `unverified_data`)."""
    import os

    rel = Path("reactions/buchwald_hartwig_ahneman2018/rxnpredict_data_table.csv")
    lines = (Path(os.environ["LABREPLAY_DATA_DIR"]) / rel).read_text(encoding="utf-8").split("\n")
    head, _, _ = lines[1].rpartition(",")
    lines[1] = head + ",99.5"  # one yield edited
    copy = tmp_path / "data"
    (copy / rel).parent.mkdir(parents=True)
    (copy / rel).write_text("\n".join(lines), encoding="utf-8")
    marked = tmp_path / "marked.jsonl"
    argv = ["conditions", "compile", "--dataset", "buchwald_hartwig", "--data-dir", str(copy)]
    proc = run_cli(*argv, "--out", str(marked), "--allow-modified-data")
    assert proc.returncode == 0, proc.stderr
    # the same questions without the mark: a run on them must stay unmarked
    plain = tmp_path / "plain.jsonl"
    records = [json.loads(line) for line in marked.read_text(encoding="utf-8").splitlines()]
    assert all(q["meta"]["unverified_data"] == [rel.as_posix()] for q in records)
    for q in records:
        del q["meta"]["unverified_data"]
    plain.write_text("".join(json.dumps(q) + "\n" for q in records), encoding="utf-8")
    store = tmp_path / "c.sqlite"
    for questions in (marked, plain):
        run = ["conditions", "run", "--questions", str(questions), "--agent", "random"]
        proc = run_cli(*run, "--store", str(store))
        assert proc.returncode == 0, proc.stderr
    proc = run_cli("conditions", "leaderboard", "--store", str(store), "--json")
    assert proc.returncode == 0, proc.stderr
    board = json.loads(proc.stdout)
    by_flag = {bool(r.get("unverified_data")): r for r in board["runs"]}
    assert set(by_flag) == {True, False}, board["runs"]
    assert by_flag[True]["unverified_data"] == [rel.as_posix()]
    assert board["unverified_data"] == [by_flag[True]["question_file"]]
    text = run_cli("conditions", "leaderboard", "--store", str(store)).stdout
    assert "UNVERIFIED DATA: 1 question file(s)" in text and "UNVERIFIED" in text
    assert by_flag[True]["question_file"] in text.split("UNVERIFIED DATA:")[1]
