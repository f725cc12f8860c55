"""Entry point of the `labreplay` command."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from typer.core import TyperCommand, TyperGroup, TyperOption

from labreplay import __version__
from labreplay._scrubbed_io import scrubbed_output, scrubbing
from labreplay.cli import data as data_cli
from labreplay.cli import report as report_cli
from labreplay.cli import store as store_cli
from labreplay.cli._common import console, err_console, print_json
from labreplay.cli._errors import expected_failure, report_failure
from labreplay.cli.generate import command
from labreplay.option_fields import Checked, flag, out_dirs
from labreplay.run_options import OutputOptions, StoreOptions

if TYPE_CHECKING:  # the click that typer uses (recent typer vendors it: `typer._click`)
    from typer._click import Command, Context

# `import ...`'s one line, known before any suite is imported
IMPORT_HELP = "Bring results of other tools into a store."


def _plain_help_flag(option: TyperOption | None) -> TyperOption | None:
    """`--help` with the default False: typer (0.2x) coerces a flag that is not given (None)
    through pydantic, which would import it for `labreplay version`."""
    if option is not None and option.default is None:
        option.default = False
    return option


class _PlainCommand(TyperCommand):
    """A command that pays for no coercion when `--help` is not given (`version`)."""

    def get_help_option(self, ctx: Context) -> TyperOption | None:
        return _plain_help_flag(super().get_help_option(ctx))


class _LateGroups(TyperGroup):
    """The top-level group. The suites' groups (`labreplay <suite> ...`) and `labreplay import
    ...` are late: listed from the start by name and one line (`suite_summaries`), imported only
    when a command line names them, so that `labreplay --help` and `version` import no suite
    (nor what the suites import: numpy, pandas, torch, pydantic)."""

    _loaders: dict[str, Callable[[], typer.Typer]] | None = None  # set on first use

    def _place(self) -> dict[str, Callable[[], typer.Typer]]:
        """A placeholder (name and one line, for listings) per late group not mounted yet."""
        if self._loaders is None:
            self._loaders = {}
            for name, (line, load) in _late_groups().items():
                if name not in self.commands:  # `_add_suite_groups` mounted it already
                    self.commands[name] = TyperGroup(name=name, help=line)
                    self._loaders[name] = load
        return self._loaders

    def get_help_option(self, ctx: Context) -> TyperOption | None:
        return _plain_help_flag(super().get_help_option(ctx))

    def list_commands(self, ctx: Context) -> list[str]:
        self._place()
        return super().list_commands(ctx)

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        self._place()
        return super().get_command(ctx, cmd_name)

    def resolve_command(
        self, ctx: Context, args: list[str]
    ) -> tuple[str | None, Command | None, list[str]]:
        load = self._place().pop(args[0], None) if args else None
        if load is not None:  # the group this command line names: the placeholder makes way
            self.commands[args[0]] = _click_group(args[0], load())
        return super().resolve_command(ctx, args)


app = typer.Typer(
    name="labreplay",
    help="Compile recorded experiments into frozen, budgeted evaluation environments for AI "
    "agents; run agents and reference policies in them; score and report.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    cls=_LateGroups,
)
app.add_typer(data_cli.app, name="data")
app.add_typer(store_cli.app, name="store")


def _late_groups() -> dict[str, tuple[str, Callable[[], typer.Typer]]]:
    """name -> (one line, its typer group) of the groups the suites make: one per registered
    suite and `import`. The line is known without importing the suite."""
    from labreplay.suite import suite_summaries

    groups: dict[str, tuple[str, Callable[[], typer.Typer]]] = {
        name: (line, partial(_suite_group, name)) for name, line in suite_summaries().items()
    }
    if groups:
        groups["import"] = (IMPORT_HELP, _import_group)
    return groups


def _suite_group(name: str) -> typer.Typer:
    from labreplay.suite import get_suite

    return get_suite(name).cli()


def _import_group() -> typer.Typer:
    """`labreplay import ...`: the importers suites offer (optional `import_cli()`), one group."""
    from labreplay.suite import ImportsResults, load_suites

    imports = typer.Typer(help=IMPORT_HELP, no_args_is_help=True)
    for suite in load_suites():
        if isinstance(suite, ImportsResults):
            imports.registered_commands.extend(suite.import_cli().registered_commands)
    return imports


def _click_group(name: str, group: typer.Typer) -> Command:
    """`group` as the click command that `app.add_typer(group, name=name)` mounts."""
    holder = typer.Typer(rich_markup_mode=app.rich_markup_mode)
    holder.add_typer(group, name=name)
    return typer.main.get_group(holder).commands[name]


def _add_suite_groups() -> None:
    """Mount every late group on `app` now, for what walks the whole command tree (the CLI
    reference, tests); `run` imports a suite's group only when a command line names it."""
    mounted = {group.name for group in app.registered_groups}
    for name, (_, load) in _late_groups().items():
        if name not in mounted:
            app.add_typer(load(), name=name)


@app.command("version", cls=_PlainCommand)
def version() -> None:
    """Print the labreplay version."""
    console.print(__version__)


@dataclass(frozen=True, kw_only=True)
class ExportArgs(Checked):
    """Where `export` writes, and in which formats."""

    out: Path = flag(help="Output directory.", check=out_dirs(), api=False)
    formats: str = flag("parquet,jsonl", "Comma list of parquet,csv,jsonl.", api=False)


@command(app, "export", StoreOptions, ExportArgs, OutputOptions)
def export(where: StoreOptions, args: ExportArgs, output: OutputOptions) -> None:
    """Export runs, specs, events, forecasts and scores (schema: labreplay.store.export)."""
    from labreplay.store.export import export_store
    from labreplay.store.sqlite import Store

    formats = tuple(f.strip() for f in args.formats.split(",") if f.strip())
    with Store(where.store, readonly=True) as db:
        written = export_store(db, args.out, formats)
    if output.json_out:
        print_json([str(p) for p in written])
    else:
        console.print(f"wrote {len(written)} files to {args.out}")


@dataclass(frozen=True, kw_only=True)
class CiteArgs(Checked):
    """The store whose runs `cite` cites (none: labreplay and the three papers)."""

    store: Path | None = flag(
        None,
        "Results store (SQLite file): cite only the papers and datasets its runs used.",
        api=False,
    )


@command(app, "cite", CiteArgs)
def cite(args: CiteArgs) -> None:
    """Print BibTeX: labreplay and the three papers, or with --store what that store's runs
    used (the papers of its suites and the datasets their specs read)."""
    from labreplay import cite as citing
    from labreplay.errors import StoreError

    store = args.store
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


report_cli.register(app)

# (typer's click command: called with click's own arguments, returns what a command returns)
_built: list[Callable[..., object]] = []


def _command() -> Callable[..., object]:
    """The click command of `app`, built once per process: typer rebuilds it on every call
    (a tenth of a second with every suite mounted), which in-process callers (tests, the
    fuzz test's hundreds of calls) pay each time. A suite's group joins it when first named."""
    if not _built:
        _built.append(typer.main.get_command(app))
    return _built[0]


def run(argv: list[str] | None = None) -> int:
    """Run one CLI command and return its exit code; expected failures are one line on stderr.

    Only a bug of ours escapes as an exception (its traceback is what a bug report needs).
    """
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
