"""CLI helpers for a suite's command group: generated commands, JSON, tables and progress.

    from labreplay.sdk.cli import command, console, print_json, print_table

`@command(app, "run", RunOptions, LlmOptions)` registers a typer command whose flags are the
fields of the options classes (`labreplay.sdk.options`): a suite writes no `typer.Option`, and
the command's body gets the classes' instances, built and checked as the Python API builds
them. `print_table(table, "system")` prints a rich table whose name column stays whole at any
width (`COLUMNS` is honoured; a file or a pipe gets the table at its natural width);
`reading_console(console)` writes at 80 columns where the output has no width (a board to read).

A refusal raises `LabreplayError` with one line naming the option and the value; the CLI's
entry point prints it and exits 2 (see `report_failure`).
"""

from __future__ import annotations

from labreplay.cli._common import (
    console,
    err_console,
    print_json,
    print_table,
    progress_bar,
    progress_printer,
    reading_console,
)
from labreplay.cli._errors import expected_failure, report_failure
from labreplay.cli.generate import command

__all__ = [
    "command",
    "console",
    "err_console",
    "expected_failure",
    "print_json",
    "print_table",
    "progress_bar",
    "progress_printer",
    "reading_console",
    "report_failure",
]
