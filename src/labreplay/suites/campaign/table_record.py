"""A table of experiments (CSV/TSV, one row each) read through a record card into Records.

Descriptors are the card's descriptor columns (numbers parsed as numbers, an empty cell a
typed Missing) plus `groups`: one `COLUMN=value` entry per grouping column, which the panel
partition draws its evaluation groups from. The outcome is `{"valid", "category"}`:
- rule `bins`: a numeric column binned by the card's bounds (an empty, non-numeric or
  non-finite cell is Missing: undecidable, never a failure, its reason counted in QC); every
  row with a number is valid. A censored cell (`>99`, `<1`) is read as the interval it implies
  when the card declares `censored = "bounds"`: in a bin when the whole interval is.
- rule `columns`: the category read from a column (an empty cell is Missing), validity from
  `valid_column` when declared (true/false/1/0; a row declared invalid is a failure).
Each evidence kind reveals one column of the row: one item, or a typed Missing when empty.

Refused (one line naming the card, the field and the value): a missing column, duplicate or
empty ids, a headerless row with another number of cells than `table.columns` names, a
category or bin with no rows, a grouping key with one level, evidence revealing
a column the table does not have. (A card whose id, descriptors or grouping name an outcome
column or a revealed one never gets here: `card.load_card` refuses it.)
"""

from __future__ import annotations

import csv
import math
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labreplay.sdk import Missing, Record, canonical_json, to_json
from labreplay.suites.campaign.card import Bin, RecordCard, source_paths

if TYPE_CHECKING:
    from labreplay.suites.campaign.records_pg import Outcome

GROUPS_FIELD = "groups"
# Why an outcome cell decides nothing (the category's Missing reason; QC counts rows by it)
EMPTY = "empty cell"
NOT_A_NUMBER = "not a number"
NOT_FINITE = "not finite (NaN, inf)"
CENSORED_VALUE = "censored value (the card does not read bounds)"
SPANS_BINS = "censored bound spans bins"
CENSORED = re.compile(r"(>=|<=|>|<|\u2265|\u2264)\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)")
ID_JOIN = " | "  # between the values of a composite id
_TRUE = {"true", "1", "yes"}
_FALSE = {"false", "0", "no"}


def read_rows(card: RecordCard, data_dir: Path) -> tuple[list[str], list[dict[str, str]]]:
    assert card.table_file is not None
    path = source_paths(card, data_dir)[card.table_file]
    delimiter = "\t" if card.table_format == "tsv" else ","
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            if card.header_columns:
                return list(card.header_columns), _headerless(card, csv.reader(handle, delimiter=delimiter))  # fmt: skip
            reader = csv.DictReader(handle, delimiter=delimiter)
            rows = list(reader)
            header = list(reader.fieldnames or [])
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise card.error(f"unreadable table ({exc})", "table.file", card.table_file) from exc
    return header, rows


def _headerless(card: RecordCard, lines: Iterator[list[str]]) -> list[dict[str, str]]:
    """The rows of a file without a header row, named by the card's `table.columns`; a row
    with another number of cells is refused (blank lines are skipped, as with a header)."""
    names, rows = card.header_columns, []
    for number, cells in enumerate(lines, start=1):
        if not cells:
            continue
        if len(cells) != len(names):
            raise card.error(f"line {number} of {card.table_file} has {len(cells)} cells but "
                             f"table.columns names {len(names)}", "table.columns", list(names))  # fmt: skip
        rows.append(dict(zip(names, cells, strict=True)))
    return rows


def _cell(raw: str | None) -> float | str | Missing:
    text = (raw or "").strip()
    if not text:
        return Missing("empty cell in the recorded table")
    try:
        number = float(text)
    except ValueError:
        return text
    return number if math.isfinite(number) else Missing(f"non-finite number {text!r}")


def _check_columns(card: RecordCard, header: list[str]) -> None:
    if len(card.id_columns) == 1:
        wanted: list[tuple[str, str]] = [("experiment.id", card.id_columns[0])]
    else:
        wanted = [(f"experiment.id.columns[{i}]", c) for i, c in enumerate(card.id_columns)]
    wanted += [(f"experiment.descriptors[{i}]", c) for i, c in enumerate(card.descriptors)]
    wanted += [(f"grouping[{i}]", c) for i, c in enumerate(card.grouping)]
    wanted += [(f"table.filter.{c}", c) for c, _ in card.filters]
    for field in ("outcome_column", "category_column", "valid_column"):
        value = getattr(card, field)
        if value is not None:
            wanted.append((f"outcome.{field.replace('outcome_', '')}", value))
    wanted += [(f"outcome.secondary[{i}]", c) for i, c in enumerate(card.secondary)]
    for field, column in wanted:
        if column not in header:
            raise card.error(f"no such column in {card.table_file}", field, column)
    for i, e in enumerate(card.evidence):
        if e.reveals not in header:
            raise card.error(
                f"evidence points at nothing: no column {e.reveals!r} in {card.table_file}",
                f"evidence[{i}].reveals", e.reveals,
            )  # fmt: skip


def _undecidable(column: str, raw: str, reason: str) -> Outcome:
    """An outcome the cell cannot decide: the category's Missing holds the reason alone (QC
    counts rows by it), the validity's the column and the cell too."""
    return {"valid": Missing(f"{column} {raw!r}: {reason}"), "category": Missing(reason)}


def _binned(card: RecordCard, raw: str, bins: Sequence[Bin]) -> Outcome:
    """The bin of a number; of a censored value (`>99`, `<1`) when the card reads them as
    bounds (`outcome.censored = "bounds"`) and the whole interval it implies lies in one bin."""
    assert card.outcome_column is not None
    text = raw.strip()
    if not text:
        return _undecidable(card.outcome_column, raw, EMPTY)
    if (bound := CENSORED.fullmatch(text)) is not None:
        if card.censored != "bounds":
            return _undecidable(card.outcome_column, raw, CENSORED_VALUE)
        sign, at = bound.group(1), float(bound.group(2))
        above = sign in (">", ">=", "\u2265")
        closed = sign not in (">", "<")
        floors = [-math.inf, *(b.below for b in bins[:-1] if b.below is not None)]
        for b, floor in zip(bins, floors, strict=True):  # a bin holds [floor, below)
            top = math.inf if b.below is None else b.below
            if (
                (floor <= at and top == math.inf)
                if above
                else (floor == -math.inf and (at < top or (at == top and not closed)))
            ):
                return {"valid": True, "category": b.category}
        return _undecidable(card.outcome_column, raw, SPANS_BINS)
    value = _cell(text)
    if isinstance(value, Missing):
        return _undecidable(card.outcome_column, raw, NOT_FINITE)
    if isinstance(value, str):
        return _undecidable(card.outcome_column, raw, NOT_A_NUMBER)
    return {"valid": True, "category": bin_of(value, bins)}


def bin_of(value: float, bins: Sequence[Bin]) -> str:
    return next(b.category for b in bins if b.below is None or value < b.below)


def _outcome(card: RecordCard, row: dict[str, str], bins: Sequence[Bin]) -> Outcome:
    if card.rule == "bins":
        assert card.outcome_column is not None
        return _binned(card, row[card.outcome_column] or "", bins)
    assert card.category_column is not None
    if card.valid_column is not None:
        flag = (row[card.valid_column] or "").strip().lower()
        if flag in _FALSE:
            return {"valid": False, "category": Missing("recorded as invalid")}
        if flag not in _TRUE:
            why = f"{card.valid_column} not recorded as true/false ({flag!r})"
            return {"valid": Missing(why), "category": Missing(why)}
    category = (row[card.category_column] or "").strip()
    if not category:
        missing = Missing(f"{card.category_column}: empty cell")
        return {"valid": missing, "category": missing}
    if category not in card.categories:
        raise card.error(
            f"category not declared in outcome.categories {list(card.categories)}",
            f"outcome.category_column ({card.category_column})", category,
        )  # fmt: skip
    return {"valid": True, "category": category}


def load_table_records(card: RecordCard, data_dir: Path) -> list[Record]:
    header, rows = read_rows(card, data_dir)
    _check_columns(card, header)
    if not rows:
        raise card.error("the table has no rows", "table.file", card.table_file)
    numbered = _kept(card, rows)
    if len(numbered) > card.max_rows:
        raise card.error(
            f"the table keeps {len(numbered):,} rows, over the limit of {card.max_rows:,} (each "
            f"spec holds the context rows: time and disk grow with them); declare "
            f"table.max_rows = {len(numbered)} to compile it anyway",
            "table.max_rows", card.max_rows,
        )  # fmt: skip
    ids = _ids(card, numbered)
    bins = card.bins
    if card.quantiles is not None:  # provisional, from every row: `rebinned` on the context's
        assert card.outcome_column is not None
        bins = quantile_bins(card, [row[card.outcome_column] for _, row in numbered])
    records = []
    for (number, row), eid in zip(numbered, ids, strict=True):
        line = number + (0 if card.header_columns else 1)  # the file's line (a header is 1)
        descriptors: dict[str, Any] = {c: _cell(row[c]) for c in card.descriptors}
        descriptors[GROUPS_FIELD] = [
            f"{c}={row[c].strip()}" for c in card.grouping if (row[c] or "").strip()
        ]
        outcome = _outcome(card, row, bins)
        provenance: dict[str, object] = {"file": card.table_file, "row": line}
        if card.quantiles is not None:  # the cell, rebinned on each partition's context
            provenance["outcome_cell"] = row[card.outcome_column or ""] or ""
        if card.secondary:  # sealed with the outcome (`compiler._private`), never shown
            provenance["secondary"] = {c: to_json(_cell(row[c])) for c in card.secondary}
        evidence: dict[str, Any] = {}
        for e in card.evidence:
            value = _cell(row[e.reveals])
            item = {"item_id": f"{e.kind}:{eid}:0", "kind": e.kind, "column": e.reveals,
                    "shows": e.shows, "value": value}  # fmt: skip
            if e.reveals in (card.outcome_column, card.category_column) and isinstance(
                outcome["category"], str
            ):
                # The reading decides the outcome under the card's published rule: say so.
                item["implies_category"] = outcome["category"]
            evidence[e.kind] = value if isinstance(value, Missing) else [item]
        records.append(
            Record(
                record_id=eid,
                source=card.name,
                descriptors=descriptors,
                outcome=outcome,
                evidence=evidence,
                provenance=provenance,
            )
        )
    _check_levels(card, records)
    return records


def _kept(card: RecordCard, rows: list[dict[str, str]]) -> list[tuple[int, dict[str, str]]]:
    """The rows the card's filter keeps, with their numbers in the file (1: the first row)."""
    kept = [(i, row) for i, row in enumerate(rows, start=1) if all(
        any(_matches(row[c], v) for v in values) for c, values in card.filters
    )]  # fmt: skip
    if not kept:
        shown = {c: list(v) if len(v) > 1 else v[0] for c, v in card.filters}
        raise card.error(f"the filter keeps none of the {len(rows)} rows", "table.filter", shown)
    return kept


def _matches(raw: str | None, wanted: str | float) -> bool:
    text = (raw or "").strip()
    if isinstance(wanted, str):
        return text == wanted
    cell = _cell(text)
    return isinstance(cell, float) and cell == wanted


def _ids(card: RecordCard, numbered: list[tuple[int, dict[str, str]]]) -> list[str]:
    """Each row's id: its id column, its id columns' values joined by ID_JOIN, or (no id
    column) its number in the file, 1 being the first data row (a filter keeps the numbers)."""
    if not card.id_columns:
        return [f"row-{i}" for i, _ in numbered]
    field = "experiment.id" if len(card.id_columns) == 1 else "experiment.id.columns"
    shown = card.id_columns[0] if len(card.id_columns) == 1 else list(card.id_columns)
    ids = []
    for i, row in numbered:
        parts = [(row[c] or "").strip() for c in card.id_columns]
        if not all(parts):
            raise card.error(f"data row {i} has an empty id", field, shown)
        ids.append(ID_JOIN.join(parts))
    repeated = [k for k, n in Counter(ids).items() if n > 1]
    if repeated:
        raise card.error(f"experiment id {repeated[0]!r} is not unique", field, shown)
    return ids


def numbers(cells: Sequence[str]) -> list[float]:
    """The finite numbers among outcome cells (a censored or undecidable cell is none)."""
    return [v for v in map(_cell, cells) if isinstance(v, float)]


def quantile_bins(card: RecordCard, cells: Sequence[str]) -> tuple[Bin, ...]:
    """The card's categories cut at the quantiles of the cells' numbers (`outcome.bins =
    {quantiles = N}`); a category may come out empty (ties): the caller checks."""
    import numpy as np

    assert card.quantiles is not None
    values = numbers(cells) or [0.0]
    cuts = np.quantile(values, [k / card.quantiles for k in range(1, card.quantiles)])
    below: list[float | None] = [float(c) for c in cuts]
    return tuple(Bin(c, b) for c, b in zip(card.categories, [*below, None], strict=True))


def rebinned(card: RecordCard, records: Sequence[Record], bins: Sequence[Bin]) -> list[Record]:
    """`records` (loaded with `outcome.bins = {quantiles = N}`) under other bins: the outcome
    and what each outcome-revealing evidence item implies."""
    import dataclasses

    out = []
    for r in records:
        outcome = _binned(card, r.provenance["outcome_cell"], bins)
        evidence = {}
        for kind, items in r.evidence.items():
            if not isinstance(items, Missing):
                items = [{k: v for k, v in item.items() if k != "implies_category"} for item in items]  # fmt: skip
                if isinstance(outcome["category"], str):
                    for item in items:
                        if item["column"] == card.outcome_column:
                            item["implies_category"] = outcome["category"]
            evidence[kind] = items
        out.append(dataclasses.replace(r, outcome=outcome, evidence=evidence))
    return out


def replicate_keys(records: Sequence[Record]) -> dict[str, str]:
    """Record id -> replicate key, for the rows that share every descriptor value (the
    grouping levels included) with another row; {} when the table has no replicates. The
    partition keeps each group in one role (`protocol.partition`'s `together`)."""
    # a rough key first (one tuple a row): only rows whose rough key repeats can be replicates,
    # and only they pay for canonical JSON (which cost most of a 100k-row compile for all rows)
    rough = [_rough(r.descriptors) for r in records]
    repeated = Counter(rough)
    keys = {
        r.record_id: "replicates:" + canonical_json(to_json(r.descriptors))
        for r, k in zip(records, rough, strict=True)
        if repeated[k] > 1
    }
    counts = Counter(keys.values())
    return {i: k for i, k in keys.items() if counts[k] > 1}


def _rough(value: object) -> object:
    """A key no finer than canonical JSON (values whose canonical JSON is equal give equal keys):
    numbers by their 12 significant digits, the canonical rounding; what is neither text, a
    number nor a sequence or mapping of them, as None."""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"{float(value) + 0.0:.12g}"  # + 0.0: -0.0 and 0.0 are one canonical 0
    if isinstance(value, list | tuple):
        return tuple(_rough(v) for v in value)
    if isinstance(value, Mapping):
        return tuple((k, _rough(v)) for k, v in sorted(value.items()))
    return None


def _check_levels(card: RecordCard, records: list[Record]) -> None:
    counts = Counter(
        r.outcome["category"] for r in records if isinstance(r.outcome.get("category"), str)
    )
    field = "outcome.bins" if card.rule == "bins" else "outcome.categories"
    for i, category in enumerate(card.categories if card.quantiles is None else ()):
        if not counts[category]:
            where = f"outcome.bins[{i}].category" if card.rule == "bins" else field
            raise card.error("no decidable row falls in this category", where, category)
    for i, column in enumerate(card.grouping):
        levels = {g for r in records for g in r.descriptors[GROUPS_FIELD] if g.startswith(f"{column}=")}  # fmt: skip
        if len(levels) < 2:
            raise card.error(
                f"a grouping key needs at least two levels to hold groups out (has {len(levels)})",
                f"grouping[{i}]", column,
            )  # fmt: skip
