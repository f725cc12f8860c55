"""The official RxnOptBench JSONL layout: a fixture built to the documented layout loads and
scores; our files round-trip; bad records fail with file/record/field/value."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from labreplay.errors import DataError
from labreplay.suites.conditions.questions import load_questions, write_questions
from labreplay.suites.conditions.scoring import answer_key, random_floor, score_answer


def _c(name: str, smiles: str = "") -> list[dict[str, str]]:
    return [{"content": name, "SMILES": smiles}]


def official_record(
    qid: str = "10_x_table_0_q2", qtype: str = "multiple_choice_single_varying"
) -> dict[str, Any]:
    """One record in the release layout (values from the paper's worked MC_single example)."""
    ligands = [("Dpephos", 96.0), ("BINAP", 35.0), ("DPPF", 21.0), ("PPh3", 0.0)]
    return {
        "id": qid,
        "question_type": qtype,
        "varying_keys": ["ligand"],
        "input": {
            "reactants": _c("1,2-dihydropyridine carbamate"),
            "products": _c("3,4-adduct"),
            "constant_conditions": {
                "catalyst": _c("[Pd(allyl)Cl]2"),
                "solvents": _c("PhCF3"),
                "reaction_temperature": _c("50 °C"),
            },
        },
        "options": [{"ligand": _c(n)} for n, _ in ligands],
        "answer": [0],
        "meta": {
            "doi": "10.1021/acs.orglett.4c04736",
            "parent_table_id": "t0",
            "source_file": "x.pdf",
            "main_product_smiles": "",
            "total_entries_in_source_table": 4,
            "scores": [
                {"yield": y, "ee": None, "dr": None, "er": None, "rr": None} for _, y in ligands
            ],
            "yields": [y for _, y in ligands],
            "effective_scores": [y / 100 for _, y in ligands],
            "option_relative_scores": [y / 96 for _, y in ligands],
            "option_source_entries": [
                {"row_index": i, "entry_idx": i, "rxn_id": f"r{i}"} for i in range(4)
            ],
        },
    }


def official_fib() -> dict[str, Any]:
    rows = [
        ("35 °C", "24 h", "DMSO", 80.0),
        ("25 °C", "24 h", "DMSO", 50.0),
        ("35 °C", "12 h", "DMF", 40.0),
        ("25 °C", "12 h", "DMF", 10.0),
    ]
    return {
        "id": "fib_example",
        "question_type": "fill_in_blank_all_blank",
        "varying_keys": ["reaction_temperature", "reaction_time", "solvents"],
        "input": {"reactants": _c("A"), "products": _c("B"), "constant_conditions": {}},
        "options": [
            {"reaction_temperature": _c(t), "reaction_time": _c(h), "solvents": _c(s)}
            for t, h, s, _ in rows
        ],
        "answer": [0],
        "meta": {
            "scores": [
                {"yield": y, "ee": None, "dr": "10:1" if y == 50.0 else None} for *_, y in rows
            ]
        },
    }


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_official_layout_loads_and_scores(tmp_path: Path) -> None:
    qs = load_questions(_write(tmp_path / "official.jsonl", [official_record(), official_fib()]))
    mc, fib = qs
    assert mc["question_type"] == "mc_single" and fib["question_type"] == "fib_all"
    key = answer_key(mc)
    assert score_answer(key, {"option": 1})["score"] == pytest.approx(35 / 96)
    assert random_floor(key)["score"] == pytest.approx((96 + 35 + 21 + 0) / 96 / 4)
    fkey = answer_key(fib)
    # candidates were derived from the observed rows: 2 x 2 x 2 = 8 tuples, 4 observed
    assert random_floor(fkey)["hit"] == pytest.approx(4 / 8)
    cands = fib["candidates"]
    pick = {
        k: [c[0]["content"] for c in cands[k]].index(v)
        for k, v in (
            ("reaction_temperature", "35 °C"),
            ("reaction_time", "24 h"),
            ("solvents", "DMSO"),
        )
    }
    assert score_answer(fkey, {"choices": pick})["strict"] == 1
    unobserved = {**pick, "solvents": [c[0]["content"] for c in cands["solvents"]].index("DMF")}
    result = score_answer(fkey, {"choices": unobserved})
    assert result["hit"] == 0 and result["score"] is None
    # dr 10:1 enters the utility: 50% x 10/11
    assert fkey.rel[1] == pytest.approx(0.5 * 10 / 11 / 0.8)


def test_our_files_round_trip(compiled_all: Any, tmp_path: Path) -> None:
    subset = compiled_all.questions[:300]
    path = tmp_path / "ours.jsonl"
    write_questions(path, subset)
    loaded = load_questions(path)
    for q in loaded:  # the official name the file used is remembered, the rest is identical
        assert q.pop("question_type_official") in {"single_varying", "all_varying", "all_blank"}
    assert loaded == json.loads(json.dumps(subset))
    write_questions(tmp_path / "again.jsonl", loaded)
    assert (tmp_path / "again.jsonl").read_bytes() == path.read_bytes()


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda r: r.pop("id"), "id"),
        (lambda r: r.update(question_type="essay"), "question_type"),
        (lambda r: r.update(answer=[7]), "answer"),
        (lambda r: r["options"][1].update(solvent=_c("x")), "options[1]"),
        (lambda r: r["meta"].update(scores=[]), "meta.scores"),
    ],
)
def test_bad_records_name_file_record_field(tmp_path: Path, mutate: Any, field: str) -> None:
    record = official_record()
    mutate(record)
    path = _write(tmp_path / "bad.jsonl", [official_record("ok"), record])
    with pytest.raises(DataError) as err:
        load_questions(path)
    message = str(err.value)
    assert str(path) in message and "line 2" in message and repr(field) in message


def test_truncated_file_is_a_data_error(tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl"
    path.write_text(json.dumps(official_record())[:100], encoding="utf-8")
    with pytest.raises(DataError, match="invalid JSON"):
        load_questions(path)


def test_official_answer_effective_scores_and_candidates_are_kept(tmp_path: Path) -> None:
    mc = official_record()
    mc["meta"]["scores"][0]["yield"] = "96b"  # a footnoted cell: the file's numbers still rule
    fib = official_fib()
    fib["candidates"] = {
        "reaction_temperature": [_c("35 °C"), _c("25 °C")],
        "reaction_time": [_c("24 h"), _c("12 h")],
        "solvents": [_c("DMSO"), _c("DMF")],
    }
    path = _write(tmp_path / "official.jsonl", [mc, fib])
    loaded_mc, loaded_fib = load_questions(path)
    key = answer_key(loaded_mc)
    assert key.answer == frozenset({0})
    assert score_answer(key, {"option": 0}) | {"correct": 1, "score": 1.0} == score_answer(
        key, {"option": 0}
    )
    assert key.rel[1] == pytest.approx(35 / 96)
    labels = [c[0]["content"] for c in loaded_fib["candidates"]["reaction_temperature"]]
    assert labels == ["35 °C", "25 °C"]  # the file's order, not alphabetical
    fkey = answer_key(loaded_fib)
    assert score_answer(fkey, {"choices": dict.fromkeys(fkey.keys, 0)})["strict"] == 1
    # without candidates in the file they are derived in first-seen order
    derived = load_questions(_write(tmp_path / "d.jsonl", [official_fib()]))[0]["candidates"]
    assert [c[0]["content"] for c in derived["reaction_temperature"]] == ["35 °C", "25 °C"]
    # the file's own type names survive a round trip; our own records get the official names
    write_questions(tmp_path / "again.jsonl", [loaded_mc, loaded_fib])
    types = [json.loads(line)["question_type"] for line in (tmp_path / "again.jsonl").open()]
    assert types == ["multiple_choice_single_varying", "fill_in_blank_all_blank"]
    ours = {k: v for k, v in loaded_mc.items() if k != "question_type_official"}
    write_questions(tmp_path / "ours.jsonl", [ours])
    assert json.loads((tmp_path / "ours.jsonl").read_text())["question_type"] == "single_varying"
