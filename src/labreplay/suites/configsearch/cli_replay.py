"""`labreplay configsearch replay` and `reference-report`: searches replayed on the recorded
exhaustive reference tables (no model is trained), kept apart from the live commands in `cli`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from labreplay.sdk.cli import (
    ApiKeyEnvOption,
    BaseUrlOption,
    JsonOption,
    LlmSeedOption,
    MaxCallsOption,
    MaxRetriesOption,
    MaxTimeOption,
    MaxTokensOption,
    MaxTokensTotalOption,
    TemperatureOption,
    TimeoutOption,
    agent_options,
    choice,
    console,
    finite_float_check,
    int_range,
    out_dir_check,
    print_json,
)
from labreplay.sdk.options import MAX_SEED_COUNT
from labreplay.suites.configsearch.search import COST_ALPHA as COST_ALPHA_DEFAULT

ReplayJobsOption = typer.Option(
    1,
    "--jobs",
    help="Worker processes for replays (speed only: every seed gives the same rows).",
    callback=int_range("--jobs", 1, 64),
)


def register(app: typer.Typer) -> None:
    """Mount the replay commands on the configsearch app (in the order `--help` lists them)."""
    app.command("replay")(replay_cmd)
    app.command("reference-report")(reference_report_cmd)


NOT_RUNS = (
    "replay: computed in memory from the recorded references; no runs are written to any "
    "store and these rows are on no leaderboard (use `configsearch run --store` for runs)"
)


def replay_cmd(
    references: Path = typer.Option(
        ..., "--references", help="A reference file or a directory of them (export-references)."
    ),
    seeds: int = typer.Option(
        20,
        "--seeds",
        help="Seeds 42..42+k-1.",
        callback=int_range("--seeds", 1, MAX_SEED_COUNT),
    ),
    budget: int | None = typer.Option(
        None, "--budget", help="Search steps T (best-model 8, closest and which-model 12)."
    ),
    init: int | None = typer.Option(
        None, "--init", help="Initial design T0 (best-model 3, closest and which-model 4)."
    ),
    within: int | None = typer.Option(
        None, "--within", help="Count seeds reaching the target within this many evaluations (T)."
    ),
    cost_alpha: float = typer.Option(
        COST_ALPHA_DEFAULT,
        "--cost-alpha",
        help="BO: weight of the fit cost (0 = plain EI).",
        callback=finite_float_check("--cost-alpha", lo=0),
    ),
    problem: str = typer.Option(
        "best-model",
        "--problem",
        help="best-model | closest (nearest the MAE at (0, 48, 10)) | which-model (paired).",
        callback=choice("--problem", ("best-model", "closest", "which-model")),
    ),
    min_test_points: int = typer.Option(
        30,
        "--min-test-points",
        help="C_min: search configurations with n*s >= this only.",
        callback=int_range("--min-test-points", 1),
    ),
    surrogate: str = typer.Option(
        "botorch",
        "--surrogate",
        help="BO surrogate: botorch (the bo extra) | sklearn-gp.",
        callback=choice("--surrogate", ("botorch", "sklearn-gp")),
    ),
    agent: str | None = typer.Option(
        None,
        "--agent",
        help="Your ask/tell optimiser as MODULE:ATTR, or openai:MODEL (an LLM optimiser), "
        "replayed beside BO/random.",
    ),
    base_url: str | None = BaseUrlOption,
    api_key_env: str | None = ApiKeyEnvOption,
    temperature: float | None = TemperatureOption,
    llm_seed: int | None = LlmSeedOption,
    max_tokens: int | None = MaxTokensOption,
    timeout: float | None = TimeoutOption,
    max_retries: int | None = MaxRetriesOption,
    max_calls: int | None = MaxCallsOption,
    max_tokens_total: int | None = MaxTokensTotalOption,
    max_time: float | None = MaxTimeOption,
    jobs: int = ReplayJobsOption,
    json_out: bool = JsonOption,
) -> None:
    """BO vs random search (and your optimiser) replayed on exhaustive reference tables: every
    evaluation is a lookup, so many seeds and every task take seconds, and no model is fitted.
    A replay writes no runs: its rows are on no leaderboard and `store verify` never sees
    them."""
    from labreplay.errors import LabreplayError
    from labreplay.suites.configsearch.optimizers import require_surrogate, resolve_optimizer
    from labreplay.suites.configsearch.references import load_reference, load_references

    default_budget, default_init = (8, 3) if problem == "best-model" else (12, 4)
    budget = default_budget if budget is None else budget
    init = default_init if init is None else init
    within = budget if within is None else within
    for name, value in (("--budget", budget), ("--init", init), ("--within", within)):
        if value < 1:
            raise LabreplayError(f"{name}: value {value} is below 1")
    if init > budget:
        raise LabreplayError(f"--init: value {init} exceeds --budget {budget}")
    require_surrogate(surrogate)
    factory: Any = None  # a zero-argument optimiser factory
    tally = None
    if agent is not None:
        if problem == "which-model":
            raise LabreplayError("--agent: which-model replays BO and paired random only")
        if agent.startswith("openai:"):
            from labreplay.suites.configsearch.llm_optimizer import make_factory

            options = agent_options(
                base_url=base_url, api_key_env=api_key_env, temperature=temperature,
                llm_seed=llm_seed, max_tokens=max_tokens, timeout=timeout,
                max_retries=max_retries, max_calls=max_calls,
                max_tokens_total=max_tokens_total, max_time=max_time,
            )  # fmt: skip
            if jobs > 1:
                # The LLM optimiser's calls are counted in this process (usage, all-failed):
                # worker processes would hide them from the tally.
                raise LabreplayError(
                    "--jobs: an openai: optimiser replays in one process (--jobs 1)"
                )
            factory, tally = make_factory(agent, **options)
        else:
            factory, _ = resolve_optimizer(agent)
    if references.is_dir():
        refs = load_references(references)
    elif references.is_file():
        refs = [load_reference(references)]
    else:
        raise LabreplayError(f"--references: {references} is neither a file nor a directory")
    if not refs:
        raise LabreplayError(f"--references: no *.json.gz reference file in {references}")
    chosen = range(42, 42 + seeds)
    with _pool(jobs) as pool:
        _replay_rows(refs, chosen, budget, init, within, cost_alpha, problem, min_test_points,
                     surrogate, factory, tally, agent, pool, references, seeds, json_out)  # fmt: skip


def _pool(jobs: int) -> Any:
    import contextlib

    from labreplay.suites.configsearch.references import replay_pool

    pool = replay_pool(jobs)
    return pool if pool is not None else contextlib.nullcontext()


def _replay_rows(
    refs: list[Any], chosen: range, budget: int, init: int, within: int, cost_alpha: float,
    problem: str, min_test_points: int, surrogate: str, factory: Any, tally: Any,
    agent: str | None, pool: Any, references: Path, seeds: int, json_out: bool,
) -> None:  # fmt: skip
    from labreplay.errors import LabreplayError
    from labreplay.suites.configsearch.references import (
        ReplayPlan,
        compare,
        compare_many,
        compare_which_model,
    )

    if problem == "which-model":
        by_task: dict[str, list[Any]] = {}
        for ref in refs:
            by_task.setdefault(ref.task, []).append(ref)
        pairs = [v for v in by_task.values() if len(v) == 2]
        if not pairs:
            raise LabreplayError(f"--references: no task in {references} has two models")
        rows = [
            compare_which_model(a, b, chosen, budget, init, min_test_points, surrogate, pool)
            for a, b in pairs
        ]
        if json_out:
            print_json(rows)
            return
        for row in rows:
            t = row["truth"]
            lo, hi = t["paired_difference_ci95"]
            console.print(
                f"{row['task']} which-model over {row['configurations']} C_min configurations: "
                f"{t['difference']} = {t['paired_difference']:.4g} [{lo:.4g}, {hi:.4g}] -> "
                f"{t['verdict']}; T = {budget}: "
                + "; ".join(f"{m} {v}" for m, v in row["methods"].items())
            )
        return
    if factory is None:  # every reference's seeds in one batch (the same rows as one by one)
        plans = [
            ReplayPlan(ref, problem, budget, init, within, cost_alpha, min_test_points, surrogate)
            for ref in refs
        ]
        rows = compare_many(plans, chosen, pool)
    else:
        rows = [
            compare(
                ref, chosen, budget, init, within, cost_alpha, problem, min_test_points,
                surrogate, factory, agent, pool,
            )
            for ref in refs
        ]  # fmt: skip
    failed = tally is not None and _mark_llm_rows(rows, tally)
    if json_out:
        print_json(rows)
    else:
        _print_replay_rows(rows, problem, seeds, min_test_points, within)
    if failed:
        raise typer.Exit(1)


def _mark_llm_rows(rows: list[dict[str, Any]], tally: Any) -> bool:
    """Put the LLM optimiser's usage and status on each row; True when every call failed (the
    run is failed and unranked: its invalid steps say nothing about search)."""
    failed = bool(tally.all_failed())
    for row in rows:
        if "agent" in row:
            row["agent"]["llm_usage"] = tally.usage()
            row["agent"]["status"] = "failed" if failed else "complete"
            row["agent"]["ranked"] = not failed
    return failed


def _print_replay_rows(
    rows: list[dict[str, Any]], problem: str, seeds: int, min_test_points: int, within: int
) -> None:
    from labreplay.sdk.agents import usage_line

    # A replay is computed in memory from recorded references: say so, so no reader takes
    # these rows for stored, verifiable runs.
    console.print(NOT_RUNS, markup=False)
    for row in rows:
        lo, hi = row["steps_saved_ci95"]
        extra = ""
        if "agent" in row:
            a = row["agent"]
            alo, ahi = a["vs_random"]["steps_saved_ci95"]
            extra = (
                f"; {a['label']} {a['hits']}/{seeds} (steps saved vs random "
                f"{a['vs_random']['steps_saved_mean']:.2f} [{alo:.2f}, {ahi:.2f}], "
                f"{a['invalid_steps']} invalid steps)"
            )
        console.print(
            f"{row['reference']} {problem} (C_min n*s >= {min_test_points}, surrogate "
            f"{row['bo']['surrogate']}): on target {row['configs_on_target']}/"
            f"{row['candidates']} (chance of {within} uniform draws {row['random_chance_within']:.0%}"
            f"); BO {row['bo_hits']}/{seeds} ({row['bo_hits_in_initial_design']} in the initial "
            f"design), random {row['random_hits']}/{seeds}; steps saved "
            f"{row['steps_saved_mean']:.2f} [{lo:.2f}, {hi:.2f}]{extra}"
            + "".join(f"\n  warning: {w}" for w in row["warnings"])
        )
        usage = row.get("agent", {}).get("llm_usage")
        if usage is not None:
            status = row["agent"]["status"]
            note = " (every model call failed: not ranked)" if status == "failed" else ""
            console.print(f"  {row['agent']['label']}: {status}{note}; {usage_line(usage)}")


def reference_report_cmd(
    references: Path = typer.Option(
        ..., "--references", help="A directory of reference files (export-references)."
    ),
    out: Path = typer.Option(
        Path("configsearch-references-report"),
        "--out",
        help="Output directory.",
        callback=out_dir_check(),
    ),
    seeds: int = typer.Option(
        20,
        "--seeds",
        help="Seeds 42..42+k-1 per replay.",
        callback=int_range("--seeds", 1, MAX_SEED_COUNT),
    ),
    min_test_points: int = typer.Option(
        30,
        "--min-test-points",
        help="C_min: n*s >= this.",
        callback=int_range("--min-test-points", 1),
    ),
    surrogate: str = typer.Option(
        "botorch",
        "--surrogate",
        help="BO surrogate: botorch | sklearn-gp.",
        callback=choice("--surrogate", ("botorch", "sklearn-gp")),
    ),
    jobs: int = ReplayJobsOption,
    json_out: bool = JsonOption,
) -> None:
    """The paper's claims table (robust C_min and full-space readings), BO vs random replays
    (best-model T = 8, closest T = 12), which-model verdicts, (n, s) MAE heat maps per r and
    normalised traces, read from the recorded reference files only."""
    from labreplay.errors import LabreplayError
    from labreplay.suites.configsearch import reference_report
    from labreplay.suites.configsearch.optimizers import require_surrogate
    from labreplay.suites.configsearch.references import load_references

    if not references.is_dir():
        raise LabreplayError(f"--references: {references} is not a directory")
    require_surrogate(surrogate)
    refs = load_references(references)
    if not refs:
        raise LabreplayError(f"--references: no *.json.gz reference file in {references}")
    with _pool(jobs) as pool:
        report = reference_report.build(
            refs, range(42, 42 + seeds), min_test_points, surrogate, pool
        )
    files = reference_report.write(report, refs, out)
    if json_out:
        print_json({**report["summary"], "out": str(out), "files": files})
        return
    console.print(reference_report.markdown(report), markup=False, soft_wrap=True)
    console.print(f"wrote {len(files)} pictures and references_report.md to {out}")
