"""Small, dependency-free formula handling for reading refinement phase names.

Refinement phases are named like "Al(HO)3_14_(icsd_184003)-17": the formula is the part before
the first underscore. Two formulas are compared by their reduced element fractions, so
"Al(HO)3" matches the precursor "Al(OH)3".
"""

from __future__ import annotations

import re
from functools import cache

_TOKEN = re.compile(r"([A-Z][a-z]?|\(|\)|\[|\]|\d+(?:\.\d+)?|·|\*)")


@cache
def parse_formula(formula: str) -> dict[str, float]:
    """Element -> amount; raises ValueError on text that is not a formula."""
    stack: list[dict[str, float]] = [{}]
    tokens = _TOKEN.findall(formula.replace(" ", ""))
    if "".join(tokens) != formula.replace(" ", ""):
        raise ValueError(f"not a chemical formula: {formula!r}")
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok in "([":
            stack.append({})
        elif tok in ")]":
            group = stack.pop()
            mult = 1.0
            if i + 1 < len(tokens) and tokens[i + 1][0].isdigit():
                mult = float(tokens[i + 1])
                i += 1
            for el, n in group.items():
                stack[-1][el] = stack[-1].get(el, 0.0) + n * mult
        elif tok[0].isalpha():
            n = 1.0
            if i + 1 < len(tokens) and tokens[i + 1][0].isdigit():
                n = float(tokens[i + 1])
                i += 1
            stack[-1][tok] = stack[-1].get(tok, 0.0) + n
        i += 1
    if len(stack) != 1 or not stack[0]:
        raise ValueError(f"not a chemical formula: {formula!r}")
    return stack[0]


@cache
def reduced(formula: str) -> tuple[tuple[str, float], ...] | None:
    try:
        amounts = parse_formula(formula)
    except ValueError:
        return None
    total = sum(amounts.values())
    return tuple(sorted((el, round(n / total, 3)) for el, n in amounts.items()))


def phase_formula(phase_name: str) -> str:
    return phase_name.split("_", 1)[0]


def elements(formula: str) -> set[str]:
    try:
        return set(parse_formula(formula))
    except ValueError:
        return set()


def close_compound(a: str, b: str, tol: float = 0.03) -> bool:
    """Same elements with every atomic fraction within `tol` (tolerates refined
    non-stoichiometry such as Ge2.6823O6 for GeO2)."""
    ra, rb = reduced(a), reduced(b)
    if ra is None or rb is None:
        return False
    da, db = dict(ra), dict(rb)
    return da.keys() == db.keys() and all(abs(da[k] - db[k]) <= tol for k in da)
