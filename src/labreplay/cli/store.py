"""`labreplay store verify --store PATH`: exit 0 if every run's chain and spec verify, else 1
naming the first broken run and seq."""

from __future__ import annotations

from pathlib import Path

import typer

from labreplay.cli._common import JsonOption, console, err_console, print_json
from labreplay.errors import StoreError

app = typer.Typer(help="Results-store maintenance.", no_args_is_help=True)


@app.command("verify")
def verify(
    store: Path = typer.Option(..., "--store", help="Results store (SQLite file)."),
    json_out: bool = JsonOption,
) -> None:
    """Re-verify every run's hash chain against its stored, hash-checked spec."""
    from labreplay.store.sqlite import Store
    from labreplay.store.verify import verify_store

    if not store.is_file():
        raise StoreError(f"store {store} does not exist")
    with Store(store) as db:
        report = verify_store(db)
    if json_out:
        print_json({"runs": report.runs, "events": report.events, "problems": report.problems})
    elif report.ok:
        console.print(f"ok: {report.runs} runs, {report.events} events verified")
    else:
        err_console.print(
            f"labreplay: store {store}: {len(report.problems)} broken run(s); first: "
            f"{report.problems[0]}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    if not report.ok:
        raise typer.Exit(1)
