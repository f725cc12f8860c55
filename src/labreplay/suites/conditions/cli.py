"""`labreplay conditions datasets | compile | run | serve | score | leaderboard` (RxnOptBench
suite). The flags are generated from the options classes (`conditions.options` and the shared
groups), which the Python API builds from its keyword arguments too."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import typer
from rich.table import Table

from labreplay.errors import LabreplayError
from labreplay.sdk.cli import (
    command,
    console,
    print_json,
    print_table,
    progress_bar,
    progress_printer,
)
from labreplay.sdk.options import (
    DataOptions,
    ExecutorOptions,
    LlmOptions,
    OutputOptions,
    ServeOptions,
    StoreOptions,
    api_options,
)
from labreplay.suites.conditions.options import (
    ConditionsCompileOptions,
    ConditionsOptions,
    ConditionsRunOptions,
    ConditionsSourceArgs,
    QuestionAgentArgs,
    QuestionSource,
    ScoreArgs,
)

app = typer.Typer(
    help="Reaction-condition questions (RxnOptBench): compile screening tables, run agents, score.",
    no_args_is_help=True,
)


def _csv_list(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


@command(app, "datasets", OutputOptions)
def datasets_cmd(output: OutputOptions) -> None:
    """List the built-in screening datasets and the ones not compiled (with the reason)."""
    from labreplay.suites.conditions.datasets import ADAPTERS, NOT_COMPILED

    rows = [{"name": a.name, "source": a.source, **a.rule.to_json()} for a in ADAPTERS.values()]
    if output.json_out:
        print_json({"datasets": rows, "not_compiled": NOT_COMPILED})
        return
    table = Table(title="conditions datasets")
    for col in ("name", "condition keys", "slice", "max options", "yield basis"):
        table.add_column(col)
    for r in rows:
        table.add_row(
            r["name"],
            ", ".join(r["condition_keys"]),
            ", ".join(r["slice_keys"]),
            str(r["max_options"]),
            r["yield_basis"],
        )
    print_table(table, "name")
    for name, why in NOT_COMPILED.items():
        console.print(f"not compiled: {name}: {why}")


def _pairs(values: list[str] | None, flag: str) -> dict[str, str]:
    """KEY=VALUE items (each possibly a comma list) -> dict; a malformed item exits 2."""
    out: dict[str, str] = {}
    for item in [v for raw in values or [] for v in _csv_list(raw)]:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise LabreplayError(f"{flag} expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out


@command(app, "compile", ConditionsCompileOptions, ConditionsSourceArgs, DataOptions, OutputOptions)
def compile_cmd(
    options: ConditionsCompileOptions,
    source: ConditionsSourceArgs,
    data: DataOptions,
    output: OutputOptions,
) -> None:
    """Compile questions from built-in datasets or from your own table."""
    from labreplay.suites.conditions.report import (
        profile_lines,
        qc_lines,
        varied_lines,
        write_compiled,
    )

    out = options.out
    if source.table is not None:
        from labreplay.suites.conditions.importer import ImportOptions, import_table

        compiled = import_table(
            source.table,
            ImportOptions(
                reaction_cols=_csv_list(source.reaction_cols),
                condition_cols=_csv_list(source.condition_cols),
                yield_col=source.yield_col or None,
                ee_col=source.ee_col,
                dr_col=source.dr_col,
                er_col=source.er_col,
                rr_col=source.rr_col,
                ddg_col=source.ddg_col,
                temperature_k=source.temperature_k,
                objective=source.objective,
                yield_scale=source.yield_scale,
                response=source.response or "yield",
                smiles_cols=_pairs([source.smiles_cols], "--smiles-cols"),
                product_col=source.product_col,
                constants=_pairs(source.constant, "--constant"),
                roles=_pairs(source.role, "--role"),
                slice_cols=_csv_list(source.slice_cols),
                vary_cols=[c for raw in source.vary or [] for c in _csv_list(raw)],
                axis_kinds=_pairs(source.axis_kind, "--axis-kind"),
                merge_by=source.merge_by,
                force_scale=source.force_scale,
                dataset=source.name,
                allow_out_of_range=source.allow_out_of_range,
                seed=options.seed,
                max_options=options.max_options,
                max_tables=options.max_tables,
                min_options=options.min_options,
                fib_max_hit_floor=options.fib_max_hit_floor,
            ),
        )
    else:
        from labreplay.sdk.data import resolve_data_dir
        from labreplay.suites.conditions.compiler import compile_datasets
        from labreplay.suites.conditions.datasets import dataset_names

        compiled = compile_datasets(
            dataset_names() if source.all_datasets else list(source.dataset or []),
            resolve_data_dir(data.data_dir),
            options.seed,
            options.rules(),
            data.allow_modified_data,
            progress=progress_printer(output.quiet),
        )
    if not compiled.questions:
        raise LabreplayError(
            "no question could be compiled: "
            + " | ".join(
                qc_lines({"qc": compiled.qc, "skipped_by_dataset": compiled.skipped_by_dataset})
            )
        )
    info = write_compiled(compiled, out)
    if output.json_out:
        print_json({"out": str(out), **info})
        return
    for line in [*qc_lines(info), *varied_lines(compiled.tables), *profile_lines(info["profile"])]:
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    console.print(f"wrote {info['n_questions']} questions to {out} (spec {info['spec_hash'][:12]})")
    if info.get("unverified_data"):
        console.print(
            f"UNVERIFIED DATA (--allow-modified-data): {', '.join(info['unverified_data'])}",
            markup=False,
        )
    table_view = Table(title="questions per dataset")
    table_view.add_column("dataset")
    table_view.add_column("counts")
    for ds, counts in info["counts"].items():
        table_view.add_row(ds, ", ".join(f"{k} {v}" for k, v in counts.items()))
    print_table(table_view, "dataset")


@command(
    app, "run", QuestionSource, QuestionAgentArgs, StoreOptions, ConditionsRunOptions,
    LlmOptions, ExecutorOptions, OutputOptions,
)  # fmt: skip
def run_cmd(
    source: QuestionSource,
    args: QuestionAgentArgs,
    where: StoreOptions,
    run: ConditionsRunOptions,
    llm: LlmOptions,
    execution: ExecutorOptions,
    output: OutputOptions,
) -> None:
    """Answer every question with one agent, score, and store the run (resumes if interrupted)."""
    from labreplay.sdk import first_in_seeded_order
    from labreplay.sdk.agents import is_llm_agent
    from labreplay.sdk.engine import Store
    from labreplay.suites.conditions.llm_run import (
        check_answer_budget,
        print_conditions_dry_run,
        print_usage,
    )
    from labreplay.suites.conditions.questions import load_questions
    from labreplay.suites.conditions.run import resolve_conditions_agent, run_conditions
    from labreplay.suites.conditions.runner import question_spec

    llm.check_executor(execution.executor)
    run.check_executor(execution.executor)
    run.say_without_sandbox()
    questions, seed = source.questions, source.seed
    qs = load_questions(questions)
    chosen = first_in_seeded_order(qs, run.limit, seed, "conditions")
    is_llm = is_llm_agent(args.agent)
    model = args.agent if is_llm else run.model  # `openai:MODEL`, or `llm` with --model
    price = llm.price((model if is_llm or args.agent == "llm" else args.agent) or "")
    # The same options classes, defaults and runner as `labreplay.run("conditions", ...)`.
    run = dataclasses.replace(run, questions=questions, model=model)
    try:  # every agent problem is one line, exit 2, before the store exists
        built = resolve_conditions_agent(args.agent, seed=seed, **api_options(run, llm))
    except ImportError as exc:
        raise LabreplayError("the LLM agent is not available in this install") from exc
    if built.builtin == "llm":
        check_answer_budget(chosen, llm.max_tokens)
    if args.dry_run:
        print_conditions_dry_run(built.probe or built.make(), chosen, price, output.json_out)
        return
    with (  # the executor first: an unusable scheduler is refused before a store exists
        execution.open() as ex,
        Store(where.store) as db,
        progress_bar("answering", len(chosen), not (output.json_out or output.quiet)) as bar,
    ):
        options = api_options(dataclasses.replace(run, progress=bar.advance), llm)
        (result,) = run_conditions(
            [question_spec(questions, qs)], built, db, seed=seed, executor=ex, **options
        )
    if output.json_out:
        print_json(result)
        return
    view = Table(title=f"{built.name} on {questions.name} (run {result['run_id']})")
    view.add_column("metric")
    view.add_column("value", justify="right")
    for k, v in result.items():
        if isinstance(v, float):
            view.add_row(k, f"{v:.4f}")
    print_table(view, "metric")
    print_usage(console, result, price)


@command(app, "serve", QuestionSource, StoreOptions, ConditionsOptions, ServeOptions)
def serve_cmd(
    source: QuestionSource, where: StoreOptions, conditions: ConditionsOptions, serve: ServeOptions
) -> None:
    """Serve a question file to any harness over MCP (tools observe/act and typed answers):
    the run `conditions run` plays, with its options and defaults."""
    from labreplay.sdk import first_in_seeded_order
    from labreplay.sdk.harness import serve_suite_run
    from labreplay.suites.conditions.questions import load_questions
    from labreplay.suites.conditions.runner import question_spec
    from labreplay.suites.conditions.serve import QuestionView

    loaded = load_questions(source.questions)  # a bad file: one line, exit 2, before serving
    chosen = first_in_seeded_order(loaded, conditions.limit, source.seed, "conditions")
    serve_suite_run(
        "conditions", [question_spec(source.questions, loaded)], where.store, serve.agent_name,
        source.seed, model=serve.model, view=QuestionView(source.questions.name, len(chosen)),
        transport=serve.transport, port=serve.port, questions=source.questions,
        **api_options(conditions),
    )  # fmt: skip


@command(app, "score", ScoreArgs, OutputOptions)
def score_cmd(args: ScoreArgs, output: OutputOptions) -> None:
    """Official-style evaluator: score a predictions file against a question file.
    Every malformed prediction (option out of range or not an integer, a bad FIB slot, an
    unknown or repeated id) is named on stderr, one a line; the command then exits 2 unless
    --lenient (see the README for the format)."""
    import sys

    from labreplay.suites.conditions.evaluate import check_predictions, problem_lines, score_read
    from labreplay.suites.conditions.questions import load_questions

    qs = load_questions(args.questions)
    read = check_predictions(args.predictions, {q["id"]: q for q in qs})
    head = "warning: malformed prediction" if args.lenient else "malformed prediction"
    for line in problem_lines(read.problems):
        sys.stderr.write(f"labreplay: {head}: {line}\n")
    if read.problems and not args.lenient:
        raise LabreplayError(
            f"{args.predictions}: {len(read.problems)} malformed prediction(s) listed above; fix "
            "them, or pass --lenient to score them as invalid"
        )
    out = score_read(qs, read)
    if read.problems:
        sys.stderr.write(
            f"labreplay: warning: --lenient: {len(read.problems)} malformed prediction(s); "
            f"{len(read.invalid_ids)} question(s) scored as invalid, the rest (unknown ids, "
            "lines that are not a prediction) ignored\n"
        )
    if output.json_out:
        print_json(out)
        return
    for k, v in out.items():
        if k not in {"summary", "malformed"}:
            console.print(f"{k}: {v}")


@command(app, "leaderboard", StoreOptions, OutputOptions)
def leaderboard_cmd(where: StoreOptions, output: OutputOptions) -> None:
    """Finished conditions runs with their headline metrics and floors."""
    from labreplay.sdk.engine import Store
    from labreplay.suites.conditions.runner import leaderboard

    with Store(where.store, readonly=True) as db:
        board = leaderboard(db)
    if output.json_out:
        print_json(board)
        return
    cols = (
        "agent",
        "question_file",
        "mc_single_score",
        "mc_all_accuracy",
        "mc_all_score",
        "mc_all_floor_score",
        "skill_mc_all_score",  # minus the usual winner (reference row), paired, tables resampled
        "fib_hit",
        "fib_strict",
        "fib_score_given_hit",
        "delta_axis",
        "precedent_lift_mc_all_score",  # read against the reference lines printed below
        "prompt_tokens",
        "completion_tokens",
        "cost_usd",
    )
    from labreplay.suites.conditions.summary import HEADLINE_LABELS

    labels = {**HEADLINE_LABELS, **BOARD_LABELS}  # the report's names for the same numbers
    view = Table(title="conditions leaderboard")
    for c in cols:
        view.add_column(labels[c])
    for i, r in enumerate(board["runs"]):
        cells = [_cell(r, c) for c in cols]
        if r.get("unverified_data"):  # the question_file column
            cells[1] += " UNVERIFIED"
        view.add_row(*cells)
        name = str(r["question_file"])
        last = i + 1 == len(board["runs"]) or board["runs"][i + 1]["question_file"] != name
        if last and name in board["usual_winner"]:  # the file's reference row, never ranked
            row = {"agent": "usual_winner (reference)", "question_file": name}
            view.add_row(*(_cell({**row, **board["usual_winner"][name]}, c) for c in cols))
    print_table(view, "agent")
    from labreplay.suites.conditions.precedent_audit import precedent_reference_lines

    for name, lifts in board["precedent_references"].items():
        withheld = board["withheld_twins"].get(name, {})
        for line in precedent_reference_lines(lifts, withheld):  # beside the lifts
            console.print(f"{name}: {line}", markup=False)
    if board["unverified_data"]:
        console.print(
            f"UNVERIFIED DATA: {len(board['unverified_data'])} question file(s) were compiled "
            "from data files whose sha256 differs from the manifest (--allow-modified-data): "
            + ", ".join(board["unverified_data"]),
            markup=False,
        )
    from labreplay.suites.conditions.robustness import audit_lines

    for line in audit_lines(board["utility_audit"]):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    from labreplay.sdk.agents import usage_line

    for f in board["failed"]:  # never ranked, but what they spent is shown
        usage = f.get("usage")
        spent = f"; {usage_line(usage)}" if isinstance(usage, Mapping) else ""
        console.print(
            f"not ranked (failed, {f.get('cause_kind') or f.get('cause') or 'no cause'}): "
            f"{f['agent']} on {f['question_file']} (seed {f['seed']}){spent}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    if not board["runs"]:
        raise typer.Exit(1)


# The leaderboard's columns that are not a run's headline score (`HEADLINE_LABELS`).
BOARD_LABELS = {
    "agent": "agent",
    "question_file": "question file",
    "skill_mc_all_score": "skill over the usual winner, MC_all score [95% CI]",
    "prompt_tokens": "prompt tokens",
    "completion_tokens": "completion tokens",
    "cost_usd": "cost (USD)",
}


def _cell(row: Mapping[str, object], column: str) -> str:
    """A board cell. USD is what the run's calls recorded: 'unknown' for a model with no price
    (never shown as $0), '-' for an agent that called no model."""
    value = row.get(column)
    if column == "cost_usd":
        if isinstance(value, int | float):
            return f"${value:.4f}"
        return "unknown" if row.get("llm_calls") else "-"
    ci = row.get(f"{column}_ci95")
    if isinstance(value, float) and isinstance(ci, list):  # a paired difference: signed
        return f"{value:+.3f} [{ci[0]:+.3f}, {ci[1]:+.3f}]"
    if isinstance(value, float):
        return f"{value:.3f}"
    return "-" if value is None else str(value)
