"""`labreplay configsearch`: the AutoMatBench configuration space, sweeps, searches, report."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from labreplay.sdk.cli import (
    AgentTimeoutOption,
    ApiKeyEnvOption,
    BaseUrlOption,
    DataDirOption,
    ExecutorOption,
    IsolateOption,
    JsonOption,
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
    choice,
    console,
    count_check,
    finite_float_check,
    int_range,
    out_dir_check,
    print_json,
    progress_bar,
    seed_check,
)
from labreplay.sdk.options import MAX_SEED_COUNT
from labreplay.suites.configsearch import cli_replay
from labreplay.suites.configsearch.options import DEFAULT_SEED, RUN_DEFAULTS

if TYPE_CHECKING:  # the commands import their modules when they run (a fast --help)
    from labreplay.sdk.agents import ResolvedAgent
    from labreplay.sdk.engine import Store
    from labreplay.suites.configsearch.runner import ConfigSearch
    from labreplay.suites.configsearch.space import ConfigSpace

app = typer.Typer(
    help="Search OOD benchmark configurations (r, n, s) of materials-property "
    "prediction (AutoMatBench) on real MP + JARVIS data.",
    no_args_is_help=True,
)

StoreOption = typer.Option(
    Path("configsearch.sqlite"),
    "--store",
    help="Results store (SQLite; default ./configsearch.sqlite).",
)
TaskOption = typer.Option(
    None,
    "--task",
    help="band_gap, metallicity, bulk_modulus, shear_modulus, formation_energy or "
    "refractive_index (or use --dataset).",
)
DatasetOption = typer.Option(
    None,
    "--dataset",
    help="Your own JSONL(.gz): one material per line, `cif` text or a pymatgen `structure` dict, "
    "plus the --target field.",
)
DatasetBOption = typer.Option(
    None, "--dataset-b", help="Second source for the share r (without it r is fixed to 0)."
)
TargetOption = typer.Option(None, "--target", help="Numeric field of --dataset to predict.")
NTotalOption = typer.Option(
    RUN_DEFAULTS.n_total,
    "--n-total",
    help="Materials per sample (paper: 1,600).",
    callback=count_check("--n-total"),
)
NOodOption = typer.Option(
    RUN_DEFAULTS.n_ood,
    "--n-ood",
    help="OOD candidates per sample (paper: 480).",
    callback=count_check("--n-ood"),
)
NJobsOption = typer.Option(
    1,
    "--n-jobs",
    help="Threads for model fits, t-SNE and k-means (speed only, same results).",
    callback=int_range("--n-jobs", 1, 64),
)
RValuesOption = typer.Option(None, "--r-values", help="Restrict r, e.g. 0,0.3 (default: paper).")
NValuesOption = typer.Option(None, "--n-values", help="Restrict n, e.g. 4,6,8 (default: paper).")
SValuesOption = typer.Option(None, "--s-values", help="Restrict s, e.g. 1,5,10 (default: paper).")
AllowModifiedDataOption = typer.Option(
    False,
    "--allow-modified-data",
    help="Run on built-in task files whose sha256 differs from the manifest; the run's spec "
    "records them (unverified_data) and the output says UNVERIFIED DATA.",
)


def _space(
    r_values: str | None,
    n_values: str | None,
    s_values: str | None,
    n_total: int,
    n_ood: int,
    min_test_points: int | None = None,
) -> ConfigSpace | None:
    """The restricted space (None: the paper's), every value checked before any work."""
    from labreplay.suites.configsearch import preflight

    pipeline = preflight.settings(n_total, n_ood)
    return preflight.config_space(r_values, n_values, s_values, pipeline, min_test_points)


def _refuse_dask_with_own_dataset(executor: str, dataset: Path | None) -> None:
    """A user dataset is registered in this process only; Dask workers (other processes) look a
    task up by name and would not find it. Refuse up front rather than fail on the workers."""
    from labreplay.errors import SpecError

    if dataset is not None and executor == "dask":
        raise SpecError(
            f"--executor dask cannot run --dataset {dataset} yet (workers know only the built-in "
            "tasks); use --executor threads or in-process"
        )


def _campaign(
    data_dir: Path | None,
    store: Store,
    task: str | None,
    dataset: Path | None,
    dataset_b: Path | None,
    target: str | None,
    n_total: int,
    n_ood: int,
    n_jobs: int,
    space: ConfigSpace | None = None,
    min_test_points: int = 30,
    allow_modified_data: bool = False,
) -> ConfigSearch:
    from labreplay.suites.configsearch.api import open_campaign

    return open_campaign(
        data_dir,
        store,
        task=task,
        dataset=dataset,
        dataset_b=dataset_b,
        target=target,
        n_total=n_total,
        n_ood=n_ood,
        n_jobs=n_jobs,
        space=space,
        min_test_points=min_test_points,
        allow_modified_data=allow_modified_data,
    )


def _say_unverified(unverified: list[str]) -> None:
    if unverified:
        console.print(
            f"UNVERIFIED DATA (--allow-modified-data): {', '.join(unverified)}", markup=False
        )


@app.command("space")
def space_cmd(json_out: bool = JsonOption) -> None:
    """The configuration space: its size (858, checked) and its points."""
    from labreplay.suites.configsearch.space import paper_space

    space = paper_space()
    points = [c.to_json() for c in space.points()]
    if json_out:
        print_json({"size": len(points), "axes": space.to_json(), "points": points})
        return
    console.print(
        f"{len(points)} configurations: r in {list(space.r_values)}, n in "
        f"{list(space.n_values)}, s in {list(space.s_values)} (s <= 8 when n = 60)"
    )


@app.command("sweep")
def sweep_cmd(
    task: str | None = TaskOption,
    model: str = typer.Option("rf-scm", "--model", help="rf-scm, crabnet, ofm-mlp or alignn."),
    store: Path = StoreOption,
    data_dir: Path | None = DataDirOption,
    dataset: Path | None = DatasetOption,
    dataset_b: Path | None = DatasetBOption,
    target: str | None = TargetOption,
    n_total: int = NTotalOption,
    n_ood: int = NOodOption,
    n_jobs: int = NJobsOption,
    r_values: str | None = RValuesOption,
    n_values: str | None = NValuesOption,
    s_values: str | None = SValuesOption,
    executor: str = ExecutorOption,
    scheduler: str | None = SchedulerOption,
    workers: int | None = WorkersOption,
    allow_modified_data: bool = AllowModifiedDataOption,
    json_out: bool = JsonOption,
    quiet: bool = QuietOption,
) -> None:
    """Exhaustive sweep of one model over every configuration (resumable). On threads or Dask,
    one work unit per (r, n) training set."""
    from labreplay.sdk.engine import Store, open_executor
    from labreplay.suites.configsearch import preflight
    from labreplay.suites.configsearch.episodes import sweep

    _refuse_dask_with_own_dataset(executor, dataset)
    preflight.task_or_dataset(task, dataset, target, dataset_b)
    preflight.model_list("--model", model)
    space = _space(r_values, n_values, s_values, n_total, n_ood)
    tasks = [] if task is None else [task]
    unverified = preflight.data_files(data_dir, tasks, allow_modified_data)
    # The executor first: an unusable scheduler is refused before a store is created.
    with open_executor(executor, scheduler, workers) as ex, Store(store) as db:
        campaign = _campaign(
            data_dir, db, task, dataset, dataset_b, target, n_total, n_ood, n_jobs, space,
            allow_modified_data=allow_modified_data,
        )  # fmt: skip
        label = f"sweep {campaign.task} {model}"
        with progress_bar(label, len(campaign.feasible), not (json_out or quiet)) as bar:
            run_id, _ = sweep(campaign, model, bar, ex)
        summary = db.run(run_id).summary or {}
    marked = {"unverified_data": unverified} if unverified else {}
    if json_out:
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


@app.command("references")
def references_cmd(
    tasks: str = typer.Option("all", "--tasks", help="Comma list of tasks, or all six."),
    models: str = typer.Option("rf-scm,crabnet", "--models", help="Comma list of models."),
    store: Path = StoreOption,
    data_dir: Path | None = DataDirOption,
    n_total: int = NTotalOption,
    n_ood: int = NOodOption,
    n_jobs: int = NJobsOption,
    r_values: str | None = RValuesOption,
    allow_modified_data: bool = AllowModifiedDataOption,
    json_out: bool = JsonOption,
    quiet: bool = QuietOption,
) -> None:
    """Regenerate the exhaustive reference sweeps (every task x model; resumable, and every
    stage is cached by its input hashes, so a rerun only computes what is missing)."""
    from labreplay.sdk.engine import Store
    from labreplay.suites.configsearch import preflight
    from labreplay.suites.configsearch.episodes import sweep

    names = preflight.task_list(tasks)
    chosen_models = preflight.model_list("--models", models)
    space = _space(r_values, None, None, n_total, n_ood)
    unverified = preflight.data_files(data_dir, names, allow_modified_data)
    _say_unverified([] if json_out else unverified)
    out = []
    with Store(store) as db:
        for task in names:
            campaign = _campaign(
                data_dir, db, task, None, None, None, n_total, n_ood, n_jobs, space,
                allow_modified_data=allow_modified_data,
            )  # fmt: skip
            for model in chosen_models:
                label = f"sweep {task} {model}"
                with progress_bar(label, len(campaign.feasible), not (json_out or quiet)) as bar:
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


@app.command("export-references")
def export_references_cmd(
    store: Path = StoreOption,
    out: Path = typer.Option(
        ...,
        "--out",
        help="Directory for one <task>__<model>.json.gz per complete sweep.",
        callback=out_dir_check(),
    ),
    slices: Path | None = typer.Option(
        None,
        "--slices",
        help="Directory of r-slice files exported earlier (e.g. committed by another session); "
        "they are assembled with the store's sweeps of the same task x model.",
    ),
) -> None:
    """Write every complete exhaustive sweep of a store as a small, byte-stable reference file
    (with its spec hash, protocol, data files and the command that regenerates it)."""
    from labreplay.errors import StoreError
    from labreplay.sdk import atomic_directory
    from labreplay.sdk.engine import Store
    from labreplay.suites.configsearch.references import export_references

    slice_files = _slice_files(slices)
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


@app.command("run")
def run_cmd(
    task: str | None = TaskOption,
    models: str = typer.Option(
        ",".join(RUN_DEFAULTS.model_list()), "--models", help="Comma list of models."
    ),
    problem: str = typer.Option(
        RUN_DEFAULTS.problem, "--problem", help="best-model | discriminate | closest."
    ),
    method: str = typer.Option("bo", "--method", help="bo | random | exhaustive."),
    budget: int = typer.Option(
        RUN_DEFAULTS.budget, "--budget", help="Search steps T.", callback=count_check("--budget")
    ),
    init: int = typer.Option(
        RUN_DEFAULTS.init,
        "--init",
        help="Random initial steps T0.",
        callback=count_check("--init"),
    ),
    seed: int = typer.Option(DEFAULT_SEED, "--seed", help="Search seed.", callback=seed_check()),
    seeds: int = typer.Option(
        RUN_DEFAULTS.seeds,
        "--seeds",
        help="Run seeds seed..seed+k-1.",
        callback=int_range("--seeds", 1, MAX_SEED_COUNT),
    ),
    gt: str = typer.Option(
        RUN_DEFAULTS.gt,
        "--gt",
        help="closest: reference (0,48,10) | mean.",
        callback=choice("--gt", ("reference", "mean")),
    ),
    cost_alpha: float = typer.Option(
        RUN_DEFAULTS.cost_alpha,
        "--cost-alpha",
        help="BO: weight of the fit cost in the acquisition (0 = plain EI).",
        callback=finite_float_check("--cost-alpha", lo=0, hi=100),
    ),
    store: Path = StoreOption,
    data_dir: Path | None = DataDirOption,
    dataset: Path | None = DatasetOption,
    dataset_b: Path | None = DatasetBOption,
    target: str | None = TargetOption,
    n_total: int = NTotalOption,
    n_ood: int = NOodOption,
    n_jobs: int = NJobsOption,
    r_values: str | None = RValuesOption,
    n_values: str | None = NValuesOption,
    s_values: str | None = SValuesOption,
    executor: str = ExecutorOption,
    scheduler: str | None = SchedulerOption,
    workers: int | None = WorkersOption,
    min_test_points: int = typer.Option(
        RUN_DEFAULTS.min_test_points,
        "--min-test-points",
        help="C_min: search configurations with n*s >= this only.",
        callback=count_check("--min-test-points"),
    ),
    agent: str | None = typer.Option(
        None,
        "--agent",
        help="Your ask/tell optimiser (MODULE:ATTR or a registered name) instead of --method.",
    ),
    isolate: bool = IsolateOption,
    agent_timeout: float | None = AgentTimeoutOption,
    require_sandbox: bool = RequireSandboxOption,
    base_url: str | None = BaseUrlOption,
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
    max_calls: int | None = MaxCallsOption,
    max_tokens_total: int | None = MaxTokensTotalOption,
    max_time: float | None = MaxTimeOption,
    provider: str | None = ProviderOption,
    prices: str | None = PricesOption,
    max_cost: float | None = MaxCostOption,
    max_total_cost: float | None = MaxTotalCostOption,
    allow_modified_data: bool = AllowModifiedDataOption,
    json_out: bool = JsonOption,
) -> None:
    """A budgeted search (Algorithm 1, 2 or 3) with BO, random search or your own optimiser
    (--agent MODULE:ATTR, or openai:MODEL for an LLM optimiser); one work unit per seed on
    threads or Dask."""
    from labreplay.errors import LabreplayError
    from labreplay.sdk.engine import Store, open_executor
    from labreplay.suites.configsearch import preflight
    from labreplay.suites.configsearch.episodes import resolve_optimizer_agent, run_searches
    from labreplay.suites.configsearch.search import METHODS, PROBLEMS

    _refuse_dask_with_own_dataset(executor, dataset)
    # Every value is refused before the executor, the store or the data: a bad value must
    # not leave a store, a `running` row or cache stages behind.
    names = list(preflight.model_list("--models", models))
    choice("--problem", PROBLEMS)(problem)
    choice("--method", METHODS)(method)
    preflight.search_budget(method, budget, init)
    preflight.seed_block(seed, seeds)
    preflight.task_or_dataset(task, dataset, target, dataset_b)
    space = _space(r_values, n_values, s_values, n_total, n_ood, min_test_points)
    if isolate and agent is None:
        raise LabreplayError("--isolate: give the optimiser to isolate with --agent MODULE:ATTR")
    if isolate and executor != "in-process":
        raise LabreplayError("--isolate runs with --executor in-process (one child per search)")
    check_isolation(isolate, require_sandbox)
    # the optimiser is checked before the store is opened (one line, exit 2)
    tally = None
    from labreplay.sdk.agents import is_llm_agent

    if agent is not None and is_llm_agent(agent):
        from labreplay.suites.configsearch.llm_optimizer import make_factory

        if isolate:
            raise LabreplayError("--isolate: an openai: optimiser runs no user code to isolate")
        if executor == "dask":
            # its calls are counted in this process (usage, all-failed): Dask workers would
            # hide them from the tally
            raise LabreplayError(
                "--executor dask: an openai: optimiser runs in-process or on threads"
            )
        options = agent_options(
            base_url=base_url, api_key_env=api_key_env, temperature=temperature,
            llm_seed=llm_seed, max_tokens=max_tokens, timeout=timeout, max_retries=max_retries,
            max_calls=max_calls, max_tokens_total=max_tokens_total, max_time=max_time,
            token_param=token_param, reasoning_effort=reasoning_effort,
            reasoning_tokens=reasoning_tokens, max_retry_wait=max_retry_wait,
            max_call_time=max_call_time, provider=provider, prices=prices, max_cost=max_cost,
            max_total_cost=max_total_cost,
        )  # fmt: skip
        factory, tally = make_factory(agent, **options)
        searcher: str | ResolvedAgent = resolve_optimizer_agent(factory)
    else:
        searcher = (
            method if agent is None else resolve_optimizer_agent(agent, isolate, agent_timeout)
        )
    unverified = preflight.data_files(data_dir, [] if task is None else [task], allow_modified_data)
    out = []
    with open_executor(executor, scheduler, workers) as ex, Store(store) as db:
        campaign = _campaign(
            data_dir,
            db,
            task,
            dataset,
            dataset_b,
            target,
            n_total,
            n_ood,
            n_jobs,
            space,
            min_test_points,
            allow_modified_data,
        )
        chosen = [seed + k for k in range(seeds)]
        done = run_searches(
            campaign, names, problem, searcher, budget, init, chosen, gt, ex, cost_alpha
        )
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
    if json_out:
        print_json(out)
    _say_unverified([] if json_out else unverified)
    for item in [] if json_out else out:
        if item.get("status") == "failed":
            console.print(f"seed {item['seed']}: failed: {item['cause']}", markup=False)
            continue
        reached = item.get("steps_to_target", "n/a (no sweep)")
        score = item.get("final_normalised", "n/a (no sweep)")
        console.print(
            f"seed {item['seed']}: best {item['best_objective']:.4g} after "
            f"{item['steps']} steps ({item['evaluations']} evaluations, {item['used_fits']} "
            f"fits); normalised score {score}; steps to target {reached}; answer {item['answer']}"
        )
    if failed:  # a run whose optimiser stopped answering is data, but the command failed
        raise typer.Exit(1)


@app.command("report")
def report_cmd(
    store: Path = StoreOption,
    out: Path = typer.Option(
        Path("configsearch-report"), "--out", help="Output directory.", callback=out_dir_check()
    ),
    json_out: bool = JsonOption,
) -> None:
    """Tables and plots of every stored configsearch run."""
    from labreplay.errors import StoreError
    from labreplay.sdk.engine import Store
    from labreplay.suites.configsearch.report import markdown, write_report

    if not store.exists():  # anything but a regular file there: `Store` names it
        raise StoreError(
            f"store {store} does not exist (run `configsearch sweep` or `run` first, or pass "
            "--store PATH)"
        )
    with Store(store, readonly=True) as db:
        report = write_report(db, out)
    if json_out:
        print_json(report)
        return
    # soft_wrap: the Markdown tables keep one line per row (a terminal folds them itself)
    console.print(
        markdown({**report, "searches": report["searches"]}), markup=False, soft_wrap=True
    )
    console.print(f"wrote {len(report['files'])} plots and the report to {out}")
