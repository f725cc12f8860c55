"""Outcome cells -> numbers, the signed selectivity convention and the objective (METRICS.md).

Yields (and the conversion / selectivity fractions used as a yield basis) become fractions
clipped at 0: a negative reading is instrument noise, set to 0 and counted. A reading above
100% or an |ee| above 100% is a QC problem the caller turns into an error unless the table is
declared ``allow_out_of_range`` (then it is clipped and flagged). Selectivity is signed towards
the desired product: ee of the desired enantiomer (negative when the other one dominates);
er/dr/rr ``a:b`` with a the desired isomer; ΔΔG‡ (kcal/mol) -> ee = tanh(ΔΔG‡ / 2RT).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

OUTCOME_FIELDS = ("yield", "ee", "er", "dr", "rr", "ddg", "conversion", "selectivity")
OBJECTIVES = ("utility", "yield", "selectivity")
GAS_CONSTANT_KCAL = 1.987204e-3  # kcal / (mol K)
FRACTION_FIELDS = ("yield", "conversion", "selectivity")
RATIO_FIELDS = ("er", "dr", "rr")


@dataclass
class ParsedValue:
    value: float | None
    flag: str | None = None  # why the cell is not a plain number (censored, trace, missing...)
    percent: bool = False  # the cell carried its own % sign


_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")
_RATIO = re.compile(r"^\s*(>|≥|>=)?\s*(\d+(?:\.\d+)?)\s*[:/]\s*(\d+(?:\.\d+)?)\s*$")
_ZERO_WORDS = {"trace", "traces", "nd", "n.d.", "n.d", "nr", "n.r.", "none", "0%"}
_BOUNDS = {"≥", ">=", ">", "≤", "<=", "<", "~", "ca.", "≈"}


def parse_amount(raw: object) -> ParsedValue:
    """A numeric cell, possibly censored. Declared choices: a bound (``≥90%``, ``<5``, ``>99``)
    takes the bound's value; ``trace`` / ``n.d.`` count as 0. Each such cell carries a flag."""
    if raw is None or (isinstance(raw, float) and math.isnan(raw)):
        return ParsedValue(None, "missing")
    if isinstance(raw, bool):
        return ParsedValue(None, f"not a number: {raw!r}")
    if isinstance(raw, int | float):
        return ParsedValue(float(raw))
    text = str(raw).strip().lower().replace(",", ".").replace("−", "-")
    if not text:
        return ParsedValue(None, "missing")
    if text in _ZERO_WORDS:
        return ParsedValue(0.0, f"reported as {raw!r}, counted as 0")
    match = _NUMBER.search(text)
    if match is None:
        return ParsedValue(None, f"not a number: {raw!r}")
    number = float(match.group(0))
    prefix = text[: match.start()].strip()
    suffix = text[match.end() :].strip()
    if suffix not in {"", "%"}:
        return ParsedValue(None, f"not a number: {raw!r}")
    if prefix in _BOUNDS:
        return ParsedValue(number, f"censored {raw!r}, counted as its bound", suffix == "%")
    if prefix:
        return ParsedValue(None, f"not a number: {raw!r}")
    return ParsedValue(number, None, suffix == "%")


def parse_ratio(raw: object) -> tuple[float, float] | str | None:
    """``95:5`` -> (95, 5); ``>20:1`` -> (20, 1) (bound); None when absent; a str when unreadable.
    The first number is the desired isomer, as recorded (METRICS.md)."""
    if raw is None or (isinstance(raw, float) and math.isnan(raw)) or str(raw).strip() == "":
        return None
    match = _RATIO.match(str(raw))
    if match is None:
        return f"unreadable ratio {raw!r}"
    desired, other = float(match.group(2)), float(match.group(3))
    if desired + other <= 0:
        return f"ratio with zero total {raw!r}"
    return (desired, other)


def ee_from_ddg(ddg_kcal: float, temperature_k: float) -> float:
    """ee (%) of the favoured-as-desired enantiomer from ΔΔG‡ (kcal/mol) at T (K)."""
    return 100.0 * math.tanh(ddg_kcal / (2.0 * GAS_CONSTANT_KCAL * temperature_k))


def has_selectivity(outcome: Mapping[str, object]) -> bool:
    return isinstance(outcome.get("ee"), int | float) or any(
        isinstance(outcome.get(n), list | tuple) for n in RATIO_FIELDS
    )


def selectivity_factor(outcome: Mapping[str, object]) -> float:
    """METRICS.md: ee (%) -> (1 + ee/100)/2; er, dr, rr a:b -> a/(a+b); unreported -> 1."""
    factor = 1.0
    ee = outcome.get("ee")
    if isinstance(ee, int | float):
        factor *= (1.0 + float(ee) / 100.0) / 2.0
    for name in RATIO_FIELDS:
        ratio = outcome.get(name)
        if isinstance(ratio, list | tuple) and len(ratio) == 2:
            desired, other = float(ratio[0]), float(ratio[1])
            factor *= desired / (desired + other)
    return factor


def utility(outcome: Mapping[str, object], objective: str = "utility") -> float | None:
    """The objective of one row: ``utility`` = y * f_sel, ``yield`` = y, ``selectivity`` = f_sel.
    None when the row lacks what the objective needs."""
    if objective == "selectivity":
        return selectivity_factor(outcome) if has_selectivity(outcome) else None
    y = outcome.get("yield")
    if not isinstance(y, int | float):
        return None
    return float(y) if objective == "yield" else float(y) * selectivity_factor(outcome)


@dataclass
class ParsedOutcome:
    """One row's outcome plus what QC needs to know about it."""

    outcome: dict[str, Any]  # fractions for yield-like fields, ee in %, ratios [a, b]
    flags: list[str] = field(default_factory=list)
    scale_samples: list[tuple[str, float]] = field(default_factory=list)  # unscaled, no own %
    clipped_negative: int = 0
    out_of_range: list[str] = field(default_factory=list)  # problems, not yet decided


def parse_outcome(
    cells: Mapping[str, object],
    *,
    yield_scale: str,
    yield_basis: str = "yield",
    temperature_k: float | None = None,
    unbounded: tuple[str, ...] = (),
) -> ParsedOutcome:
    """Parse one row's outcome cells. Negative yield-like values are clipped to 0 here; values
    above 100% and |ee| > 100 are reported in ``out_of_range`` and clipped (the caller refuses
    them unless the table allows them). Fields in `unbounded` (a declared ratio response) are
    read as recorded: no scale, no upper bound."""
    parsed = ParsedOutcome({})
    out = parsed.outcome
    scale = 100.0 if yield_scale == "percent" else 1.0
    for name in (*FRACTION_FIELDS, "ee", "ddg"):
        if name not in cells:
            continue
        cell = parse_amount(cells[name])
        if cell.flag and not (cell.flag == "missing" and name in {"ee", "selectivity", "ddg"}):
            parsed.flags.append(f"{name}: {cell.flag}")
        if cell.value is None:
            continue
        value = cell.value
        if name in unbounded:  # a relative response: only a negative reading is impossible
            if value < 0:
                parsed.flags.append(f"{name}: {cells[name]!r} below 0, clipped to 0")
                parsed.clipped_negative += 1
                value = 0.0
        elif name in FRACTION_FIELDS:
            if not cell.percent:
                parsed.scale_samples.append((name, value))
            # a cell with its own % sign is a percent whatever the column's declared scale
            value = value / (100.0 if cell.percent else scale)
            if value < 0:
                parsed.flags.append(f"{name}: {cells[name]!r} below 0, clipped to 0")
                parsed.clipped_negative += 1
                value = 0.0
            elif value > 1.0 + 1e-9:
                parsed.out_of_range.append(f"{name} {cells[name]!r} is above 100%")
                parsed.flags.append(f"{name}: {cells[name]!r} above 100%, clipped to 100%")
                value = 1.0
        elif name == "ee" and abs(value) > 100.0:
            parsed.out_of_range.append(f"ee {cells[name]!r} is beyond ±100%")
            parsed.flags.append(f"ee: {cells[name]!r} beyond ±100%, clipped")
            value = math.copysign(100.0, value)
        out[name] = value
    if "ddg" in out:
        if temperature_k is None:
            raise ValueError("a ΔΔG‡ outcome needs a temperature")
        out["ee"] = ee_from_ddg(out["ddg"], temperature_k)
    for name in RATIO_FIELDS:
        if name in cells:
            ratio = parse_ratio(cells[name])
            if isinstance(ratio, str):
                parsed.flags.append(f"{name}: {ratio}")
            elif ratio is not None:
                out[name] = [ratio[0], ratio[1]]
    # The utility's yield: a declared basis when the source reports no yield column.
    if yield_basis == "conversion" and "conversion" in out:
        out["yield"] = out["conversion"]
    elif yield_basis == "conversion_x_selectivity" and "conversion" in out:
        sel = out.get("selectivity")
        if sel is None:
            parsed.flags.append("selectivity missing: neutral factor 1")
            sel = 1.0
        out["yield"] = out["conversion"] * sel
    return parsed


def scale_mismatch(samples: list[float], declared: str) -> str | None:
    """Why a yield-like column's raw values contradict its declared scale, or None.
    Fraction declared but values above 1.5: they are percents. Percent declared but every value
    within [0, 1] with some strictly fractional: they are fractions."""
    if not samples:
        return None
    low, high = min(samples), max(samples)
    if declared == "fraction" and high > 1.5:
        return f"declared fraction but values range {low:g}..{high:g} (percent-like)"
    if (
        declared == "percent"
        and len(samples) >= 3
        and high <= 1.0
        and any(0.0 < v < 1.0 and v != round(v) for v in samples)
    ):
        return f"declared percent but values range {low:g}..{high:g} (fraction-like)"
    return None
