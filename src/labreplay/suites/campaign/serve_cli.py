"""`labreplay campaign serve`: the MCP server of the campaign suite (see `serve.py`)."""

from __future__ import annotations

from pathlib import Path

import typer

from labreplay.sdk.cli import choice, int_range, name_check, seed_check


def serve_cmd(
    specs: Path = typer.Option(..., "--specs", help="Directory written by `campaign compile`."),
    store: Path = typer.Option(..., "--store", help="Results store (SQLite file)."),
    only: str | None = typer.Option(None, help="Comma list of assignment ids (default: all)."),
    agent_name: str = typer.Option(
        "mcp-harness",
        "--agent-name",
        help="Declared name of the model-harness system (the run's agent; keep it to resume).",
        callback=name_check("--agent-name"),
    ),
    model: str | None = typer.Option(None, "--model", help="Declared model (provenance only)."),
    controls: str = typer.Option(
        "random,no-evidence",
        help="Comma list of control branches (random, no-evidence), or none.",
    ),
    seed: int = typer.Option(0, help="Run seed (control randomness).", callback=seed_check()),
    random_replicates: int | None = typer.Option(
        None,
        "--random-replicates",
        help="Schedule-matched random replicates per assignment (default 3, as `campaign run` "
        "and `labreplay.run`).",
        callback=int_range("--random-replicates", 1, 50),
    ),
    transport: str = typer.Option(
        "stdio", help="stdio | http", callback=choice("--transport", ("stdio", "http"))
    ),
    port: int = typer.Option(
        8765, help="Port of the http transport (127.0.0.1).", callback=int_range("--port", 1, 65535)
    ),
) -> None:
    """Serve the campaigns to any harness over MCP (tools observe/act and one per action):
    the run `campaign run` plays, with its options and defaults."""
    from labreplay.sdk.harness import serve_suite_run
    from labreplay.suites.campaign.api import load_specs, select_specs
    from labreplay.suites.campaign.serve import CampaignView

    chosen = select_specs(load_specs(specs), only)
    serve_suite_run(
        "campaign", chosen, store, agent_name, seed, model=model, view=CampaignView(chosen),
        transport=transport, port=port, controls=controls, random_replicates=random_replicates,
    )  # fmt: skip
