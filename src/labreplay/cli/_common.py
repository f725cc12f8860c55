"""Shared CLI plumbing: options, JSON output, progress bars."""

from __future__ import annotations

import copy
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Protocol

import typer
from rich.console import Console
from rich.measure import Measurement
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from labreplay import validate
from labreplay._files import writable_dir, writable_file

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


DataDirOption = typer.Option(
    None, "--data-dir", help="Data directory (default: $LABREPLAY_DATA_DIR, then the user cache)."
)
JsonOption = typer.Option(False, "--json", help="Print machine-readable JSON instead of tables.")


def print_json(value: object) -> None:
    """Strict JSON on stdout: never NaN/Infinity (a non-finite float is written as null)."""
    from labreplay.safe_json import dumps_strict

    sys.stdout.write(dumps_strict(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


QuietOption = typer.Option(
    False,
    "--quiet",
    help="No progress lines on stderr (they are off anyway when stderr is not a terminal).",
)


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


IntCheck = Callable[[int | None], int | None]
FloatCheck = Callable[[float | None], float | None]
TextCheck = Callable[[str | None], str | None]


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


# ---------------------------------------------------------------------- option validators
# Used as typer callbacks, so a bad value is refused before any work starts (and before any
# file is touched), in one line naming the option and the value. Each one is a thin callback
# over the shared validator of its kind (`labreplay.validate`), which the Python API calls too.
_bad = validate.bad


def int_range(option: str, lo: int | None = None, hi: int | None = None) -> IntCheck:
    """Callback refusing an int outside [lo, hi] (None passes: the option was not given)."""

    def check(value: int | None) -> int | None:
        return None if value is None else validate.int_in(option, value, lo, hi)

    return check


def seed_check(option: str = "--seed") -> IntCheck:
    return int_range(option, 0, validate.MAX_SEED)


def positive_float(option: str, hi: float | None = None) -> FloatCheck:
    """Callback refusing a float that is not finite, > 0 and <= `hi` (when given)."""
    return finite_float_check(option, lo=0, hi=hi, lo_open=True)


def timeout_check(option: str) -> FloatCheck:
    """A per-call or per-request timeout in seconds: (0, a day]."""
    return positive_float(option, validate.MAX_TIMEOUT_S)


def count_check(option: str, lo: int = 1) -> IntCheck:
    """A count (units, calls, rows, steps): [lo, 10^9]."""
    return int_range(option, lo, validate.MAX_COUNT)


def finite_float_check(
    option: str, lo: float | None = None, hi: float | None = None, **open_: bool
) -> FloatCheck:
    """Callback refusing NaN, +/-inf and values outside [lo, hi] (`lo_open`/`hi_open` make a
    bound exclusive), by `labreplay.validate.finite_float`."""

    def check(value: float | None) -> float | None:
        return (
            None if value is None else validate.finite_float(option, value, lo=lo, hi=hi, **open_)
        )

    return check


def scheduler_check(option: str = "--scheduler") -> TextCheck:
    def check(value: str | None) -> str | None:
        return None if value is None else validate.scheduler_address(option, value)

    return check


def name_check(option: str) -> TextCheck:
    """Callback refusing an empty, multi-line or overlong declared name."""

    def check(value: str | None) -> str | None:
        return None if value is None else validate.display_name(option, value)

    return check


def choice(option: str, choices: Sequence[str]) -> TextCheck:
    def check(value: str | None) -> str | None:
        return None if value is None else validate.choice(option, value, choices)

    return check


def url_check(option: str) -> TextCheck:
    def check(value: str | None) -> str | None:
        return None if value is None else validate.url(option, value)

    return check


def out_dir_check(option: str = "--out") -> Callable[[Path | None], Path | None]:
    """Callback refusing an output directory path that holds anything but a directory."""

    def check(value: Path | None) -> Path | None:
        return None if value is None else writable_dir(value, option)

    return check


def out_file_check(
    option: str = "--out", beside: Callable[[Path], Sequence[Path]] = lambda path: ()
) -> Callable[[Path | None], Path | None]:
    """Callback refusing an output file path, or a file the command writes `beside` it (e.g.
    `<out>.spec.json`), that holds anything but a regular file (a device, a FIFO, a
    directory): checked before any work, so nothing is written and the path stays as it was."""

    def check(value: Path | None) -> Path | None:
        if value is not None:
            writable_file(value, option)
            for sibling in beside(value):
                writable_file(sibling, f"{option}'s companion file")
        return value

    return check


EXECUTORS = ("in-process", "threads", "dask")
# --isolate and its per-call timeout, the same on every suite's `run` command.
IsolateOption = typer.Option(
    False,
    "--isolate",
    help="Run the (Python) agent in a child process that receives only what crosses its "
    "contract as JSON, with an allow-listed environment (no keys, no LABREPLAY_*; "
    "LABREPLAY_AGENT_ENV=NAME,... passes variables on).",
)
RequireSandboxOption = typer.Option(
    False,
    "--require-sandbox",
    help="With --isolate: refuse to run (exit 2) unless the agent's child runs in the "
    "bubblewrap sandbox (its own file system view, /proc and pids; docs/isolation.md).",
)


def check_isolation(isolate: bool, require_sandbox: bool) -> None:
    """--require-sandbox needs --isolate and a usable sandbox (else one line, exit 2); an
    --isolate run without the sandbox says so in one line on stderr and goes on."""
    from labreplay.agents.sandbox import sandbox_status
    from labreplay.errors import LabreplayError

    if require_sandbox and not isolate:
        raise LabreplayError("--require-sandbox: needs --isolate (the sandbox holds its child)")
    if not isolate:
        return
    status = sandbox_status()
    if status.available:
        return
    if require_sandbox:
        raise LabreplayError(f"--require-sandbox: no sandbox on this machine ({status.reason})")
    sys.stderr.write(
        f"labreplay: note: --isolate without a sandbox ({status.reason}): the agent's child "
        "runs as your user and can read what you can (docs/isolation.md)\n"
    )


AgentTimeoutOption = typer.Option(
    None,
    "--agent-timeout",
    help="With --isolate: seconds the agent has per call before the run is failed (60).",
    callback=timeout_check("--agent-timeout"),
)
ExecutorOption = typer.Option(
    "in-process",
    "--executor",
    help="in-process | threads | dask (one driver writes the store in every mode).",
    callback=choice("--executor", EXECUTORS),
)
SchedulerOption = typer.Option(
    None,
    "--scheduler",
    help="Dask scheduler address (default: a LocalCluster on this machine).",
    callback=scheduler_check(),
)
WorkersOption = typer.Option(
    None,
    "--workers",
    help="Threads, or LocalCluster worker processes (default: per core).",
    callback=int_range("--workers", 1, 1024),
)
