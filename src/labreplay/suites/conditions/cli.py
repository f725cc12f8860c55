"""`labreplay conditions compile | run | score | leaderboard | datasets` (RxnOptBench suite)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from labreplay.cli._common import (
    DataDirOption,
    ExecutorOption,
    JsonOption,
    SchedulerOption,
    WorkersOption,
    console,
    print_json,
    progress_bar,
)
from labreplay.errors import LabreplayError

app = typer.Typer(
    help="Reaction-condition questions (RxnOptBench): compile screening tables, run agents, score.",
    no_args_is_help=True,
)


def _csv_list(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


@app.command("datasets")
def datasets_cmd(json_out: bool = JsonOption) -> None:
    """List the built-in screening datasets and the ones not compiled (with the reason)."""
    from labreplay.suites.conditions.datasets import ADAPTERS, NOT_COMPILED

    rows = [{"name": a.name, "source": a.source, **a.rule.to_json()} for a in ADAPTERS.values()]
    if json_out:
        print_json({"datasets": rows, "not_compiled": NOT_COMPILED})
        return
    table = Table(title="conditions datasets")
    for col in ("name", "condition keys", "slice", "max rows", "yield basis"):
        table.add_column(col)
    for r in rows:
        table.add_row(
            r["name"],
            ",".join(r["condition_keys"]),
            ",".join(r["slice_keys"]),
            str(r["max_rows"]),
            r["yield_basis"],
        )
    console.print(table)
    for name, why in NOT_COMPILED.items():
        console.print(f"not compiled: {name}: {why}")


@app.command("compile")
def compile_cmd(
    out: Path = typer.Option(..., "--out", help="Question file to write (JSONL, release layout)."),
    dataset: list[str] = typer.Option(
        None, "--dataset", help="Built-in dataset name (repeatable)."
    ),
    all_datasets: bool = typer.Option(False, "--all", help="Compile every built-in dataset."),
    table: Path | None = typer.Option(None, "--table", help="Your own CSV/XLSX screening table."),
    reaction_cols: str = typer.Option(
        "", "--reaction-cols", help="Columns identifying the reaction."
    ),
    condition_cols: str = typer.Option("", "--condition-cols", help="Condition-axis columns."),
    yield_col: str = typer.Option("", "--yield-col", help="Yield column."),
    ee_col: str | None = typer.Option(None, "--ee-col", help="ee (%) column."),
    dr_col: str | None = typer.Option(None, "--dr-col", help="dr (a:b) column."),
    er_col: str | None = typer.Option(None, "--er-col", help="er (a:b) column."),
    rr_col: str | None = typer.Option(None, "--rr-col", help="rr (a:b) column."),
    yield_scale: str = typer.Option("percent", "--yield-scale", help="percent | fraction."),
    max_rows: int | None = typer.Option(
        None, "--max-rows", help="Cut larger tables into seeded chunks."
    ),
    seed: int = typer.Option(
        0, "--seed", help="Recorded seed (table cuts, option order, precedents)."
    ),
    data_dir: Path | None = DataDirOption,
    json_out: bool = JsonOption,
) -> None:
    """Compile questions from built-in datasets or from your own table."""
    from labreplay.suites.conditions.report import write_compiled

    chosen = sum([bool(dataset), all_datasets, table is not None])
    if chosen != 1:
        raise LabreplayError("give exactly one of --dataset NAME, --all, --table FILE")
    if table is not None:
        from labreplay.suites.conditions.importer import import_table

        if not yield_col:
            raise LabreplayError("--table needs --yield-col (and --condition-cols)")
        compiled = import_table(
            table,
            _csv_list(reaction_cols),
            _csv_list(condition_cols),
            yield_col,
            ee_col=ee_col,
            dr_col=dr_col,
            er_col=er_col,
            rr_col=rr_col,
            yield_scale=yield_scale,
            max_rows=max_rows,
            seed=seed,
        )
    else:
        from labreplay.records.sources import resolve_data_dir
        from labreplay.suites.conditions.compiler import compile_datasets
        from labreplay.suites.conditions.datasets import dataset_names

        names = dataset_names() if all_datasets else list(dataset)
        compiled = compile_datasets(names, resolve_data_dir(data_dir), seed=seed)
    if not compiled.questions:
        raise LabreplayError("no question could be compiled (see the QC: too few distinct rows?)")
    info = write_compiled(compiled, out)
    if json_out:
        print_json({"out": str(out), **info})
        return
    console.print(f"wrote {info['n_questions']} questions to {out} (spec {info['spec_hash'][:12]})")
    table_view = Table(title="questions per dataset")
    table_view.add_column("dataset")
    table_view.add_column("counts")
    for ds, counts in info["counts"].items():
        table_view.add_row(ds, ", ".join(f"{k} {v}" for k, v in counts.items()))
    console.print(table_view)


def _agent(name: str, questions: list[dict[str, Any]], seed: int, model: str | None) -> Any:
    from labreplay.suites.conditions.agents import reference_agent

    if name == "llm":
        try:
            from labreplay.suites.conditions.llm_agent import conditions_agent
        except ImportError as exc:
            raise LabreplayError("the LLM agent is not available in this install") from exc
        return conditions_agent(model=model, seed=seed)
    return reference_agent(name, questions, seed)


@app.command("run")
def run_cmd(
    questions: Path = typer.Option(
        ..., "--questions", help="Question file (ours or the official)."
    ),
    agent: str = typer.Option(..., "--agent", help="random | ranker | llm"),
    store: Path = typer.Option(..., "--store", help="Results store (SQLite)."),
    seed: int = typer.Option(0, "--seed"),
    model: str | None = typer.Option(None, "--model", help="Model name for --agent llm."),
    executor: str = ExecutorOption,
    scheduler: str | None = SchedulerOption,
    workers: int | None = WorkersOption,
    json_out: bool = JsonOption,
) -> None:
    """Answer every question with one agent, score, and store the run (resumes if interrupted)."""
    from labreplay.execute.driver import open_executor
    from labreplay.store.sqlite import Store
    from labreplay.suites.conditions.execute import run_questions
    from labreplay.suites.conditions.questions import load_questions

    qs = load_questions(questions)
    built = _agent(agent, qs, seed, model)  # checks the agent name before anything runs
    with (
        Store(store) as db,
        open_executor(executor, scheduler, workers) as ex,
        progress_bar("answering", len(qs), enabled=not json_out) as bar,
    ):
        result = run_questions(db, questions, agent, seed, model, ex, progress=bar.advance)
    if json_out:
        print_json(result)
        return
    view = Table(title=f"{built.name} on {questions.name} (run {result['run_id']})")
    view.add_column("metric")
    view.add_column("value", justify="right")
    for k, v in result.items():
        if isinstance(v, float):
            view.add_row(k, f"{v:.4f}")
    console.print(view)


@app.command("score")
def score_cmd(
    questions: Path = typer.Option(..., "--questions", help="Question file."),
    predictions: Path = typer.Option(..., "--predictions", help="JSONL: {id, answer|text}."),
    json_out: bool = JsonOption,
) -> None:
    """Official-style evaluator: score a predictions file against a question file."""
    import json

    from labreplay.errors import DataError
    from labreplay.suites.conditions.prompts import normalise_answer
    from labreplay.suites.conditions.questions import agent_view, load_questions
    from labreplay.suites.conditions.scoring import answer_key, score_answer
    from labreplay.suites.conditions.summary import headline, summarise

    qs = load_questions(questions)
    answers: dict[str, Any] = {}
    if not predictions.is_file():
        raise DataError("predictions file not found", file=str(predictions))
    for n, line in enumerate(predictions.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rec = json.loads(line)
                answers[str(rec["id"])] = rec
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise DataError(
                    f"bad prediction: {exc}", file=str(predictions), record=f"line {n}"
                ) from exc
    keys, results = [], []
    for q in qs:
        rec = answers.get(q["id"], {})
        raw = rec.get("answer", {"text": rec["text"]} if "text" in rec else {})
        keys.append(answer_key(q))
        results.append(score_answer(keys[-1], normalise_answer(raw, agent_view(q))))
    summary = summarise(keys, results, seed=0)
    out = {"missing_predictions": sum(1 for q in qs if q["id"] not in answers), **headline(summary)}
    if json_out:
        print_json({**out, "summary": summary})
        return
    for k, v in out.items():
        console.print(f"{k}: {v}")


@app.command("leaderboard")
def leaderboard_cmd(
    store: Path = typer.Option(..., "--store", help="Results store (SQLite)."),
    json_out: bool = JsonOption,
) -> None:
    """Finished conditions runs with their headline metrics and floors."""
    from labreplay.store.sqlite import Store
    from labreplay.suites.conditions.runner import leaderboard

    if not store.is_file():
        raise LabreplayError(f"store {store} does not exist")
    with Store(store) as db:
        board = leaderboard(db)
    if json_out:
        print_json(board)
        return
    cols = (
        "agent",
        "question_file",
        "mc_single_score",
        "mc_all_accuracy",
        "mc_all_score",
        "mc_all_floor_score",
        "fib_hit",
        "fib_strict",
        "fib_score_given_hit",
        "delta_axis",
    )
    view = Table(title="conditions leaderboard")
    for c in cols:
        view.add_column(c)
    for r in board["runs"]:
        view.add_row(
            *(f"{r[c]:.3f}" if isinstance(r.get(c), float) else str(r.get(c)) for c in cols)
        )
    console.print(view)
    if not board["runs"]:
        raise typer.Exit(1)
