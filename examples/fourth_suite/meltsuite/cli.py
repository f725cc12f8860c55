"""`labreplay melt ...`: each command's flags are generated from the options classes the
Python API builds (`labreplay.sdk.cli.command`), so the CLI and `labreplay.run("melt", ...)`
are one door: the same defaults, checks and refusals."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer

from labreplay.sdk.cli import command, print_json
from labreplay.sdk.engine import load_spec, write_spec
from labreplay.sdk.options import (
    Checked,
    ServeOptions,
    StoreOptions,
    api_options,
    flag,
    out_dirs,
    seeds,
)
from meltsuite.suite import MeltCompileOptions, MeltRunOptions

app = typer.Typer(help="meltsuite: forecast held-out melting points (an example suite).")


@dataclass(frozen=True, kw_only=True)
class OutDir(Checked):
    out: Path = flag(help="Directory to write the spec file into.", check=out_dirs(), api=False)


@dataclass(frozen=True, kw_only=True)
class SpecFiles(Checked):
    specs: list[Path] = flag(help="Spec files.", argument=True, api=False)
    agent: str = flag("context-mean", "Reference agent or MODULE:ATTR.", api=False)
    seed: int = flag(0, "Run seed.", check=seeds(), api=False)


@command(app, "compile", MeltCompileOptions, OutDir)
def compile_cmd(options: MeltCompileOptions, where: OutDir) -> None:
    """Write the spec of one seeded split."""
    from labreplay.sdk.engine import compile

    specs = compile("melt", **api_options(options))
    where.out.mkdir(parents=True, exist_ok=True)
    for spec in specs:
        write_spec(spec, where.out / f"{spec.spec_id}.json")
        typer.echo(f"{spec.spec_id} {spec.spec_hash}")


@command(app, "run", SpecFiles, StoreOptions, MeltRunOptions)
def run_cmd(given: SpecFiles, where: StoreOptions, options: MeltRunOptions) -> None:
    """Run an agent on spec files; prints one JSON summary per run."""
    from labreplay.sdk.engine import run

    loaded = [load_spec(p) for p in given.specs]
    print_json(
        run("melt", loaded, given.agent, where.store, seed=given.seed, **api_options(options))
    )


@dataclass(frozen=True, kw_only=True)
class OneSpec(Checked):
    spec: Path = flag(help="Spec file.", argument=True, api=False)
    seed: int = flag(0, "Run seed.", check=seeds(), api=False)


@command(app, "serve", OneSpec, StoreOptions, ServeOptions)
def serve_cmd(given: OneSpec, where: StoreOptions, serve: ServeOptions) -> None:
    """Serve one run over MCP: tools `next_call` and `reply`."""
    from labreplay.sdk.harness import serve_suite_run

    serve_suite_run(
        "melt", [load_spec(given.spec)], where.store, serve.agent_name, given.seed,
        model=serve.model, transport=serve.transport, port=serve.port,
    )  # fmt: skip
