"""Shared CLI plumbing: options, JSON output, progress bars."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

# Wide enough for leaderboards when stdout is a pipe or a CI log (rich would pick 80).
console = Console(width=None if sys.stdout.isatty() else 150)
err_console = Console(stderr=True)

DataDirOption = typer.Option(
    None, "--data-dir", help="Data directory (default: $LABREPLAY_DATA_DIR, then the user cache)."
)
JsonOption = typer.Option(False, "--json", help="Print machine-readable JSON instead of tables.")


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


@contextmanager
def progress_bar(description: str, total: int | None, enabled: bool = True) -> Iterator[Any]:
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


ExecutorOption = typer.Option(
    "in-process",
    "--executor",
    help="in-process | threads | dask (one driver writes the store in every mode).",
)
SchedulerOption = typer.Option(
    None, "--scheduler", help="Dask scheduler address (default: a LocalCluster on this machine)."
)
WorkersOption = typer.Option(
    None, "--workers", help="Threads, or LocalCluster worker processes (default: per core)."
)
