"""Prompts and answer parsing; the firewall between question meta and what an agent sees."""

from __future__ import annotations

import json
from typing import Any

import pytest

from labreplay.suites.conditions.prompts import normalise_answer, parse_answer, render_prompt
from labreplay.suites.conditions.questions import agent_view
from labreplay.suites.conditions.scoring import answer_key, score_answer

CANARY = "CANARY-7f3a-never-shown"


def _pick(compiled: Any, qtype: str, variant: str = "no_precedents") -> dict[str, Any]:
    return next(
        q
        for q in compiled.questions
        if q["question_type"] == qtype and q["meta"]["variant"] == variant
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Answer: 2", 1),
        ("I pick option (3).", 2),
        ("answer = 1", 0),
        ("...\n2\n", 1),
        ("Answer: 99", None),
        ("no idea", None),
        ("", None),
    ],
)
def test_mc_parsing(compiled_all: Any, text: str, expected: int | None) -> None:
    view = agent_view(_pick(compiled_all, "mc_all"))
    parsed = parse_answer(text, view)
    if expected is None:
        assert "invalid" in parsed
    else:
        assert parsed == {"option": expected}


def test_mc_parsing_by_name(compiled_all: Any) -> None:
    q = _pick(compiled_all, "mc_single")
    view = agent_view(q)
    key = q["varying_keys"][0]
    name = view["options"][1][key][0]["content"]
    others = [o[key][0]["content"] for i, o in enumerate(view["options"]) if i != 1]
    if any(name.lower() in o.lower() for o in others):
        pytest.skip("option names overlap")
    assert parse_answer(f"The best is {name}.", view) == {"option": 1}


def test_fib_parsing_and_invalid_answers_score_zero(compiled_all: Any) -> None:
    def worded(cands: list[Any]) -> bool:  # a candidate named "35" reads as a number
        return all(not c[0]["content"].replace(".", "").isdigit() for c in cands)

    q = _pick(compiled_all, "fib_all")
    view = agent_view(q)
    keys = q["varying_keys"]
    reply = "Reasoning...\n" + json.dumps({k: 1 for k in keys})
    assert parse_answer(reply, view) == {"choices": {k: 0 for k in keys}}
    lines = "\n".join(f"{k}: 1" for k in keys)
    assert parse_answer(lines, view) == {"choices": {k: 0 for k in keys}}
    named = {k: view["candidates"][k][0][0]["content"] for k in keys}
    named = {k: v if worded(view["candidates"][k]) else 1 for k, v in named.items()}
    assert parse_answer(json.dumps(named), view) == {"choices": {k: 0 for k in keys}}
    bad = parse_answer(json.dumps({keys[0]: 999}), view)
    assert "invalid" in bad
    result = score_answer(answer_key(q), bad)
    assert result["valid"] is False and result["hit"] == 0 and result["strict"] == 0
    mc = _pick(compiled_all, "mc_all")
    r = score_answer(answer_key(mc), normalise_answer({"text": "???"}, agent_view(mc)))
    assert r["correct"] == 0 and r["score"] == 0.0


def test_prompt_lists_everything_needed_and_no_private_field(compiled_all: Any) -> None:
    for qtype in ("mc_single", "mc_all", "fib_all"):
        for variant in ("no_precedents", "with_precedents"):
            q = json.loads(json.dumps(_pick(compiled_all, qtype, variant)))
            q["meta"]["scores"][0]["yield"] = CANARY  # plant evaluator-private canaries
            q["meta"]["doi"] = CANARY
            q["meta"]["option_source_entries"][0]["rxn_id"] = CANARY
            view = agent_view(q)
            prompt = render_prompt(view)
            assert CANARY not in json.dumps(view) and CANARY not in prompt
            assert "answer" not in view and "meta" not in view
            if qtype == "fib_all":
                assert "options" not in view  # the observed-row set would leak Hits
                for k in q["varying_keys"]:
                    assert k in prompt
            else:
                assert f"({len(q['options'])})" in prompt
            assert ("Earlier results" in prompt) == (variant == "with_precedents")
