"""CLI helpers for a suite's command group (typer options, validators, JSON and progress).

    from labreplay.sdk.cli import DataDirOption, JsonOption, console, print_json, seed_check

`print_table(table, "system")` prints a rich table whose name column stays whole at any width
(`COLUMNS` is honoured; a file or a pipe gets the table at its natural width).

Validators raise `LabreplayError` with one line naming the option and the value; the CLI's
entry point prints it and exits 2 (see `report_failure`).
"""

from labreplay.cli._common import (
    EXECUTORS,
    AgentTimeoutOption,
    DataDirOption,
    ExecutorOption,
    IsolateOption,
    JsonOption,
    SchedulerOption,
    WorkersOption,
    choice,
    console,
    err_console,
    finite_float_check,
    int_range,
    out_dir_check,
    positive_float,
    print_json,
    print_table,
    progress_bar,
    scheduler_check,
    seed_check,
    url_check,
    validate_url,
)
from labreplay.cli._errors import expected_failure, report_failure

__all__ = [
    "EXECUTORS",
    "AgentTimeoutOption",
    "DataDirOption",
    "ExecutorOption",
    "IsolateOption",
    "JsonOption",
    "SchedulerOption",
    "WorkersOption",
    "choice",
    "console",
    "err_console",
    "expected_failure",
    "finite_float_check",
    "int_range",
    "out_dir_check",
    "positive_float",
    "print_json",
    "print_table",
    "progress_bar",
    "report_failure",
    "scheduler_check",
    "seed_check",
    "url_check",
    "validate_url",
]
