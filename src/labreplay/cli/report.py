"""`labreplay report --store PATH --out DIR`: the static HTML report (reads only the store)."""

from __future__ import annotations

from pathlib import Path

import typer

from labreplay.cli._common import (
    JsonOption,
    QuietOption,
    console,
    out_dir_check,
    print_json,
    progress_printer,
)


def report(
    store: Path = typer.Option(..., "--store", help="Results store (SQLite file)."),
    out: Path = typer.Option(
        ..., "--out", help="Output directory (index.html is written).", callback=out_dir_check()
    ),
    run: str | None = typer.Option(
        None, "--run", help="Campaign run id for the belief-trajectory viewer (default: best)."
    ),
    json_out: bool = JsonOption,
    quiet: bool = QuietOption,
) -> None:
    """Write a self-contained static HTML report: leaderboards, curves, a trajectory viewer."""
    from labreplay.report import build_report

    result = build_report(store, out, run_id=run, progress=progress_printer(quiet))
    if json_out:
        print_json(result)
        return
    console.print(
        f"wrote {result['path']} ({', '.join(result['suites']) or 'no suites'}; "
        f"{result['runs']} runs, {result['events']} events)"
    )


def register(app: typer.Typer) -> None:
    app.command("report")(report)
