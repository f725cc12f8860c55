"""`labreplay conditions serve`: the MCP server of the conditions suite (see `serve.py`)."""

from __future__ import annotations

from pathlib import Path

import typer

from labreplay.sdk.cli import choice, int_range, name_check, seed_check


def serve_cmd(
    questions: Path = typer.Option(..., "--questions", help="Question file (ours or official)."),
    store: Path = typer.Option(..., "--store", help="Results store (SQLite)."),
    agent_name: str = typer.Option(
        "mcp-harness",
        "--agent-name",
        help="Declared name of the model-harness system (the run's agent; keep it to resume).",
        callback=name_check("--agent-name"),
    ),
    model: str | None = typer.Option(None, "--model", help="Declared model (provenance only)."),
    seed: int = typer.Option(0, "--seed", callback=seed_check()),
    transport: str = typer.Option(
        "stdio", help="stdio | http", callback=choice("--transport", ("stdio", "http"))
    ),
    port: int = typer.Option(
        8765, help="Port of the http transport (127.0.0.1).", callback=int_range("--port", 1, 65535)
    ),
) -> None:
    """Serve a question file to any harness over MCP (tools observe/act and typed answers):
    the run `conditions run` plays, with its options and defaults."""
    from labreplay.sdk.harness import serve_suite_run
    from labreplay.suites.conditions.questions import load_questions
    from labreplay.suites.conditions.runner import question_spec
    from labreplay.suites.conditions.serve import QuestionView

    loaded = load_questions(questions)  # a bad file: one line, exit 2, before serving
    view = QuestionView(questions.name, len(loaded))
    serve_suite_run(
        "conditions", [question_spec(questions, loaded)], store, agent_name, seed,
        model=model, view=view, transport=transport, port=port, questions=questions,
    )  # fmt: skip
