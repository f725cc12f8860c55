"""`labreplay configsearch`: the AutoMatBench configuration space, sweeps, searches, report.

Every command is generated from its options classes (`options.py`, the shared groups of
`labreplay.sdk.options`): `run` and `serve` take the same `ConfigsearchOptions` as
`labreplay.run("configsearch", ...)`."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from labreplay.sdk.cli import command, console, print_json, progress_bar
from labreplay.sdk.options import (
    DataOptions,
    ExecutorOptions,
    LlmOptions,
    OutputOptions,
    ServeOptions,
    api_options,
)
from labreplay.suites.configsearch import cli_replay
from labreplay.suites.configsearch.options import (
    ConfigsearchOptions,
    ConfigsearchRunOptions,
    ConfigsearchStore,
    DatasetArgs,
    ExportArgs,
    ReferencesArgs,
    ReportArgs,
    RValues,
    SampleOptions,
    SearchArgs,
    SeedArg,
    SpaceArgs,
    SweepArgs,
    TaskArg,
    Threads,
)

if TYPE_CHECKING:  # the commands import their modules when they run (a fast --help)
    from labreplay.sdk.engine import Store
    from labreplay.suites.configsearch.runner import ConfigSearch
    from labreplay.suites.configsearch.space import ConfigSpace

app = typer.Typer(
    help="Search OOD benchmark configurations (r, n, s) of materials-property "
    "prediction (AutoMatBench) on real MP + JARVIS data.",
    no_args_is_help=True,
)


def _campaign(
    db: Store,
    source: DatasetArgs,
    sample: SampleOptions,
    data: DataOptions,
    threads: Threads,
    space: ConfigSpace | None,
    min_test_points: int = 30,
) -> ConfigSearch:
    from labreplay.suites.configsearch.api import open_campaign

    return open_campaign(
        data.data_dir, db, task=source.task, dataset=source.dataset, dataset_b=source.dataset_b,
        target=source.target, n_total=sample.n_total, n_ood=sample.n_ood, n_jobs=threads.n_jobs,
        space=space, min_test_points=min_test_points,
        allow_modified_data=data.allow_modified_data,
    )  # fmt: skip


def _say_unverified(unverified: list[str]) -> None:
    if unverified:
        console.print(
            f"UNVERIFIED DATA (--allow-modified-data): {', '.join(unverified)}", markup=False
        )


def _unverified(data: DataOptions, task: str | None) -> list[str]:
    from labreplay.suites.configsearch.preflight import data_files

    return data_files(data.data_dir, [] if task is None else [task], data.allow_modified_data)


@command(app, "space", OutputOptions)
def space_cmd(output: OutputOptions) -> None:
    """The configuration space: its size (858, checked) and its points."""
    from labreplay.suites.configsearch.space import paper_space

    space = paper_space()
    points = [c.to_json() for c in space.points()]
    if output.json_out:
        print_json({"size": len(points), "axes": space.to_json(), "points": points})
        return
    console.print(
        f"{len(points)} configurations: r in {list(space.r_values)}, n in "
        f"{list(space.n_values)}, s in {list(space.s_values)} (s <= 8 when n = 60)"
    )


@command(
    app, "sweep", DatasetArgs, SweepArgs, ConfigsearchStore, DataOptions, SampleOptions, Threads,
    SpaceArgs, ExecutorOptions, OutputOptions,
)  # fmt: skip
def sweep_cmd(
    source: DatasetArgs,
    args: SweepArgs,
    where: ConfigsearchStore,
    data: DataOptions,
    sample: SampleOptions,
    threads: Threads,
    axes: SpaceArgs,
    execution: ExecutorOptions,
    output: OutputOptions,
) -> None:
    """Exhaustive sweep of one model over every configuration (resumable). On threads or Dask,
    one work unit per (r, n) training set."""
    from labreplay.sdk.engine import Store
    from labreplay.suites.configsearch.episodes import sweep

    source.check_executor(execution.executor)
    space = axes.space(sample)
    unverified = _unverified(data, source.task)
    # The executor first: an unusable scheduler is refused before a store is created.
    with execution.open() as ex, Store(where.store) as db:
        campaign = _campaign(db, source, sample, data, threads, space)
        label = f"sweep {campaign.task} {args.model}"
        shown = not (output.json_out or output.quiet)
        with progress_bar(label, len(campaign.feasible), shown) as bar:
            run_id, _ = sweep(campaign, args.model, bar, ex)
        summary = db.run(run_id).summary or {}
    marked = {"unverified_data": unverified} if unverified else {}
    if output.json_out:
        print_json({"run_id": run_id, **summary, **marked})
        return
    _say_unverified(unverified)
    console.print(
        f"run {run_id}: {summary['evaluated']} evaluated, {summary['infeasible']} "
        f"infeasible; MAE {summary['min_mae']:.4g}..{summary['max_mae']:.4g} (max/min "
        f"{summary['max_min_ratio']}; without degenerate folds "
        f"{summary['mae_without_degenerate_folds']['max_min_ratio']}); "
        f"{summary['degenerate_folds']}/{summary['folds']} folds degenerate; short folds "
        f"{summary['short_folds']}; cache hit ratio {summary['cache']['overall_ratio']}"
    )


@command(
    app, "references", ReferencesArgs, ConfigsearchStore, DataOptions, SampleOptions, Threads,
    RValues, OutputOptions,
)  # fmt: skip
def references_cmd(
    args: ReferencesArgs,
    where: ConfigsearchStore,
    data: DataOptions,
    sample: SampleOptions,
    threads: Threads,
    axes: RValues,
    output: OutputOptions,
) -> None:
    """Regenerate the exhaustive reference sweeps (every task x model; resumable, and every
    stage is cached by its input hashes, so a rerun only computes what is missing)."""
    from labreplay.sdk.engine import Store
    from labreplay.suites.configsearch import preflight
    from labreplay.suites.configsearch.episodes import sweep

    names, json_out = args.task_list(), output.json_out
    space = axes.space(sample)
    unverified = preflight.data_files(data.data_dir, names, data.allow_modified_data)
    _say_unverified([] if json_out else unverified)
    out = []
    with Store(where.store) as db:
        for task in names:
            campaign = _campaign(db, DatasetArgs(task=task), sample, data, threads, space)
            for model in args.model_list():
                label = f"sweep {task} {model}"
                shown = not (json_out or output.quiet)
                with progress_bar(label, len(campaign.feasible), shown) as bar:
                    run_id, _ = sweep(campaign, model, bar)
                summary = db.run(run_id).summary or {}
                marked = campaign.evaluator.unverified
                out.append({"task": task, "model": model, "run_id": run_id, **summary})
                if marked:
                    out[-1]["unverified_data"] = marked
                if not json_out:
                    console.print(
                        f"{task} {model}: {summary['evaluated']} configurations, MAE "
                        f"{summary['min_mae']:.4g}..{summary['max_mae']:.4g}, short folds "
                        f"{summary['short_folds']}"
                    )
    if json_out:
        print_json(out)


@command(app, "export-references", ConfigsearchStore, ExportArgs)
def export_references_cmd(where: ConfigsearchStore, args: ExportArgs) -> None:
    """Write every complete exhaustive sweep of a store as a small, byte-stable reference file
    (with its spec hash, protocol, data files and the command that regenerates it)."""
    from labreplay.errors import StoreError
    from labreplay.sdk import atomic_directory
    from labreplay.sdk.engine import Store
    from labreplay.suites.configsearch.references import export_references

    store, out = where.store, args.out
    slice_files = _slice_files(args.slices)
    if not store.exists() and not slice_files:
        raise StoreError(f"store {store} does not exist (run `configsearch references` first)")
    # The store is opened (a foreign file refused) before --out exists, and the files are
    # built in a temporary sibling renamed into place: a refusal or failure leaves no directory.
    with contextlib.ExitStack() as stack:
        db = stack.enter_context(Store(store, readonly=True)) if store.exists() else None
        building = stack.enter_context(atomic_directory(out))
        written = export_references(db, building, slice_files)
        if not written:
            raise StoreError(f"store {store} holds no complete exhaustive sweep")
    for path in written:
        console.print(f"wrote {out / path.name}")


def _slice_files(directory: Path | None) -> list[Path]:
    from labreplay.errors import LabreplayError
    from labreplay.sdk import readable_dir

    if directory is None:
        return []
    files = sorted(readable_dir(directory, "--slices").glob("*.json.gz"))
    if not files:
        raise LabreplayError(f"--slices {directory}: no *.json.gz reference slices there")
    return files


# replay and reference-report (recorded references, no training) live in cli_replay
cli_replay.register(app)


@command(
    app, "run", DatasetArgs, SearchArgs, SeedArg, ConfigsearchRunOptions, ConfigsearchStore,
    DataOptions, Threads, SpaceArgs, ExecutorOptions, LlmOptions, OutputOptions,
)  # fmt: skip
def run_cmd(
    source: DatasetArgs,
    who: SearchArgs,
    seeded: SeedArg,
    run: ConfigsearchRunOptions,
    where: ConfigsearchStore,
    data: DataOptions,
    threads: Threads,
    axes: SpaceArgs,
    execution: ExecutorOptions,
    llm: LlmOptions,
    output: OutputOptions,
) -> None:
    """A budgeted search (Algorithm 1, 2 or 3) with BO, random search or your own optimiser
    (--agent MODULE:ATTR, or openai:MODEL for an LLM optimiser); one work unit per seed on
    threads or Dask."""
    from labreplay.errors import LabreplayError
    from labreplay.sdk.agents import is_llm_agent
    from labreplay.sdk.engine import Store
    from labreplay.suites.configsearch.api import resolve_searcher
    from labreplay.suites.configsearch.episodes import run_searches

    # Every value is refused before the executor, the store or the data: a bad value must
    # not leave a store, a `running` row or cache stages behind.
    source.check_executor(execution.executor)
    run.check_search(who.searcher())
    run.check_seeds(seeded.seed)
    space = axes.space(run, run.min_test_points)
    run.check_executor(execution.executor)
    llm.check_executor(execution.executor)
    if is_llm_agent(who.agent) and execution.executor == "dask":
        # its calls are counted in this process (usage, all-failed): Dask workers would
        # hide them from the tally
        raise LabreplayError("--executor dask: an openai: optimiser runs in-process or on threads")
    run.say_without_sandbox()
    # the optimiser is checked before the store is opened (one line, exit 2)
    searcher, tally = resolve_searcher(who.searcher(), run, llm)
    unverified = _unverified(data, source.task)
    out = []
    with execution.open() as ex, Store(where.store) as db:
        campaign = _campaign(db, source, run, data, threads, space, run.min_test_points)
        chosen = [seeded.seed + k for k in range(run.seeds)]
        done = run_searches(
            campaign, run.model_list(), run.problem, searcher, run.budget, run.init, chosen,
            run.gt, ex, run.cost_alpha,
        )  # fmt: skip
        for k, (run_id, _, summary) in zip(chosen, done, strict=True):
            out.append({"run_id": run_id, "seed": k, "task": campaign.task, **summary})
            if unverified:
                out[-1]["unverified_data"] = unverified
    failed = [item for item in out if item.get("status") == "failed"]
    if tally is not None:
        # a search whose every model call failed is a failed run (the search records it so)
        for item in out:
            item["llm_usage"] = tally.usage()
            item["ranked"] = item.get("status") != "failed"
    if output.json_out:
        print_json(out)
    else:
        _say_unverified(unverified)
        _print_searches(out)
    if failed:  # a run whose optimiser stopped answering is data, but the command failed
        raise typer.Exit(1)


def _print_searches(out: list[dict[str, object]]) -> None:
    for item in out:
        if item.get("status") == "failed":
            console.print(f"seed {item['seed']}: failed: {item['cause']}", markup=False)
            continue
        # without a stored sweep neither key is there; a missed target is stored as None
        reached = item.get("steps_to_target", "n/a (no sweep)")
        score = item.get("final_normalised", "n/a (no sweep)")
        console.print(
            f"seed {item['seed']}: best {item['best_objective']:.3f} after "
            f"{item['steps']} steps ({item['evaluations']} evaluations, {item['used_fits']} "
            f"fits); normalised score {f'{score:.3f}' if isinstance(score, float) else score}; "
            f"steps to target {'not reached' if reached is None else reached}; "
            f"answer {item['answer']}"
        )


@command(
    app, "serve", TaskArg, SeedArg, ConfigsearchOptions, ConfigsearchStore, DataOptions,
    SpaceArgs, ServeOptions,
)  # fmt: skip
def serve_cmd(
    source: TaskArg,
    seeded: SeedArg,
    search: ConfigsearchOptions,
    where: ConfigsearchStore,
    data: DataOptions,
    axes: SpaceArgs,
    serve: ServeOptions,
) -> None:
    """Serve a search to any harness over MCP (tools next_call/reply: the harness is the
    optimiser, answering suggest and observe): the run `configsearch run --agent` plays, with
    its options and defaults."""
    from labreplay.sdk.engine import compile
    from labreplay.sdk.harness import serve_suite_run
    from labreplay.sdk.options import OptionError

    if source.task is None:
        raise OptionError("--task: give the built-in task to serve")
    search.check_search(None)  # the harness is an optimiser, never the exhaustive sweep
    search.check_seeds(seeded.seed)
    space = axes.space(search, search.min_test_points)
    # the spec `configsearch run --task` plays; the run rebuilds its problem from it
    specs = compile(
        "configsearch", data.data_dir, task=source.task, n_total=search.n_total, n_ood=search.n_ood,
        space=space, min_test_points=search.min_test_points, **api_options(data),
    )  # fmt: skip
    serve_suite_run(
        "configsearch", specs, where.store, serve.agent_name, seeded.seed, model=serve.model,
        transport=serve.transport, port=serve.port, data_dir=data.data_dir,
        **api_options(search, data),
    )  # fmt: skip


@command(app, "report", ConfigsearchStore, ReportArgs, OutputOptions)
def report_cmd(where: ConfigsearchStore, args: ReportArgs, output: OutputOptions) -> None:
    """Tables and plots of every stored configsearch run."""
    from labreplay.errors import StoreError
    from labreplay.sdk.engine import Store
    from labreplay.suites.configsearch.report import markdown, write_report

    store, out = where.store, args.out
    if not store.exists():  # anything but a regular file there: `Store` names it
        raise StoreError(
            f"store {store} does not exist (run `configsearch sweep` or `run` first, or pass "
            "--store PATH)"
        )
    with Store(store, readonly=True) as db:
        report = write_report(db, out)
    if output.json_out:
        print_json(report)
        return
    # soft_wrap: the Markdown tables keep one line per row (a terminal folds them itself)
    console.print(
        markdown({**report, "searches": report["searches"]}), markup=False, soft_wrap=True
    )
    console.print(f"wrote {len(report['files'])} plots and the report to {out}")
