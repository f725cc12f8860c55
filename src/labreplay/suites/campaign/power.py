"""Power of a campaign board (METRICS.md "Power line", fourth-round decision), normal
approximation, declared.

For paired per-assignment differences with standard deviation `sd` over `n` assignments, a
two-sided test at level alpha = 0.05 has power 1 - beta = 0.80 against a true mean difference d
when d >= (z_{1-alpha/2} + z_{1-beta}) * sd / sqrt(n). Conversely, separating a difference d
needs n >= ((z_{1-alpha/2} + z_{1-beta}) * sd / d)^2 assignments.

Which pairs (`power_pairs`): with two or more ranked systems, every pair of distinct ranked
systems; with one, that system against each reference row (reference agents and the flat
references), and the LARGEST of those SDs is the figure to use (conservative), named. Never a
reference row alone or a system against itself. Pairs differ a lot (a system against the
context-trained model it is built on has a far smaller paired SD than against a dissimilar
one), so the line prints the range over the pairs and names the pairs at both ends; the JSON
lists every pair with its SD.

The board also says how many partition seeds the paper's Claude-GPT gap (`PAPER_GAP`) needs;
with one ranked system, for each reference pair, named (against the context-trained model it
starts from a system needs far fewer than the conservative pair says).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TypedDict

import numpy as np
from scipy.stats import norm

ALPHA = 0.05
POWER = 0.80
# The AUC gap between the paper's two leading LLM agents (Claude vs GPT) on its board.
PAPER_GAP = 0.034


class PowerAt(TypedDict):
    """What one pair's paired SD implies for the board (`power_line`)."""

    pair: list[str]
    sd: float
    min_detectable: float
    assignments_needed: int | None
    seeds_needed: int | None
    paper_gap_assignments: int | None
    paper_gap_seeds: int | None


class PairSD(TypedDict):
    a: str
    b: str
    n: int  # paired assignments
    sd: float | None  # None: fewer than two
    paper_gap_assignments: int | None  # None: no SD, or one without spread
    paper_gap_seeds: int | None


class PaperGapPower(TypedDict):
    difference: float
    assignments_needed: list[int] | None  # [at the smallest SD, at the largest]
    seeds_needed: list[int] | None


class PowerLine(TypedDict):
    """A board table's `power` (`power_line`); the estimates are None where not estimable,
    else [at the smallest SD, at the largest]."""

    alpha: float
    power: float
    method: str
    n_assignments: int
    difference: float
    ranked_systems: int
    assignments_per_seed: int
    pairs: list[PairSD]
    source: str
    sd_range: list[float] | None
    min_detectable: list[float] | None
    assignments_needed: list[int] | None
    seeds_needed: list[int] | None
    smallest_pair: list[str] | None
    largest_pair: list[str] | None
    conservative: PowerAt | None  # the largest SD's figures
    paper_gap: PaperGapPower | None


def _z_sum() -> float:
    return float(norm.ppf(1 - ALPHA / 2) + norm.ppf(POWER))


def power_pairs(
    ranked: Mapping[str, Mapping[str, float]], references: Mapping[str, Mapping[str, float]]
) -> list[tuple[str, str, list[float]]]:
    """The comparisons the power line uses, each as (a, b, paired per-assignment a - b).

    `ranked` and `references`: per system, its AUC per assignment (keyed by spec id). Two or
    more ranked systems: every pair of them; one: that system against each reference row, on
    the assignments both cover; none: no pair (a reference row alone says nothing about the
    systems compared)."""
    systems = sorted(ranked)
    out: list[tuple[str, str, list[float]]] = []
    if len(systems) >= 2:
        for i, a in enumerate(systems):
            for b in systems[i + 1 :]:
                shared = [s for s in ranked[a] if s in ranked[b]]
                out.append((a, b, [ranked[a][s] - ranked[b][s] for s in shared]))
        return out
    for a in systems:
        for b, values in sorted(references.items()):
            if b == a:
                continue
            shared = [s for s in ranked[a] if s in values]
            out.append((a, b, [ranked[a][s] - values[s] for s in shared]))
    return out


def _needed(sd: float, difference: float) -> int | None:
    return math.ceil((_z_sum() * sd / difference) ** 2) if difference > 0 else None


def _seeds(n: int | None, per_seed: int) -> int | None:
    return math.ceil(n / per_seed) if n is not None and per_seed > 0 else None


def power_line(
    pairs: Sequence[tuple[str, str, Sequence[float]]],
    n_assignments: int,
    difference: float,
    assignments_per_seed: int,
    ranked: int,
    paper_gap: float = PAPER_GAP,
) -> PowerLine:
    """`pairs`: (a, b, paired per-assignment AUC differences a - b), chosen by `power_pairs`."""
    z = _z_sum()
    listed: list[PairSD] = []
    usable: list[tuple[float, str, str]] = []
    for a, b, diffs in pairs:
        sd = float(np.std(diffs, ddof=1)) if len(diffs) >= 2 else None
        # Two identical curves have no variance and say nothing about the board's noise.
        spread = sd if sd is not None and sd > 1e-18 else None
        gap = None if spread is None else _needed(spread, paper_gap)
        listed.append(
            {
                "a": a,
                "b": b,
                "n": len(diffs),
                "sd": sd,
                "paper_gap_assignments": gap,
                "paper_gap_seeds": _seeds(gap, assignments_per_seed),
            }
        )
        if spread is not None:
            usable.append((spread, a, b))
    usable.sort()
    line: PowerLine = {
        "alpha": ALPHA,
        "power": POWER,
        "method": "normal approximation on paired per-assignment AUC differences",
        "n_assignments": n_assignments,
        "difference": difference,
        "ranked_systems": ranked,
        "assignments_per_seed": assignments_per_seed,
        "pairs": listed,
        "source": (
            "no ranked system"
            if ranked == 0
            else "one ranked system: its paired SD against each reference row, the largest "
            "used (conservative)"
            if ranked == 1
            else "every pair of distinct ranked systems"
        ),
        "sd_range": None,
        "min_detectable": None,
        "assignments_needed": None,
        "seeds_needed": None,
        "smallest_pair": None,
        "largest_pair": None,
        "conservative": None,
        "paper_gap": None,
    }
    if not usable or n_assignments < 2:
        return line

    def at(sd: float, a: str, b: str) -> PowerAt:
        need = _needed(sd, difference)
        gap = _needed(sd, paper_gap)
        return {
            "pair": [a, b],
            "sd": sd,
            "min_detectable": z * sd / math.sqrt(n_assignments),
            "assignments_needed": need,
            "seeds_needed": _seeds(need, assignments_per_seed),
            "paper_gap_assignments": gap,
            "paper_gap_seeds": _seeds(gap, assignments_per_seed),
        }

    lo, hi = at(*usable[0]), at(*usable[-1])
    line["sd_range"] = [lo["sd"], hi["sd"]]
    line["min_detectable"] = [lo["min_detectable"], hi["min_detectable"]]
    line["assignments_needed"] = _both(lo["assignments_needed"], hi["assignments_needed"])
    line["seeds_needed"] = _both(lo["seeds_needed"], hi["seeds_needed"])
    line["smallest_pair"], line["largest_pair"] = lo["pair"], hi["pair"]
    # The largest SD: the figure to use with one ranked system, the safe end otherwise.
    line["conservative"] = hi
    line["paper_gap"] = {
        "difference": paper_gap,
        "assignments_needed": _both(lo["paper_gap_assignments"], hi["paper_gap_assignments"]),
        "seeds_needed": _both(lo["paper_gap_seeds"], hi["paper_gap_seeds"]),
    }
    return line


def _both(lo: int | None, hi: int | None) -> list[int] | None:
    """[lo, hi] where both ends are estimable."""
    return None if lo is None or hi is None else [lo, hi]


def pairs_text(p: PowerLine) -> str:
    return ", ".join(
        f"{q['a']} vs {q['b']} (SD {q['sd']:.4f})"
        if q["sd"] is not None
        else f"{q['a']} vs {q['b']} (no SD)"
        for q in p["pairs"]
    )


def _range(values: Sequence[object], fmt: str) -> str:
    lo, hi = values
    return (
        fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else f"{fmt.format(lo)}-{fmt.format(hi)}"
    )


def _pair(pair: Sequence[str]) -> str:
    return f"{pair[0]} vs {pair[1]}"


def _gap_for(q: PairSD, conservative: Sequence[str]) -> str:
    """What one pair needs to separate the paper's gap, the pair named."""
    seeds = f" (~{q['paper_gap_seeds']} partition seeds)" if q["paper_gap_seeds"] else ""
    mark = " (conservative)" if [q["a"], q["b"]] == list(conservative) else ""
    return f"{q['paper_gap_assignments']} assignments{seeds} for {q['a']} vs {q['b']}{mark}"


def power_text(p: PowerLine) -> str:
    detectable, c, gap = p["min_detectable"], p["conservative"], p["paper_gap"]
    smallest, largest = p["smallest_pair"], p["largest_pair"]
    # `power_line` sets these together, or none of them
    if detectable is None or c is None or gap is None or smallest is None or largest is None:
        return (
            "power: not estimable (no ranked system, fewer than two assignments or no paired "
            "differences with a spread)"
        )
    head = (
        f"power (normal approx., two-sided {1 - p['alpha']:.0%}, {p['power']:.0%} power; "
        f"{p['source']}: {pairs_text(p)}): with {p['n_assignments']} assignments "
    )
    gap_seeds = gap["seeds_needed"]
    if p["ranked_systems"] == 1:
        return (
            head + f"the smallest separable AUC difference is {c['min_detectable']:.4f} "
            f"(conservative: largest SD, {_pair(c['pair'])}; "
            f"{_range(detectable, '{:.4f}')} over the reference pairs); separating "
            f"{p['difference']:.4f} needs {c['assignments_needed'] or '-'} assignments"
            + (f" (~{c['seeds_needed']} partition seeds)" if c["seeds_needed"] else "")
            + f"; the paper's gap {gap['difference']:.3f} needs "
            + ", ".join(
                _gap_for(q, c["pair"]) for q in p["pairs"] if q["paper_gap_assignments"] is not None
            )
        )
    needed, seeds = p["assignments_needed"], p["seeds_needed"]
    return (
        head + f"the smallest separable AUC difference is {_range(detectable, '{:.4f}')} "
        f"(smallest SD: {_pair(smallest)}; largest: {_pair(largest)}); "
        f"separating {p['difference']:.4f} needs "
        + (_range(needed, "{}") if needed else "-")
        + " assignments"
        + (f" (~{_range(seeds, '{}')} partition seeds)" if seeds else "")
        + f"; the paper's gap {gap['difference']:.3f} needs "
        + (_range(gap["assignments_needed"], "{}") if gap["assignments_needed"] else "-")
        + " assignments"
        + (f" (~{_range(gap_seeds, '{}')} partition seeds)" if gap_seeds else "")
    )
