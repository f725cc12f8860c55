"""Entry point of the `labreplay` command."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from labreplay import __version__
from labreplay.cli import data as data_cli
from labreplay.cli import store as store_cli
from labreplay.cli._common import JsonOption, console, err_console, print_json
from labreplay.errors import LabreplayError

app = typer.Typer(
    name="labreplay",
    help="Compile recorded experiments into frozen, budgeted evaluation environments for AI "
    "agents; run agents and reference policies in them; score and report.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(data_cli.app, name="data")
app.add_typer(store_cli.app, name="store")


def _add_suite_groups() -> None:
    """Mount every registered suite's command group (`labreplay <suite> ...`) and the report."""
    from labreplay.cli import report as report_cli
    from labreplay.suite import load_suites

    if any(c.name == "report" for c in app.registered_commands):
        return  # already mounted (main() may be called more than once in one process)
    for suite in load_suites():
        app.add_typer(suite.cli(), name=suite.name)
    report_cli.register(app)


@app.command("version")
def version() -> None:
    """Print the labreplay version."""
    console.print(__version__)


@app.command("export")
def export(
    store: Path = typer.Option(..., "--store", help="Results store (SQLite file)."),
    out: Path = typer.Option(..., "--out", help="Output directory."),
    formats: str = typer.Option("parquet,jsonl", help="Comma list of parquet,csv,jsonl."),
    json_out: bool = JsonOption,
) -> None:
    """Export runs, specs, events, forecasts and scores (schema: labreplay.store.export)."""
    from labreplay.store.export import export_store
    from labreplay.store.sqlite import Store

    if not store.is_file():
        raise LabreplayError(f"store {store} does not exist")
    with Store(store) as db:
        written = export_store(db, out, tuple(f.strip() for f in formats.split(",") if f.strip()))
    if json_out:
        print_json([str(p) for p in written])
    else:
        console.print(f"wrote {len(written)} files to {out}")


def main() -> None:
    _add_suite_groups()
    try:
        # Without standalone mode click *returns* the code of a `typer.Exit` instead of raising
        # it, so the result must be passed on or `data verify` would exit 0 on a failed check.
        # (It also returns a command's return value: commands return None, never an int.)
        code = app(standalone_mode=False)
    except LabreplayError as exc:
        err_console.print(f"labreplay: error: {exc}", markup=False, highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        err_console.print("labreplay: aborted")
        sys.exit(130)
    except Exception as exc:
        # Usage errors carry their own message and exit code (2). Recent typer vendors click
        # (`typer._click`), so `click.ClickException` does not match them: recognise them by
        # shape, whichever click they come from.
        show, exit_code = getattr(exc, "show", None), getattr(exc, "exit_code", None)
        if callable(show) and isinstance(exit_code, int):
            show()
            sys.exit(exit_code)
        raise
    sys.exit(code if isinstance(code, int) and not isinstance(code, bool) else 0)


if __name__ == "__main__":
    main()
