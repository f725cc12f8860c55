"""`labreplay conditions compile | run | score | leaderboard | datasets` (RxnOptBench suite)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import typer
from rich.table import Table

from labreplay.errors import LabreplayError
from labreplay.sdk.cli import (
    AgentTimeoutOption,
    ApiKeyEnvOption,
    BaseUrlOption,
    DataDirOption,
    DryRunOption,
    ExecutorOption,
    IsolateOption,
    JsonOption,
    LimitOption,
    LlmSeedOption,
    MaxCallsOption,
    MaxCallTimeOption,
    MaxCostOption,
    MaxRetriesOption,
    MaxRetryWaitOption,
    MaxTimeOption,
    MaxTokensOption,
    MaxTokensTotalOption,
    MaxTotalCostOption,
    PriceOption,
    PricesOption,
    ProviderOption,
    QuietOption,
    ReasoningEffortOption,
    ReasoningTokensOption,
    RequireSandboxOption,
    SchedulerOption,
    TemperatureOption,
    TimeoutOption,
    TokenParamOption,
    WorkersOption,
    agent_options,
    check_isolation,
    console,
    count_check,
    finite_float_check,
    int_range,
    out_file_check,
    print_json,
    print_table,
    progress_bar,
    progress_printer,
    seed_check,
)

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


def _spec_path(out: Path) -> Path:
    from labreplay.suites.conditions.report import spec_path

    return spec_path(out)


@app.command("compile")
def compile_cmd(
    out: Path = typer.Option(
        ...,
        "--out",
        help="Question file to write (JSONL, release layout); its spec goes beside it.",
        callback=out_file_check(beside=lambda out: [_spec_path(out)]),
    ),
    dataset: list[str] = typer.Option(
        None, "--dataset", help="Built-in dataset name (repeatable)."
    ),
    all_datasets: bool = typer.Option(False, "--all", help="Compile every built-in dataset."),
    table: Path | None = typer.Option(None, "--table", help="Your own CSV/XLSX screening table."),
    reaction_cols: str = typer.Option(
        "", "--reaction-cols", help="Columns identifying the reaction (substrates)."
    ),
    condition_cols: str = typer.Option("", "--condition-cols", help="Condition-axis columns."),
    slice_cols: str = typer.Option(
        "",
        "--slice-cols",
        help="Condition columns whose values define separate tables (one table per value).",
    ),
    vary: list[str] = typer.Option(
        None,
        "--vary",
        help="Condition column a table varies (repeatable). Default for --table: the axis set "
        "keeping the most rows, with no additive/inhibitor axis unless it keeps more, then the "
        "most axes per table, species before process settings (printed; see --axis-kind).",
    ),
    axis_kind: list[str] = typer.Option(
        None,
        "--axis-kind",
        help="COL=species|process|additive: override the kind read from a condition column's "
        "name (additive/inhibitor axes are not varied alone by default).",
    ),
    name: str | None = typer.Option(
        None,
        "--name",
        help="Dataset name (seeds and ids); default: derived from the table's content hash.",
    ),
    yield_col: str = typer.Option("", "--yield-col", help="Yield column (optional)."),
    ee_col: str | None = typer.Option(None, "--ee-col", help="ee (%) of the desired enantiomer."),
    dr_col: str | None = typer.Option(None, "--dr-col", help="dr 'a:b', a = desired isomer."),
    er_col: str | None = typer.Option(None, "--er-col", help="er 'a:b', a = desired enantiomer."),
    rr_col: str | None = typer.Option(None, "--rr-col", help="rr 'a:b', a = desired isomer."),
    ddg_col: str | None = typer.Option(
        None, "--ddg-col", help="ΔΔG‡ (kcal/mol, positive favours the desired enantiomer)."
    ),
    temperature_k: float | None = typer.Option(
        None,
        "--temperature-k",
        help="Temperature (K) converting ΔΔG‡ to ee.",
        callback=finite_float_check("--temperature-k", lo=0, hi=10_000, lo_open=True),
    ),
    objective: str | None = typer.Option(
        None,
        "--objective",
        help="utility | yield | selectivity (default: utility, or "
        "selectivity when there is no yield column).",
    ),
    yield_scale: str = typer.Option("percent", "--yield-scale", help="percent | fraction."),
    response: str | None = typer.Option(
        None,
        "--response",
        help="yield | ratio: what --yield-col holds (default yield). A ratio (product/internal-"
        "standard ratio, peak area) is ranked as recorded, never shown as a yield, its noise "
        "floors relative to its largest value; a column named like one is refused as a yield.",
    ),
    force_scale: bool = typer.Option(
        False,
        "--force-scale",
        help="Keep --yield-scale although the values look like the other scale (QC warning).",
    ),
    merge_by: str = typer.Option(
        "smiles",
        "--merge-by",
        help="smiles | name: option identity where --smiles-cols gives structures.",
    ),
    allow_out_of_range: bool = typer.Option(
        False, "--allow-out-of-range", help="Keep yields > 100% / |ee| > 100 (clipped, flagged)."
    ),
    smiles_cols: str = typer.Option(
        "", "--smiles-cols", help="NAME_COL=SMILES_COL,... (validated with RDKit)."
    ),
    product_col: str | None = typer.Option(None, "--product-col", help="Product column."),
    constant: list[str] = typer.Option(
        None, "--constant", help="KEY=VALUE condition constant for the whole table (repeatable)."
    ),
    role: list[str] = typer.Option(
        None, "--role", help="COL=ROLE: map a condition column onto an RxnOptBench role."
    ),
    max_options: int = typer.Option(
        12,
        "--max-options",
        help="Larger reaction groups are sliced into tables of <= this.",
        callback=count_check("--max-options"),
    ),
    max_tables: int = typer.Option(
        10,
        "--max-tables",
        help="At most this many sliced tables per reaction (seeded).",
        callback=count_check("--max-tables"),
    ),
    min_options: int = typer.Option(
        3, "--min-options", help="An MC question needs this many options (after precedents)."
    ),
    fib_max_hit_floor: float = typer.Option(
        0.8, "--fib-max-hit-floor", help="Ask FIB only where its Hit floor is at most this."
    ),
    seed: int = typer.Option(
        0,
        "--seed",
        help="Recorded seed (table cuts, option order, precedents).",
        callback=seed_check(),
    ),
    data_dir: Path | None = DataDirOption,
    allow_modified_data: bool = typer.Option(
        False,
        "--allow-modified-data",
        help="Compile built-in datasets whose files differ from the manifest; the spec and "
        "every question are then marked UNVERIFIED.",
    ),
    json_out: bool = JsonOption,
    quiet: bool = QuietOption,
) -> None:
    """Compile questions from built-in datasets or from your own table."""
    from labreplay.suites.conditions.report import (
        profile_lines,
        qc_lines,
        varied_lines,
        write_compiled,
    )

    chosen = sum([bool(dataset), all_datasets, table is not None])
    if chosen != 1:
        raise LabreplayError("give exactly one of --dataset NAME, --all, --table FILE")
    check_compile_options(
        max_options=max_options,
        min_options=min_options,
        max_tables=max_tables,
        fib_max_hit_floor=fib_max_hit_floor,
        temperature_k=temperature_k,
        yield_scale=yield_scale,
        objective=objective,
        merge_by=merge_by,
        response=response,
    )
    if table is None:
        given = [
            flag
            for flag, value in (
                ("--reaction-cols", reaction_cols),
                ("--condition-cols", condition_cols),
                ("--slice-cols", slice_cols),
                ("--vary", vary),
                ("--axis-kind", axis_kind),
                ("--name", name),
                ("--yield-col", yield_col),
                ("--smiles-cols", smiles_cols),
                ("--product-col", product_col),
                ("--constant", constant),
                ("--role", role),
                ("--ddg-col", ddg_col),
                ("--ee-col", ee_col),
                ("--er-col", er_col),
                ("--dr-col", dr_col),
                ("--rr-col", rr_col),
                ("--response", response),
            )
            if value
        ]
        if given:
            raise LabreplayError(
                f"{given[0]} describes your own table: use it with --table FILE "
                "(built-in datasets declare their columns)"
            )
    if table is not None:
        from labreplay.suites.conditions.importer import ImportOptions, import_table

        compiled = import_table(
            table,
            ImportOptions(
                reaction_cols=_csv_list(reaction_cols),
                condition_cols=_csv_list(condition_cols),
                yield_col=yield_col or None,
                ee_col=ee_col,
                dr_col=dr_col,
                er_col=er_col,
                rr_col=rr_col,
                ddg_col=ddg_col,
                temperature_k=temperature_k,
                objective=objective,
                yield_scale=yield_scale,
                response=response or "yield",
                smiles_cols=_pairs([smiles_cols], "--smiles-cols"),
                product_col=product_col,
                constants=_pairs(constant, "--constant"),
                roles=_pairs(role, "--role"),
                slice_cols=_csv_list(slice_cols),
                vary_cols=[c for raw in vary or [] for c in _csv_list(raw)],
                axis_kinds=_pairs(axis_kind, "--axis-kind"),
                max_options=max_options,
                max_tables=max_tables,
                min_options=min_options,
                merge_by=merge_by,
                force_scale=force_scale,
                dataset=name,
                fib_max_hit_floor=fib_max_hit_floor,
                allow_out_of_range=allow_out_of_range,
                seed=seed,
            ),
        )
    else:
        from labreplay.sdk.data import resolve_data_dir
        from labreplay.suites.conditions.compiler import compile_datasets
        from labreplay.suites.conditions.datasets import dataset_names

        names = dataset_names() if all_datasets else list(dataset)
        overrides = {
            "max_options": max_options,
            "min_options": min_options,
            "max_tables": max_tables,
            "fib_max_hit_floor": fib_max_hit_floor,
        }
        compiled = compile_datasets(
            names,
            resolve_data_dir(data_dir),
            seed,
            overrides,
            allow_modified_data,
            progress=progress_printer(quiet),
        )
    if not compiled.questions:
        raise LabreplayError(
            "no question could be compiled: "
            + " | ".join(
                qc_lines({"qc": compiled.qc, "skipped_by_dataset": compiled.skipped_by_dataset})
            )
        )
    info = write_compiled(compiled, out)
    if json_out:
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


def check_compile_options(
    *,
    max_options: int,
    min_options: int,
    max_tables: int,
    fib_max_hit_floor: float,
    temperature_k: float | None,
    yield_scale: str,
    objective: str | None,
    merge_by: str,
    response: str | None = None,
) -> None:
    """Every compile option checked before any file is read or written (one line, exit 2)."""
    import math

    from labreplay.suites.conditions.outcomes import OBJECTIVES

    if max_options < 2:
        raise LabreplayError(f"--max-options must be at least 2, got {max_options}")
    if not 2 <= min_options <= max_options:
        raise LabreplayError(
            f"--min-options must be between 2 and --max-options ({max_options}), got {min_options}"
        )
    if max_tables < 1:
        raise LabreplayError(f"--max-tables must be at least 1, got {max_tables}")
    if not (math.isfinite(fib_max_hit_floor) and 0 < fib_max_hit_floor <= 1):
        raise LabreplayError(f"--fib-max-hit-floor must be in (0, 1], got {fib_max_hit_floor}")
    if temperature_k is not None and not (math.isfinite(temperature_k) and temperature_k > 0):
        raise LabreplayError(
            f"--temperature-k must be a finite kelvin value > 0, got {temperature_k}"
        )
    if yield_scale not in {"percent", "fraction"}:
        raise LabreplayError(f"--yield-scale must be percent or fraction, got {yield_scale!r}")
    if objective is not None and objective not in OBJECTIVES:
        raise LabreplayError(
            f"--objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}"
        )
    if merge_by not in {"smiles", "name"}:
        raise LabreplayError(f"--merge-by must be smiles or name, got {merge_by!r}")
    if response is not None and response not in {"yield", "ratio"}:
        raise LabreplayError(f"--response must be yield or ratio, got {response!r}")


@app.command("run")
def run_cmd(
    questions: Path = typer.Option(
        ..., "--questions", help="Question file (ours or the official)."
    ),
    agent: str = typer.Option(
        ...,
        "--agent",
        help="random | ranker | openai:MODEL (or llm with --model MODEL) | a registered agent | "
        "MODULE:ATTR (your QuestionAgent class or factory, importable from PYTHONPATH or the "
        "working directory).",
    ),
    store: Path = typer.Option(..., "--store", help="Results store (SQLite)."),
    seed: int = typer.Option(0, "--seed", callback=seed_check()),
    model: str | None = typer.Option(None, "--model", help="Model name for --agent llm."),
    base_url: str | None = BaseUrlOption,
    provider: str | None = ProviderOption,
    api_key_env: str | None = ApiKeyEnvOption,
    temperature: float | None = TemperatureOption,
    llm_seed: int | None = LlmSeedOption,
    max_tokens: int | None = MaxTokensOption,
    timeout: float | None = TimeoutOption,
    max_retries: int | None = MaxRetriesOption,
    token_param: str | None = TokenParamOption,
    reasoning_effort: str | None = ReasoningEffortOption,
    reasoning_tokens: int | None = ReasoningTokensOption,
    max_retry_wait: float | None = MaxRetryWaitOption,
    max_call_time: float | None = MaxCallTimeOption,
    max_concurrency: int | None = typer.Option(
        None,
        "--max-concurrency",
        help="LLM questions in flight at once (default 4).",
        callback=int_range("--max-concurrency", 1, 256),
    ),
    max_calls: int | None = MaxCallsOption,
    max_tokens_total: int | None = MaxTokensTotalOption,
    max_time: float | None = MaxTimeOption,
    price_per_mtok: str | None = PriceOption,
    prices: str | None = PricesOption,
    max_cost: float | None = MaxCostOption,
    max_total_cost: float | None = MaxTotalCostOption,
    dry_run: bool = DryRunOption,
    limit: int | None = LimitOption,
    executor: str = ExecutorOption,
    scheduler: str | None = SchedulerOption,
    workers: int | None = WorkersOption,
    isolate: bool = IsolateOption,
    agent_timeout: float | None = AgentTimeoutOption,
    require_sandbox: bool = RequireSandboxOption,
    json_out: bool = JsonOption,
) -> None:
    """Answer every question with one agent, score, and store the run (resumes if interrupted)."""
    from labreplay.sdk import first_in_seeded_order
    from labreplay.sdk.agents import is_llm_agent, run_price
    from labreplay.sdk.engine import Store, open_executor
    from labreplay.suites.conditions.execute import resolve_question_agent
    from labreplay.suites.conditions.llm_run import (
        check_answer_budget,
        print_conditions_dry_run,
        print_usage,
    )
    from labreplay.suites.conditions.questions import load_questions

    if is_llm_agent(agent):
        agent, model = "llm", agent
    price = run_price(model if agent == "llm" else agent, price_per_mtok, prices)
    options = agent_options(
        base_url=base_url,
        api_key_env=api_key_env,
        temperature=temperature,
        llm_seed=llm_seed,
        max_tokens=max_tokens,
        timeout=timeout,
        max_retries=max_retries,
        max_calls=max_calls,
        max_tokens_total=max_tokens_total,
        max_time=max_time,
        prices=prices,
        max_cost=max_cost,
        max_total_cost=max_total_cost,
        provider=provider,
        token_param=token_param,
        reasoning_effort=reasoning_effort,
        reasoning_tokens=reasoning_tokens,
        max_retry_wait=max_retry_wait,
        max_call_time=max_call_time,
    )
    if max_concurrency is not None:
        options["max_concurrency"] = max_concurrency
    if max_total_cost is not None and executor == "dask":
        # Its spend is counted in this process; dask workers are other processes.
        raise LabreplayError(
            "--max-total-cost counts the spend of this process: use --executor in-process or "
            "threads with it, not dask"
        )
    qs = load_questions(questions)
    chosen = first_in_seeded_order(qs, limit, seed, "conditions")
    if isolate and executor != "in-process":
        raise LabreplayError("--isolate runs with --executor in-process (one child per run)")
    check_isolation(isolate, require_sandbox)
    from labreplay.suites.conditions.options import parse_run_options
    from labreplay.suites.conditions.run import run_conditions
    from labreplay.suites.conditions.runner import question_spec

    # The same options class, defaults and runner as `labreplay.run("conditions", ...)`.
    api_options = {
        **options,
        "questions": questions,
        "model": model,
        "limit": limit,
        "isolate": isolate,
        "agent_timeout_s": agent_timeout,
    }
    if "seed" in api_options:  # the LLM sampling seed; `seed` is the run seed
        api_options["llm_seed"] = api_options.pop("seed")
    parse_run_options(api_options)  # refused before any store exists
    spec = question_spec(questions, qs)
    try:  # every agent problem is one line, exit 2, before the store exists
        built = resolve_question_agent(
            agent, chosen, seed, model, options, isolate=isolate, agent_timeout_s=agent_timeout
        )
    except ImportError as exc:
        raise LabreplayError("the LLM agent is not available in this install") from exc
    if agent == "llm":
        check_answer_budget(chosen, max_tokens)
    if dry_run:
        print_conditions_dry_run(built.probe or built.make(), chosen, price, json_out)
        return
    with (  # the executor first: an unusable scheduler is refused before a store exists
        open_executor(executor, scheduler, workers) as ex,
        Store(store) as db,
        progress_bar("answering", len(chosen), enabled=not json_out) as bar,
    ):
        (result,) = run_conditions(
            [spec], built, db, seed=seed, executor=ex, progress=bar.advance, **api_options
        )
    if json_out:
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


@app.command("score")
def score_cmd(
    questions: Path = typer.Option(..., "--questions", help="Question file."),
    predictions: Path = typer.Option(..., "--predictions", help="JSONL: {id, answer|text}."),
    lenient: bool = typer.Option(
        False,
        "--lenient",
        help="Score malformed predictions as invalid (and count them) instead of exiting 2.",
    ),
    json_out: bool = JsonOption,
) -> None:
    """Official-style evaluator: score a predictions file against a question file.
    Every malformed prediction (option out of range or not an integer, a bad FIB slot, an
    unknown or repeated id) is named on stderr, one a line; the command then exits 2 unless
    --lenient (see the README for the format)."""
    import sys

    from labreplay.suites.conditions.evaluate import check_predictions, problem_lines, score_read
    from labreplay.suites.conditions.questions import load_questions

    qs = load_questions(questions)
    read = check_predictions(predictions, {q["id"]: q for q in qs})
    head = "warning: malformed prediction" if lenient else "malformed prediction"
    for line in problem_lines(read.problems):
        sys.stderr.write(f"labreplay: {head}: {line}\n")
    if read.problems and not lenient:
        raise LabreplayError(
            f"{predictions}: {len(read.problems)} malformed prediction(s) listed above; fix "
            "them, or pass --lenient to score them as invalid"
        )
    out = score_read(qs, read)
    if read.problems:
        sys.stderr.write(
            f"labreplay: warning: --lenient: {len(read.problems)} malformed prediction(s); "
            f"{len(read.invalid_ids)} question(s) scored as invalid, the rest (unknown ids, "
            "lines that are not a prediction) ignored\n"
        )
    if json_out:
        print_json(out)
        return
    for k, v in out.items():
        if k not in {"summary", "malformed"}:
            console.print(f"{k}: {v}")


@app.command("leaderboard")
def leaderboard_cmd(
    store: Path = typer.Option(..., "--store", help="Results store (SQLite)."),
    json_out: bool = JsonOption,
) -> None:
    """Finished conditions runs with their headline metrics and floors."""
    from labreplay.sdk.engine import Store
    from labreplay.suites.conditions.runner import leaderboard

    with Store(store, readonly=True) as db:
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
        "precedent_lift_mc_all_score",  # read against the reference lines printed below
        "prompt_tokens",
        "completion_tokens",
        "cost_usd",
    )
    view = Table(title="conditions leaderboard")
    for c in cols:
        view.add_column(c)
    for r in board["runs"]:
        cells = [_cell(r, c) for c in cols]
        if r.get("unverified_data"):  # the question_file column
            cells[1] += " UNVERIFIED"
        view.add_row(*cells)
    print_table(view, "agent")
    from labreplay.suites.conditions.precedent_audit import precedent_reference_lines

    for name, lifts in board.get("precedent_references", {}).items():
        for line in precedent_reference_lines(lifts):  # reference rows beside the lifts
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


def _cell(row: Mapping[str, object], column: str) -> str:
    """A board cell. USD is what the run's calls recorded: 'unknown' for a model with no price
    (never shown as $0), '-' for an agent that called no model."""
    value = row.get(column)
    if column == "cost_usd":
        if isinstance(value, int | float):
            return f"${value:.4f}"
        return "unknown" if row.get("llm_calls") else "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return "-" if value is None else str(value)


from labreplay.suites.conditions.serve_cli import serve_cmd  # noqa: E402

app.command("serve")(serve_cmd)
