"""The declared rule that cuts one reaction's screening grid into literature-sized tables.

A literature optimisation table varies a few axes around fixed conditions (median 3 axes and 7
rows in RxnOptBench). A high-throughput grid measures every combination, so one question over a
whole grid has hundreds of options and a fill-in-the-blank Hit floor near 1. The rule:

* a group of at most ``max_options`` distinct rows is one table;
* otherwise choose the set V of axes to vary (the others are fixed, one table per observed
  value combination of the fixed axes) that puts the most rows into tables of 2..max_options
  rows (a context larger than that counts max_options rows: it becomes one table of a seeded
  subset of max_options rows, the rest left out -- a 20-ligand screen still gives a question);
  ties go to more varied axes, then to the smaller level product, then to the declared
  axis order. On a full grid every fitting V covers every row, so this is exactly "vary the
  axes with the fewest levels whose product fits"; on scattered (optimisation-campaign) data
  it keeps the most rows in literature-sized tables;
* at most ``max_tables`` such tables per group are kept, a seeded choice recorded with the seed.

There is no random chunking: a table's rows share one fixed context, sibling tables differ in
at least one fixed axis, so no row (and no answer) appears in two tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from math import prod
from typing import Protocol

from labreplay.sdk import make_rng

MAX_SUBSET_SIZE = 4  # V never varies more axes than this (literature tables: median 3)


class HasConditions(Protocol):
    @property
    def conditions(self) -> dict[str, str]: ...


@dataclass
class Slice:
    rows: list[int]  # indices into the group's rows
    fixed: dict[str, str]  # the fixed axes' values shared by these rows


@dataclass
class SliceResult:
    slices: list[Slice]
    varied: list[str]
    fixed_keys: list[str]
    note: str
    rows_outside: int = 0  # rows in 1-row or oversized contexts, or in tables left out by the cap
    tables_capped: int = 0  # usable tables left out by the per-reaction cap


def _levels(rows: Sequence[HasConditions], key: str) -> int:
    return len({r.conditions[key] for r in rows})


def slice_group(
    rows: Sequence[HasConditions],
    keys: Sequence[str],
    max_options: int | None,
    max_tables: int | None,
    seed: int,
    *stream: str,
) -> SliceResult:
    """Apply the rule to one group's distinct rows (see the module docstring)."""
    if max_options is None or len(rows) <= max_options:
        return SliceResult([Slice(list(range(len(rows))), {})], list(keys), [], "whole group")
    varying = [k for k in keys if _levels(rows, k) > 1]
    levels = {k: _levels(rows, k) for k in varying}
    best: tuple[tuple[int, int, int, tuple[int, ...]], tuple[str, ...], list[list[int]]] | None
    best = None
    for size in range(1, min(MAX_SUBSET_SIZE, len(varying)) + 1):
        for subset in combinations(varying, size):
            fixed = [k for k in varying if k not in subset]
            contexts: dict[tuple[str, ...], list[int]] = {}
            for i, r in enumerate(rows):
                contexts.setdefault(tuple(r.conditions[k] for k in fixed), []).append(i)
            usable = [g for _, g in sorted(contexts.items()) if len(g) >= 2]
            covered = sum(min(len(g), max_options) for g in usable)
            rank = (
                covered,
                len(subset),
                -prod(levels[k] for k in subset),
                tuple(-varying.index(k) for k in subset),
            )
            if covered and (best is None or rank > best[0]):
                best = (rank, subset, usable)
    if best is None:
        return SliceResult(
            [],
            [],
            list(varying),
            "no fixed context holds 2 or more rows",
            rows_outside=len(rows),
        )
    _, subset, usable = best
    fixed_keys = [k for k in varying if k not in subset]
    oversized = 0
    for n, group in enumerate(usable):
        if len(group) > max_options:  # e.g. a 20-ligand screen: one seeded 12-row subset
            oversized += 1
            pick = make_rng(seed, "table-subsample", *stream, str(n)).choice(
                len(group), max_options, replace=False
            )
            usable[n] = [group[i] for i in sorted(pick)]
    slices = [Slice(g, {k: rows[g[0]].conditions[k] for k in fixed_keys}) for g in usable]
    capped = 0
    if max_tables is not None and len(slices) > max_tables:
        pick = make_rng(seed, "table-cap", *stream).choice(len(slices), max_tables, replace=False)
        capped = len(slices) - max_tables
        slices = [slices[i] for i in sorted(pick)]
    note = (
        f"vary {', '.join(subset)}; fix {', '.join(fixed_keys) or '(nothing)'} at each observed "
        f"value; {len(usable)} tables"
        + (
            f", {oversized} larger than {max_options} rows cut to a seeded subset"
            if oversized
            else ""
        )
        + (f", {max_tables} kept by a seeded cap" if capped else "")
    )
    kept = sum(len(piece.rows) for piece in slices)
    return SliceResult(
        slices,
        list(subset),
        fixed_keys,
        note,
        rows_outside=len(rows) - kept,
        tables_capped=capped,
    )
