"""`labreplay import inspect-log LOG --store S` (see `importer.py`)."""

from __future__ import annotations

from pathlib import Path

import typer

from labreplay.sdk.cli import JsonOption, console, print_json

app = typer.Typer(
    help="Bring results of other evaluation tools into a store.", no_args_is_help=True
)


@app.command("inspect-log")
def inspect_log_cmd(
    log: Path = typer.Argument(..., help="An inspect_ai log (.eval or .json)."),
    store: Path = typer.Option(..., "--store", help="Results store (SQLite file)."),
    json_out: bool = JsonOption,
) -> None:
    """Store a labreplay/conditions inspect log as a conditions run (scored by our scorer)."""
    from labreplay.suites.inspect_tasks.importer import import_inspect_log

    result = import_inspect_log(log, store)
    if json_out:
        print_json(result)
        return
    for key, value in result.items():
        console.print(f"{key}: {value}", markup=False, highlight=False)
