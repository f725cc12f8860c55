"""`labreplay import inspect-log LOG --store S` (see `importer.py`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer

from labreplay.sdk.cli import command, console, print_json
from labreplay.sdk.options import Checked, OutputOptions, StoreOptions, flag

app = typer.Typer(
    help="Bring results of other evaluation tools into a store.", no_args_is_help=True
)


@dataclass(frozen=True, kw_only=True)
class InspectLog(Checked):
    """The inspect_ai log `import inspect-log` reads."""

    log: Path = flag(help="An inspect_ai log (.eval or .json).", argument=True, api=False)


@command(app, "inspect-log", InspectLog, StoreOptions, OutputOptions)
def inspect_log_cmd(source: InspectLog, where: StoreOptions, output: OutputOptions) -> None:
    """Store a labreplay/conditions inspect log as a conditions run (scored by our scorer)."""
    from labreplay.suites.inspect_tasks.importer import import_inspect_log

    result = import_inspect_log(source.log, where.store)
    if output.json_out:
        print_json(result)
        return
    for key, value in result.items():
        console.print(f"{key}: {value}", markup=False, highlight=False)
