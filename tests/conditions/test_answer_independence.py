"""Issue 36: no dataset has one answer correct in more than 40% of its multiple-choice questions
(MC_single and MC_all pooled), an option set is asked at most 20 times per dataset and type,
and a user's ratio response is declared with --response ratio."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from labreplay.cli import main as cli_main
from labreplay.suites.conditions.compiler import QUESTION_RULES
from labreplay.suites.conditions.independence import (
    MAX_ANSWER_SHARE,
    MAX_PER_OPTION_SET,
    MC_TYPES,
    POOLED,
    Withheld,
    answer_of,
    answer_shares,
    cap_answer_share,
    dedupe_option_sets,
)
from labreplay.suites.conditions.questions import load_questions, value_label
from labreplay.suites.conditions.scoring import answer_key

runner = CliRunner()


def _base_mc(questions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        q
        for q in questions
        if q["question_type"] in MC_TYPES and q["meta"]["variant"] == "no_precedents"
    ]


def test_no_builtin_dataset_has_one_answer_in_over_40_percent_of_its_mc(
    compiled_all: Any,
) -> None:
    by_dataset: dict[str, Counter[str]] = {}
    for q in _base_mc(compiled_all.questions):
        by_dataset.setdefault(q["meta"]["dataset"], Counter())[answer_of(q)] += 1
    assert len(by_dataset) >= 12
    for ds, counts in by_dataset.items():
        n = sum(counts.values())
        assert n >= 5, ds  # no built-in dataset relies on the small-group exemption
        assert counts.most_common(1)[0][1] / n <= MAX_ANSWER_SHARE + 1e-9, (ds, counts)
    pooled = compiled_all.answer_shares["after"]
    assert all(per[POOLED]["top_share"] <= MAX_ANSWER_SHARE + 1e-9 for per in pooled.values())


def _q(qid: str, qtype: str, answer: str, ds: str = "d") -> dict[str, Any]:
    keys = ["ligand"] if qtype == "mc_single" else ["ligand", "base"]
    labels = [answer, "X", "Y"] if answer not in {"X", "Y"} else [answer, "Z", "W"]
    options = [{k: [{"content": f"{v}" if k == "ligand" else "B"}] for k in keys} for v in labels]
    return {
        "id": qid,
        "question_type": qtype,
        "varying_keys": keys,
        "options": options,
        "answer": [0],
        "meta": {"dataset": ds, "variant": "no_precedents", "twin_id": qid},
    }


def test_the_cap_pools_mc_types_per_dataset() -> None:
    # 4 MC_single (exempt alone: under 5) all answered A, 3 MC_all with 3 other answers:
    # pooled, A is correct in 4 of 7 (57%) -> withheld down to the cap
    qs = [_q(f"s{i}", "mc_single", "A") for i in range(4)]
    qs += [_q(f"a{i}", "mc_all", name) for i, name in enumerate(["B", "C", "D"])]
    qs += [{**q, "id": f"{q['id']}_prec", "meta": {**q["meta"], "variant": "with_precedents"}}
           for q in qs[:2]]  # fmt: skip
    log: list[Withheld] = []
    kept, withheld = cap_answer_share(qs, 0, log=log)
    base = [q for q in kept if q["meta"]["variant"] == "no_precedents"]
    counts = Counter(answer_of(q) for q in base)
    assert counts["ligand=A"] / len(base) <= MAX_ANSWER_SHARE
    assert withheld == {"d": 7 - len(base)} and len(base) == 5  # 2 of 7 withheld
    assert [(s["scope"], s["answer"], s["withheld"]) for s in log] == [(POOLED, "ligand=A", 2)]
    kept_ids = {q["id"] for q in kept}
    assert all(q["id"][: -len("_prec")] in kept_ids for q in kept if q["id"].endswith("_prec"))
    shares = answer_shares(qs)["d"]
    assert shares[POOLED]["questions"] == 7 and shares["mc_single"]["top_share"] == 1.0


def test_builtin_option_sets_are_asked_at_most_20_times(compiled_all: Any) -> None:
    per_set = Counter(
        (
            q["meta"]["dataset"],
            q["question_type"],
            frozenset(
                tuple(value_label(opt[k]) for k in q["varying_keys"]) for opt in q["options"]
            ),
        )
        for q in _base_mc(compiled_all.questions)
    )
    assert max(per_set.values()) <= MAX_PER_OPTION_SET == 20
    assert "at most 20 base MC questions" in QUESTION_RULES["option_set_repeats"]  # hashed
    repeats = compiled_all.answer_shares["option_set_repeats"]
    # Buchwald-Hartwig asks its 3 bases, its ligands and its ligand x base grid of > 100 aryl
    # halide x additive tables; cut to 20 each
    assert repeats["buchwald_hartwig"]["sets_cut"] == 3
    assert repeats["buchwald_hartwig"]["withheld"] > 500
    assert compiled_all.skipped["option_set_repeats"] == sum(
        r["withheld"] for r in repeats.values()
    )
    ids = {q["id"] for q in compiled_all.questions}
    for q in compiled_all.questions:  # no twin without its base
        if q["meta"]["variant"] == "with_precedents":
            assert q["meta"]["twin_id"] in ids


def test_option_set_dedupe_is_seeded_and_blind_to_outcomes() -> None:
    qs = [_q(f"t{i}", "mc_single", "A") for i in range(30)]
    qs += [{**q, "id": f"{q['id']}_prec", "meta": {**q["meta"], "variant": "with_precedents"}}
           for q in qs]  # fmt: skip
    kept, withheld, cut = dedupe_option_sets(qs, 0)
    base = [q["id"] for q in kept if q["meta"]["variant"] == "no_precedents"]
    assert len(base) == 20 and len(kept) == 40 and withheld == {"d": 10} and cut == {"d": 1}
    flipped = [{**q, "answer": [2]} for q in qs]  # other winners: the same questions kept
    again, _, _ = dedupe_option_sets(flipped, 0)
    assert [q["id"] for q in again] == [q["id"] for q in kept]
    other, _, _ = dedupe_option_sets(qs, 1)
    assert {q["id"] for q in other} != {q["id"] for q in kept}


def _app():  # type: ignore[no-untyped-def]
    cli_main._add_suite_groups()
    return cli_main.app


@pytest.fixture()
def area_table(tmp_path: Path) -> Path:
    """Peak areas (hundreds to thousands, not yields), 4 substrates x 4 ligands x 3 bases; the
    last substrate's areas (1-7) are all below 5% of the largest (8400)."""
    path = tmp_path / "areas.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["substrate", "ligand", "base", "P/IS area"])
        for s, sub in enumerate(["s1", "s2", "s3", "s4"]):
            for i, lig in enumerate(["L1", "L2", "L3", "L4"]):
                for j, base in enumerate(["B1", "B2", "B3"]):
                    rank = 1 + (i + s) % 4 * 3 + (j + s) % 3  # another winner per substrate
                    area = rank * (400 + 150 * s) if s < 3 else 1 + i + j
                    w.writerow([sub, lig, base, area])
    return path


def test_a_ratio_response_is_declared_and_ranked_as_recorded(
    area_table: Path, tmp_path: Path
) -> None:
    out = tmp_path / "q.jsonl"
    args = ["conditions", "compile", "--table", str(area_table), "--reaction-cols", "substrate",
            "--condition-cols", "ligand,base", "--yield-col", "P/IS area", "--out", str(out)]  # fmt: skip
    refused = subprocess.run(
        [sys.executable, "-m", "labreplay.cli.main", *args], capture_output=True, text=True
    )
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 2 and len(lines) == 1 and "--response ratio" in lines[0]
    assert not out.exists()
    bad = runner.invoke(_app(), [*args, "--response", "area"])
    assert "--response must be yield or ratio" in str(bad.exception)
    ok = runner.invoke(_app(), [*args, "--response", "ratio"])
    assert ok.exit_code == 0, ok.output
    assert "declared a ratio (--response ratio): ranked as recorded" in ok.output
    questions = load_questions(out)
    assert questions
    # no 100% bound and no percent scale: the largest area is ranked as recorded
    assert max(max(q["meta"]["effective_scores"]) for q in questions) == 12 * 700
    assert all(q["input"]["reactants"][0]["content"] != "s4" for q in questions)
    for q in questions:
        # the yield-only audit reads the response relative to the largest, never clipped flat
        assert answer_key(q).rel_yield_only == pytest.approx(answer_key(q).rel)
        assert max(q["meta"]["yields"]) <= 100 and q["meta"]["scores"][0]["response_ratio"] > 1
        for ref in q["input"].get("reference_conditions", []):
            assert ref["outcome"]["yield"] is None and ref["outcome"]["response_ratio"] > 1
    info = json.loads(out.with_name(out.name + ".spec.json").read_text())
    (rule,) = info["spec"]["datasets"].values()
    assert rule["response"] == "ratio"
    (skipped,) = info["skipped_by_dataset"].values()
    assert skipped["below_yield_floor"] > 0  # s4: best area under 5% of the largest
    builtin = runner.invoke(_app(), ["conditions", "compile", "--all", "--response", "ratio",
                                     "--out", str(tmp_path / "b.jsonl")])  # fmt: skip
    assert "--response describes your own table" in str(builtin.exception)
