"""`labreplay melt ...`: each command builds the options the Python API takes and calls it,
so the CLI and `labreplay.run("melt", ...)` are one door."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from labreplay.sdk.cli import AgentTimeoutOption, IsolateOption, print_json
from labreplay.sdk.engine import load_spec, write_spec

app = typer.Typer(help="meltsuite: forecast held-out melting points (an example suite).")


@app.command("compile")
def compile_cmd(
    out: Path = typer.Option(..., "--out", help="Directory to write the spec file into."),
    seed: int = typer.Option(0, "--seed", help="Split seed."),
    n_queries: int = typer.Option(6, "--n-queries", help="Held-out elements."),
) -> None:
    """Write the spec of one seeded split."""
    from labreplay.sdk.engine import compile

    specs = compile("melt", seed=seed, n_queries=n_queries)
    out.mkdir(parents=True, exist_ok=True)
    for spec in specs:
        write_spec(spec, out / f"{spec.spec_id}.json")
        typer.echo(f"{spec.spec_id} {spec.spec_hash}")


@app.command("run")
def run_cmd(
    specs: list[Path] = typer.Argument(..., help="Spec files."),
    agent: str = typer.Option("context-mean", "--agent", help="Reference agent or MODULE:ATTR."),
    store: Path = typer.Option(..., "--store", help="Results store (SQLite file)."),
    seed: int = typer.Option(0, "--seed", help="Run seed."),
    isolate: bool = IsolateOption,
    agent_timeout: float | None = AgentTimeoutOption,
) -> None:
    """Run an agent on spec files; prints one JSON summary per run."""
    from labreplay.sdk.engine import run

    loaded = [load_spec(p) for p in specs]
    options: dict[str, Any] = {"isolate": isolate}
    if agent_timeout is not None:
        options["agent_timeout_s"] = agent_timeout
    print_json(run("melt", loaded, agent, store, seed=seed, **options))


@app.command("serve")
def serve_cmd(
    spec: Path = typer.Argument(..., help="Spec file."),
    store: Path = typer.Option(..., "--store", help="Results store (SQLite file)."),
    name: str = typer.Option("harness", "--agent-name", help="The harness's declared name."),
    seed: int = typer.Option(0, "--seed", help="Run seed."),
) -> None:
    """Serve one run over MCP (stdio): tools `next_call` and `reply`."""
    from labreplay.sdk.harness import serve_suite_run

    serve_suite_run("melt", [load_spec(spec)], store, name, seed)
