"""The CLI's error boundary: every expected failure becomes one line on stderr and an exit code.

Expected failures are our own `LabreplayError`s (exit 2, or the code they carry), click usage
errors (exit 2) and the failures of the outside world that no command can rule out: a file
that cannot be read or written (permission, disk full, missing), bytes that are not UTF-8 or not
JSON, an SQLite file that is damaged or locked. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import errno
import json
import sqlite3
import sys

from labreplay.errors import LabreplayError


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _os_error(exc: OSError) -> str:
    reason = exc.strerror or _one_line(str(exc)) or type(exc).__name__
    if exc.errno == errno.ENOSPC:
        reason = "no space left on device"
    names = [str(n) for n in (exc.filename, exc.filename2) if n is not None]
    return f"{' -> '.join(names)}: {reason}" if names else reason


def expected_failure(exc: BaseException) -> tuple[str | None, int]:
    """(one-line message, exit code) for an expected failure; (None, 1) for a bug."""
    if isinstance(exc, LabreplayError):
        return _one_line(str(exc)), exc.exit_code
    show, exit_code = getattr(exc, "show", None), getattr(exc, "exit_code", None)
    if callable(show) and isinstance(exit_code, int):
        # A click usage error. Recent typer vendors click (`typer._click`), so
        # `click.ClickException` does not match them: recognise them by shape.
        format_message = getattr(exc, "format_message", None)
        text = format_message() if callable(format_message) else str(exc)
        ctx = getattr(exc, "ctx", None)
        where = getattr(ctx, "command_path", None)
        hint = f" (see `{where} --help`)" if where else ""
        return _one_line(f"{text}{hint}"), exit_code
    if isinstance(exc, UnicodeDecodeError):
        return (
            f"input is not valid UTF-8 (byte {exc.start}: {exc.object[exc.start : exc.start + 1]!r})",
            2,
        )
    if isinstance(exc, json.JSONDecodeError):
        return _one_line(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"), 2
    if isinstance(exc, OSError):
        return _one_line(_os_error(exc)), 2
    if isinstance(exc, sqlite3.Error):
        return _one_line(f"results store: {exc}"), 2
    if isinstance(exc, MemoryError):
        return "out of memory", 2
    return None, 1


def report_failure(message: str) -> None:
    sys.stderr.write(f"labreplay: error: {message}\n")
    sys.stderr.flush()
