"""`labreplay report --store PATH --out DIR`: the static HTML report (reads only the store)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer

from labreplay.cli._common import console, print_json, progress_printer
from labreplay.cli.generate import command
from labreplay.option_fields import Checked, flag, out_dirs
from labreplay.run_options import OutputOptions, StoreOptions


@dataclass(frozen=True, kw_only=True)
class ReportArgs(Checked):
    """Where the report is written, and the run it features (`build_report`'s `out_dir` and
    `run_id`)."""

    out: Path = flag(help="Output directory (index.html is written).", check=out_dirs(), api=False)
    run: str | None = flag(
        None, "Campaign run id for the belief-trajectory viewer (default: best).", api=False
    )


def report(where: StoreOptions, args: ReportArgs, output: OutputOptions) -> None:
    """Write a self-contained static HTML report: leaderboards, curves, a trajectory viewer."""
    from labreplay.report import build_report

    result = build_report(
        where.store, args.out, run_id=args.run, progress=progress_printer(output.quiet)
    )
    if output.json_out:
        print_json(result)
        return
    console.print(
        f"wrote {result['path']} ({', '.join(result['suites']) or 'no suites'}; "
        f"{result['runs']} runs, {result['events']} events)"
    )


def register(app: typer.Typer) -> None:
    command(app, "report", StoreOptions, ReportArgs, OutputOptions)(report)
