"""Shared CLI plumbing: options, JSON output, progress bars."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from labreplay import validate

# Wide enough for leaderboards when stdout is a pipe or a CI log (rich would pick 80).
console = Console(width=None if sys.stdout.isatty() else 150)
err_console = Console(stderr=True)

DataDirOption = typer.Option(
    None, "--data-dir", help="Data directory (default: $LABREPLAY_DATA_DIR, then the user cache)."
)
JsonOption = typer.Option(False, "--json", help="Print machine-readable JSON instead of tables.")


def print_json(value: Any) -> None:
    """Strict JSON on stdout: never NaN/Infinity (a non-finite float is written as null)."""
    from labreplay.safe_json import dumps_strict

    sys.stdout.write(dumps_strict(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


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


# ---------------------------------------------------------------------- option validators
# Used as typer callbacks, so a bad value is refused before any work starts (and before any
# file is touched), in one line naming the option and the value. Each one is a thin callback
# over the shared validator of its kind (`labreplay.validate`), which the Python API calls too.
_bad = validate.bad


def int_range(option: str, lo: int | None = None, hi: int | None = None) -> Any:
    """Callback refusing an int outside [lo, hi] (None passes: the option was not given)."""

    def check(value: int | None) -> int | None:
        return None if value is None else validate.int_in(option, value, lo, hi)

    return check


def seed_check(option: str = "--seed") -> Any:
    return int_range(option, 0, validate.MAX_SEED)


def positive_float(option: str) -> Any:
    """Callback refusing a float that is not finite and > 0."""
    return finite_float_check(option, lo=0, lo_open=True)


def finite_float_check(
    option: str, lo: float | None = None, hi: float | None = None, **open_: bool
) -> Any:
    """Callback refusing NaN, +/-inf and values outside [lo, hi] (`lo_open`/`hi_open` make a
    bound exclusive), by `labreplay.validate.finite_float`."""

    def check(value: float | None) -> float | None:
        return (
            None if value is None else validate.finite_float(option, value, lo=lo, hi=hi, **open_)
        )

    return check


def scheduler_check(option: str = "--scheduler") -> Any:
    def check(value: str | None) -> str | None:
        return None if value is None else validate.scheduler_address(option, value)

    return check


def choice(option: str, choices: Sequence[str]) -> Any:
    def check(value: str | None) -> str | None:
        return None if value is None else validate.choice(option, value, choices)

    return check


def validate_url(option: str, value: str) -> str:
    """An http(s) URL with a host and a valid port, or a one-line error."""
    try:
        parts = urlsplit(value)
        port = parts.port  # raises ValueError on a bad port
    except ValueError as exc:
        raise _bad(option, value, f"is not a valid URL ({exc})") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise _bad(
            option, value, "is not an http(s) URL with a host, e.g. http://127.0.0.1:8080/v1"
        )
    if port == 0:
        raise _bad(option, value, "has port 0")
    if any(c.isspace() for c in value):
        raise _bad(option, value, "contains whitespace")
    return value


def url_check(option: str) -> Any:
    def check(value: str | None) -> str | None:
        return None if value is None else validate_url(option, value)

    return check


def out_dir_check(option: str = "--out") -> Any:
    """Callback refusing an output directory path that is an existing non-directory."""

    def check(value: Path | None) -> Path | None:
        if value is not None and value.exists() and not value.is_dir():
            raise _bad(option, str(value), "exists and is not a directory")
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
AgentTimeoutOption = typer.Option(
    None,
    "--agent-timeout",
    help="With --isolate: seconds the agent has per call before the run is failed (60).",
    callback=positive_float("--agent-timeout"),
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
