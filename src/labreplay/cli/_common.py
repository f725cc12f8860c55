"""Shared CLI plumbing: tables, JSON output, progress (the options are the options classes', `labreplay.option_fields`; their flags are generated, `labreplay.cli.generate`)."""

from __future__ import annotations

import copy
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from typing import Protocol

from rich.console import Console
from rich.measure import Measurement
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

# Output that is not a terminal (a file, a pipe, a CI log) has no width to fit: rich would
# pick 80 columns there and fold every table; such output is written at its natural width.
NATURAL_WIDTH = 100_000


def console_width(environ: Mapping[str, str] | None = None, tty: bool | None = None) -> int | None:
    """The width stdout is written at: `COLUMNS` when set to a positive number; on a terminal,
    its own width (None: rich asks the terminal); otherwise no limit (`NATURAL_WIDTH`), so that
    a table keeps its natural width and prose its own lines."""
    columns = (os.environ if environ is None else environ).get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    return None if (sys.stdout.isatty() if tty is None else tty) else NATURAL_WIDTH


# Prose and boards meant to be read (not tables kept whole for a tool) are wrapped at the
# output's width, and at this many columns where there is none (a file, a pipe).
READING_WIDTH = 80


def reading_console(out: Console) -> Console:
    """`out`, or where it has no width of its own (not a terminal, no `COLUMNS`) a console
    writing to the same file at `READING_WIDTH` columns."""
    return out if out.width < NATURAL_WIDTH else Console(file=out.file, width=READING_WIDTH)


console = Console(width=console_width())
err_console = Console(stderr=True)


def print_table(table: Table, *names: str, to: Console | None = None) -> None:
    """Print a rich table whose name columns (headers in `names`, e.g. "#", "system") stay
    whole at any width.

    A table wider than the output is printed in parts, each repeating the name columns with as
    many of the other columns as fit (the first part carries the title, the next ones
    "(continued)"); a name column never wraps nor shrinks below its longest cell, and only a
    column too wide to fit beside the names on its own folds (at spaces, then inside a word),
    so no cell is cut short with an ellipsis. A file or a pipe gets the table whole, at its
    natural width (see `console_width`)."""
    out = console if to is None else to
    keep = [k for k, column in enumerate(table.columns) if str(column.header) in names]
    unbounded = out.options.update_width(NATURAL_WIDTH)
    for k, column in enumerate(table.columns):
        if k in keep:
            cells = [column.header, *column.cells]
            widest = max(Measurement.get(out, unbounded, cell).maximum for cell in cells)
            column.no_wrap, column.overflow, column.min_width = True, "ignore", widest
        else:
            column.no_wrap, column.overflow = False, "fold"
    for part in _table_parts(table, keep, out):
        out.print(part)


def _table_parts(table: Table, keep: list[int], out: Console) -> list[Table]:
    unbounded = out.options.update_width(NATURAL_WIDTH)

    def width(chosen: list[int]) -> int:  # the natural width of these columns
        return Measurement.get(out, unbounded, _columns_of(table, chosen)).maximum

    if width(list(range(len(table.columns)))) <= out.width:
        return [table]
    groups: list[list[int]] = [[]]
    for k in (k for k in range(len(table.columns)) if k not in keep):
        if groups[-1] and width(sorted([*keep, *groups[-1], k])) > out.width:
            groups.append([])
        groups[-1].append(k)
    parts = [_columns_of(table, sorted([*keep, *group])) for group in groups]
    for part in parts[1:]:
        part.title = "(continued)" if table.title else None
    for part in parts[:-1]:
        part.caption = None  # a caption goes under the last part only
    return parts


def _columns_of(table: Table, chosen: list[int]) -> Table:
    """A copy of `table` with only the columns `chosen` (by index), rows and settings kept."""
    part = copy.copy(table)
    part.columns = [replace(table.columns[k], _index=i) for i, k in enumerate(chosen)]
    return part


def print_json(value: object) -> None:
    """Strict JSON on stdout: never NaN/Infinity (a non-finite float is written as null)."""
    from labreplay.safe_json import dumps_strict

    sys.stdout.write(dumps_strict(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def progress_printer(quiet: bool = False) -> Callable[[str], None] | None:
    """A function printing one progress line on stderr, or None: off with --quiet or when
    stderr is not a terminal, so pipes and logs get the result only (stdout never changes)."""
    if quiet or not sys.stderr.isatty():
        return None

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    return say


class ProgressBar(Protocol):
    """What `progress_bar` yields: `advance(n)` moves it on by n units."""

    def advance(self, n: int = 1) -> None: ...


@contextmanager
def progress_bar(
    description: str, total: int | None, enabled: bool = True
) -> Iterator[ProgressBar]:
    """A rich progress bar on stderr (so --json stdout stays clean)."""
    if not enabled or not sys.stderr.isatty():

        class _Null:
            def advance(self, n: int = 1) -> None:
                pass

        yield _Null()
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=err_console, transient=True) as progress:
        task = progress.add_task(description, total=total)

        class _Bar:
            def advance(self, n: int = 1) -> None:
                progress.advance(task, n)

        yield _Bar()
