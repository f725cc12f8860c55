"""Entry point of the `labreplay` command."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import typer

from labreplay import __version__
from labreplay._scrubbed_io import scrubbed_output, scrubbing
from labreplay.cli import data as data_cli
from labreplay.cli import store as store_cli
from labreplay.cli._common import JsonOption, console, err_console, out_dir_check, print_json
from labreplay.cli._errors import expected_failure, report_failure

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
    from labreplay.suite import ImportsResults, load_suites

    if any(c.name == "report" for c in app.registered_commands):
        return  # already mounted (main() may be called more than once in one process)
    for suite in load_suites():
        app.add_typer(suite.cli(), name=suite.name)
    # `labreplay import ...`: the importers suites offer (optional `import_cli()`), one group
    imports = typer.Typer(help="Bring results of other tools into a store.", no_args_is_help=True)
    for suite in load_suites():
        if isinstance(suite, ImportsResults):
            imports.registered_commands.extend(suite.import_cli().registered_commands)
    if imports.registered_commands:
        app.add_typer(imports, name="import")
    report_cli.register(app)


@app.command("version")
def version() -> None:
    """Print the labreplay version."""
    console.print(__version__)


@app.command("export")
def export(
    store: Path = typer.Option(..., "--store", help="Results store (SQLite file)."),
    out: Path = typer.Option(..., "--out", help="Output directory.", callback=out_dir_check()),
    formats: str = typer.Option("parquet,jsonl", help="Comma list of parquet,csv,jsonl."),
    json_out: bool = JsonOption,
) -> None:
    """Export runs, specs, events, forecasts and scores (schema: labreplay.store.export)."""
    from labreplay.store.export import export_store
    from labreplay.store.sqlite import Store

    with Store(store, readonly=True) as db:
        written = export_store(db, out, tuple(f.strip() for f in formats.split(",") if f.strip()))
    if json_out:
        print_json([str(p) for p in written])
    else:
        console.print(f"wrote {len(written)} files to {out}")


@app.command("cite")
def cite(
    store: Path | None = typer.Option(
        None,
        "--store",
        help="Results store (SQLite file): cite only the papers and datasets its runs used.",
    ),
) -> None:
    """Print BibTeX: labreplay and the three papers, or with --store what that store's runs
    used (the papers of its suites and the datasets their specs read)."""
    from labreplay import cite as citing
    from labreplay.errors import StoreError

    if store is None:
        typer.echo(citing.bibtex(citing.default_keys()), nl=False)  # plain: no markup, no wrap
        return
    if not store.exists():  # anything but a regular file there: `Store` names it
        raise StoreError(f"--store {store}: no such results store")
    suites, sources = citing.store_usage(store)
    text = citing.bibtex(citing.store_keys(suites, sources))
    for name in citing.uncited(sources):
        text += f"\n% {name}: no BibTeX entry; cite it as `labreplay data list` gives it\n"
    typer.echo(text, nl=False)


# (typer's click command: called with click's own arguments, returns what a command returns)
_built: list[Callable[..., object]] = []


def _command() -> Callable[..., object]:
    """The click command of `app`, built once per process: typer rebuilds it on every call
    (a tenth of a second with every suite mounted), which in-process callers (tests, the
    fuzz test's hundreds of calls) pay each time. Built after the suites are mounted."""
    if not _built:
        _built.append(typer.main.get_command(app))
    return _built[0]


def run(argv: list[str] | None = None) -> int:
    """Run one CLI command and return its exit code; expected failures are one line on stderr.

    Only a bug of ours escapes as an exception (its traceback is what a bug report needs).
    """
    _add_suite_groups()
    with scrubbed_output():  # what a command prints can quote a server or an agent: no key
        return _run(argv)


def _run(argv: list[str] | None) -> int:
    try:
        # Without standalone mode click *returns* the code of a `typer.Exit` instead of raising
        # it, so the result must be passed on or `data verify` would exit 0 on a failed check.
        # (It also returns a command's return value: commands return None, never an int.)
        code = _command()(args=argv, standalone_mode=False)
    except typer.Exit as exc:
        return int(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        err_console.print("labreplay: aborted")
        return 130
    except Exception as exc:
        message, exit_code = expected_failure(exc)
        if message is None:
            raise
        report_failure(message)
        return exit_code
    return code if isinstance(code, int) and not isinstance(code, bool) else 0


def main() -> None:
    # For good, not only while the command runs: a bug's traceback is printed after `run`.
    sys.stdout, sys.stderr = scrubbing(sys.stdout), scrubbing(sys.stderr)
    sys.exit(run())


if __name__ == "__main__":
    main()
