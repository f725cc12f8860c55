"""The declared rule that cuts one reaction's screening grid into literature-sized tables.

A literature optimisation table varies a few axes around fixed conditions (median 3 axes and 7
rows in RxnOptBench). A high-throughput grid measures every combination, so one question over a
whole grid has hundreds of options. The rule, per reaction group of distinct rows:

* a group of at most ``max_options`` rows is one table (unless ``vary`` is declared);
* otherwise a set V of axes is varied and the other axes are fixed: one table per observed
  combination of the fixed axes (a *context*); a context of fewer than ``min_rows`` rows has
  nothing to compare and is left out (counted with that reason);
* V is ``vary`` when declared (``--vary COL``). By default it is the axis a chemist screens:
  the axis with the most levels among those that some context actually varies, ties broken by
  the role order catalyst/ligand > base > reagent/additive > solvent > temperature/time
  (`chem.role_rank`), then by declared order; further axes join V in that order while every
  context still fits ``max_options`` rows and no row is lost. On rows that no single axis
  varies with the others fixed (a scattered optimisation campaign) V is the axis set putting
  the most rows into tables of ``min_rows``..``max_options`` rows (larger contexts count
  ``max_options``; ties: more axes, then the role order);
* a context larger than ``max_options`` rows is split, not truncated: the levels of its V axis
  with the most levels are shuffled with the recorded seed and partitioned into the fewest
  near-equal parts whose tables fit. Each part is its own table; the context's best level is in
  exactly one part (a share of 1/parts, recorded with every part). Only if even one level per
  part does not fit is a seeded ``max_options``-row subset taken (the rest counted as left out);
* at most ``max_tables`` tables per group are kept, a seeded choice recorded with the seed.

There is no random chunking: sibling tables differ in a fixed axis or hold disjoint level sets
of the split axis, so no row (and no answer) appears in two tables.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Protocol, TypedDict

import numpy as np

from labreplay.sdk import make_rng
from labreplay.suites.conditions.chem import role_rank

MAX_SUBSET_SIZE = 4  # V never varies more axes than this (literature tables: median 3)
OUTSIDE_SMALL = "in a context of fewer than {n} rows"
OUTSIDE_CAP = "in tables left out by the per-reaction table cap"
OUTSIDE_SUBSET = "left out of a context too large to split (seeded subset)"


class HasConditions(Protocol):
    @property
    def conditions(self) -> dict[str, str]: ...

    @property
    def utility(self) -> float: ...


class OptionSubset(TypedDict):
    """Which part of an oversized context a slice is (`_split`)."""

    axis: str
    part: int
    of: int
    holds_context_best: bool | None  # None: a seeded subset, not a split


@dataclass
class Slice:
    rows: list[int]  # indices into the group's rows
    fixed: dict[str, str]  # the fixed axes' values shared by these rows
    subset: OptionSubset | None = None  # when the context was split


@dataclass
class SliceResult:
    slices: list[Slice]
    varied: list[str]
    fixed_keys: list[str]
    note: str
    rows_outside: int = 0  # rows in no table (reasons in outside_reasons)
    tables_capped: int = 0  # usable tables left out by the per-reaction cap
    outside_rows: dict[str, list[int]] = field(default_factory=dict)  # reason -> row indices

    @property
    def outside_reasons(self) -> dict[str, int]:
        return {reason: len(rows) for reason, rows in self.outside_rows.items()}


def _levels(rows: Sequence[HasConditions], key: str) -> int:
    return len({r.conditions[key] for r in rows})


def preference(rows: Sequence[HasConditions], keys: Sequence[str]) -> list[str]:
    """Axes in the order a chemist would vary them: most levels, then role, then declared."""
    return sorted(keys, key=lambda k: (-_levels(rows, k), role_rank(k), list(keys).index(k)))


def _contexts(
    rows: Sequence[HasConditions], fixed: Sequence[str]
) -> list[tuple[tuple[str, ...], list[int]]]:
    found: dict[tuple[str, ...], list[int]] = {}
    for i, r in enumerate(rows):
        found.setdefault(tuple(r.conditions[k] for k in fixed), []).append(i)
    return sorted(found.items())


def _default_axes(
    rows: Sequence[HasConditions],
    varying: list[str],
    max_options: int,
    min_rows: int,
) -> tuple[list[str], str]:
    """The default V: the axis set putting the most rows into tables (a context of at least
    `min_rows` rows counts whole when one axis varies -- it is split into option subsets --
    and at most `max_options` rows otherwise), ties to the set whose leading axis a chemist
    would vary first (`preference`), then to more axes. On a full grid every single axis keeps
    every row, so this is the axis with the most levels, joined by axes that still fit."""
    order = preference(rows, varying)
    best: tuple[tuple[int, int, int, tuple[int, ...]], list[str]] | None = None
    for size in range(1, min(MAX_SUBSET_SIZE, len(varying)) + 1):
        for subset in combinations(varying, size):
            fixed = [k for k in varying if k not in subset]
            sizes = [len(g) for _, g in _contexts(rows, fixed)]
            cap = max_options if size > 1 else None
            covered = sum(n if cap is None else min(n, cap) for n in sizes if n >= min_rows)
            ranks = sorted(order.index(k) for k in subset)
            rank = (covered, -ranks[0], size, tuple(-r for r in ranks[1:]))
            if covered and (best is None or rank > best[0]):
                best = (rank, list(subset))
    if best is None:
        return [], "no fixed context holds enough rows"
    return best[1], "the axes keeping the most rows; ties to the screened axis (most levels)"


def _split(
    rows: Sequence[HasConditions],
    members: list[int],
    varied: Sequence[str],
    max_options: int,
    rng: np.random.Generator,
) -> tuple[list[tuple[list[int], OptionSubset]], list[int]]:
    """Parts of an oversized context (see the module docstring) and the rows left out."""
    sub = [rows[i] for i in members]
    axis = preference(sub, list(varied))[0]
    levels = sorted({r.conditions[axis] for r in sub})
    shuffled = [levels[i] for i in rng.permutation(len(levels))]
    best_level = max(sub, key=lambda r: (r.utility, r.conditions[axis])).conditions[axis]
    for k in range(2, len(levels) + 1):
        groups = [set(g) for g in np.array_split(np.asarray(shuffled, dtype=object), k)]
        parts = [[i for i in members if rows[i].conditions[axis] in g] for g in groups]
        if max(len(p) for p in parts) <= max_options:
            return [
                (p, {"axis": axis, "part": n, "of": k, "holds_context_best": best_level in g})
                for n, (p, g) in enumerate(zip(parts, groups, strict=True))
            ], []
    pick = sorted(rng.choice(len(members), max_options, replace=False))
    kept = [members[i] for i in pick]
    return [(kept, {"axis": axis, "part": 0, "of": 1, "holds_context_best": None})], [
        i for i in members if i not in set(kept)
    ]


def _cut(
    rows: Sequence[HasConditions],
    varied: Sequence[str],
    fixed_keys: Sequence[str],
    limit: int,
    min_rows: int,
    seed: int,
    stream: Sequence[str],
) -> tuple[list[Slice], dict[str, list[int]], int]:
    """The tables of one choice of varied axes (before the per-reaction cap), the rows left
    out by reason, and how many contexts were split."""
    outside: dict[str, list[int]] = {}
    small = OUTSIDE_SMALL.format(n=min_rows)
    slices: list[Slice] = []
    split_contexts = 0
    for n, (_, members) in enumerate(_contexts(rows, fixed_keys)):
        if len(members) < min_rows:
            outside.setdefault(small, []).extend(members)
            continue
        fixed = {k: rows[members[0]].conditions[k] for k in fixed_keys}
        if len(members) <= limit:
            slices.append(Slice(members, fixed))
            continue
        split_contexts += 1
        rng = make_rng(seed, "table-split", *stream, str(n))
        parts, left = _split(rows, members, varied, limit, rng)
        if left:
            outside.setdefault(OUTSIDE_SUBSET, []).extend(left)
        slices.extend(Slice(p, fixed, info) for p, info in parts)
    return slices, outside, split_contexts


AXIS_TIER = {"species": 0, "process": 1, "additive": 2}  # lower is varied first
INFORMATIVE_RULE = (
    "the axes keeping the most rows in tables; then no additive/inhibitor axis unless it keeps "
    "more rows; then the most axes varied per table (literature tables vary ~3); then species "
    "(catalyst, ligand, base, solvent, reagents) before process settings; then most levels"
)


def _informative_axes(
    rows: Sequence[HasConditions],
    varying: list[str],
    limit: int,
    min_rows: int,
    kinds: Mapping[str, str],
    seed: int,
    stream: Sequence[str],
) -> tuple[list[str], str]:
    """The default V of a user's table (INFORMATIVE_RULE): every axis set of up to
    MAX_SUBSET_SIZE axes is cut as it would be, and ranked by the rows it keeps, then by
    additive axes (fewer), axes its tables actually vary (more), kind, fewer declared axes
    (when the tables vary no more), and levels."""
    order = preference(rows, varying)
    best: tuple[tuple[Any, ...], list[str]] | None = None
    for size in range(1, min(MAX_SUBSET_SIZE, len(varying)) + 1):
        for subset in combinations(varying, size):
            fixed = [k for k in varying if k not in subset]
            slices, _, _ = _cut(rows, subset, fixed, limit, min_rows, seed, stream)
            covered = sum(len(piece.rows) for piece in slices)
            if not covered:
                continue
            axes = sum(
                sum(1 for k in subset if _levels([rows[i] for i in piece.rows], k) > 1)
                for piece in slices
            ) / len(slices)
            tiers = [AXIS_TIER.get(kinds.get(k, "process"), 1) for k in subset]
            rank = (
                covered,
                -tiers.count(AXIS_TIER["additive"]),
                round(axes, 9),
                -sum(tiers) / len(tiers),
                -size,  # an axis that no table varies (split one level per part) is not added
                tuple(-r for r in sorted(order.index(k) for k in subset)),
            )
            if best is None or rank > best[0]:
                best = (rank, list(subset))
    if best is None:
        return [], "no fixed context holds enough rows"
    return best[1], INFORMATIVE_RULE


def slice_group(
    rows: Sequence[HasConditions],
    keys: Sequence[str],
    max_options: int | None,
    max_tables: int | None,
    seed: int,
    *stream: str,
    min_rows: int = 2,
    vary: Sequence[str] = (),
    kinds: Mapping[str, str] | None = None,
) -> SliceResult:
    """Apply the rule to one group's distinct rows (see the module docstring). With `kinds`
    (axis -> species | process | additive, a user's table) the default V of a group larger
    than `max_options` follows INFORMATIVE_RULE (a smaller one is the chemist's own table)."""
    if not vary and (max_options is None or len(rows) <= max_options):
        return SliceResult([Slice(list(range(len(rows))), {})], list(keys), [], "whole group")
    limit = max_options if max_options is not None else len(rows)
    varying = [k for k in keys if _levels(rows, k) > 1]
    if vary:
        varied, why = [k for k in keys if k in vary], "declared --vary"
    elif kinds is not None:
        varied, why = _informative_axes(rows, varying, limit, min_rows, kinds, seed, stream)
    else:
        varied, why = _default_axes(rows, varying, limit, min_rows)
    fixed_keys = [k for k in varying if k not in varied]
    small = OUTSIDE_SMALL.format(n=min_rows)
    if not varied:
        return SliceResult([], [], fixed_keys, why, len(rows), 0, {small: list(range(len(rows)))})
    slices, outside, split_contexts = _cut(rows, varied, fixed_keys, limit, min_rows, seed, stream)
    capped = 0
    if max_tables is not None and len(slices) > max_tables:
        pick = make_rng(seed, "table-cap", *stream).choice(len(slices), max_tables, replace=False)
        capped = len(slices) - max_tables
        kept = set(int(i) for i in pick)
        for i, s in enumerate(slices):
            if i not in kept:
                outside.setdefault(OUTSIDE_CAP, []).extend(s.rows)
        slices = [s for i, s in enumerate(slices) if i in kept]
    note = (
        f"vary {', '.join(varied)} ({why}); fix {', '.join(fixed_keys) or '(nothing)'} at each "
        f"observed value; {len(slices) + capped} tables"
        + (
            f", {split_contexts} larger contexts split into option subsets"
            if split_contexts
            else ""
        )
        + (f", {max_tables} kept by a seeded cap" if capped else "")
    )
    return SliceResult(
        slices,
        list(varied),
        fixed_keys,
        note,
        rows_outside=sum(len(v) for v in outside.values()),
        tables_capped=capped,
        outside_rows=dict(sorted(outside.items())),
    )
