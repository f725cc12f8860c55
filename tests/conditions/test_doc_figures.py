"""The question counts docs/suites/conditions.md quotes for the built-in set (seed 0) are what
the session's compile of every dataset gives now (issue 51)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

PAGE = Path(__file__).resolve().parents[2] / "docs" / "suites" / "conditions.md"


def test_the_quoted_question_counts_are_a_fresh_compile(compiled_all: Any) -> None:
    text = " ".join(PAGE.read_text(encoding="utf-8").split())  # prose is re-wrapped
    said = re.search(
        r"On the built-in set \(seed 0\) this leaves ([\d,]+) questions: ([\d,]+) base questions "
        r"below the yield floor, ([\d,]+) within noise, ([\d,]+) over 20 per option set, "
        r"([\d,]+) over the answer cap, ([\d,]+) precedent twins withheld",
        text,
    )
    assert said, "docs/suites/conditions.md lost its question counts"
    skipped = compiled_all.skipped
    assert tuple(int(g.replace(",", "")) for g in said.groups()) == (
        len(compiled_all.questions),
        skipped["below_yield_floor"],
        skipped["within_noise"],
        skipped["option_set_repeats"],
        skipped["answer_share_cap"],
        skipped["precedents_leak_by_exclusion"],
    )
