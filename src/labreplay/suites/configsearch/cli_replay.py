"""`labreplay configsearch replay` and `reference-report`: searches replayed on the recorded
exhaustive reference tables (no model is trained), kept apart from the live commands in `cli`."""

from __future__ import annotations

from concurrent.futures import Executor
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from labreplay.sdk.cli import command, console, print_json, progress_printer
from labreplay.sdk.engine import MODEL_CALLS_FAILED
from labreplay.sdk.options import (
    MAX_SEED,
    MAX_SEED_COUNT,
    Checked,
    Floats,
    Ints,
    LlmOptions,
    OneOf,
    OptionError,
    OutputOptions,
    Rule,
    bad,
    counts,
    flag,
)
from labreplay.suites.configsearch.options import COST_ALPHA, out_dir

if TYPE_CHECKING:
    from labreplay.suites.configsearch.llm_optimizer import CallTally
    from labreplay.suites.configsearch.optimizers import OptimizerFactory
    from labreplay.suites.configsearch.pooled import MeasureCI, PooledBlock
    from labreplay.suites.configsearch.references import CompareRow, CostRow, Reference
    from labreplay.suites.configsearch.which_model import WhichModelRow

# The paper's budget for every problem ("within twelve steps"), METRICS.md fourth round.
DEFAULT_BUDGET = 12
DEFAULT_INIT = 4


def default_init(budget: int) -> int:
    """T0 when none is given: the paper's 4, capped at T - 1 (a search made only of the shared
    initial design compares no optimiser); 1 at T = 1."""
    return max(1, min(DEFAULT_INIT, budget - 1))


@dataclass(frozen=True, kw_only=True)
class ReplayCommon(Checked):
    """What both replay commands take (the command line's: a replay has no API door)."""

    seed_start: int = flag(
        42,
        "First seed: seeds N..N+k-1, chosen before the run (fresh seeds: any unused N).",
        check=Ints(0, MAX_SEED - MAX_SEED_COUNT),
        api=False,
    )
    keep_degenerate: bool = flag(
        False,
        "Keep configurations with a degenerate test fold (one point-mass target value, e.g. "
        "all metals) as candidates and targets: the raw reading, before METRICS.md's fourth "
        "round.",
        api=False,
    )
    jobs: int = flag(
        1,
        "Worker processes for replays (speed only: every seed gives the same rows).",
        check=Ints(1, 64),
        api=False,
    )

    def references_of(self, refs: list[Reference]) -> list[Reference]:
        """The references under this command's degenerate-fold rule."""
        import dataclasses

        return [dataclasses.replace(r, exclude_degenerate=not self.keep_degenerate) for r in refs]

    def seed_range(self, seeds: int) -> range:
        return range(self.seed_start, self.seed_start + seeds)


def _surrogate(label: str, value: str) -> str:
    """A known BO surrogate whose library is installed."""
    from labreplay.suites.configsearch.optimizers import require_surrogate

    name = OneOf(("botorch", "sklearn-gp"))(label, value)
    require_surrogate(name)
    return name


@dataclass(frozen=True, kw_only=True)
class ReplayArgs(ReplayCommon):
    """`configsearch replay`."""

    references: Path = flag(
        help="A reference file or a directory of them (export-references).", api=False
    )
    seeds: int = flag(
        20, "Seeds N..N+k-1 (N = --seed-start).", check=Ints(1, MAX_SEED_COUNT), api=False
    )
    budget: int = flag(
        DEFAULT_BUDGET,
        "Search steps T (default the paper's 12 for every problem; the bench also reports "
        "T = 8 with --init 3).",
        check=counts(),
        api=False,
    )
    init: int | None = flag(
        None,
        "Initial design T0 (default the paper's 4, at most T - 1 so at least one step is "
        "the optimiser's).",
        check=counts(),
        api=False,
    )
    within: int | None = flag(
        None,
        "Count seeds reaching the target within this many evaluations (T).",
        check=counts(),
        api=False,
    )
    cost_alpha: float = flag(
        COST_ALPHA,
        "BO: weight of the fit cost (0 = plain EI).",
        check=Floats(0.0, 100.0),
        api=False,
    )
    problem: str = flag(
        "best-model",
        "best-model | closest (nearest the MAE at (0, 48, 10)) | which-model (paired).",
        check=OneOf(("best-model", "closest", "which-model")),
        api=False,
    )
    min_test_points: int = flag(
        30, "C_min: search configurations with n*s >= this only.", check=counts(), api=False
    )
    surrogate: str = flag(
        "botorch",
        "BO surrogate: botorch (the bo extra) | sklearn-gp.",
        check=Rule(_surrogate, "bogus"),
        api=False,
    )
    agent: str | None = flag(
        None,
        "Your ask/tell optimiser as MODULE:ATTR, or openai:MODEL (an LLM optimiser), "
        "replayed beside BO/random.",
        api=False,
    )
    json_pooled: bool = flag(
        False,
        "With --json: one object {rows, pooled} (the pooled BO-vs-reference block) instead "
        "of the list of rows.",
        api=False,
    )

    def check(self) -> None:
        if self.init is not None and self.init > self.budget:
            raise bad("--init", self.init, f"exceeds --budget {self.budget}")
        if self.agent is not None and self.problem == "which-model":
            raise bad("--agent", self.agent, "which-model replays BO and paired random only")
        from labreplay.sdk.agents import is_llm_agent

        if is_llm_agent(self.agent) and self.jobs > 1:
            # The LLM optimiser's calls are counted in this process (usage, all-failed):
            # worker processes would hide them from the tally.
            raise bad("--jobs", self.jobs, "an openai: optimiser replays in one process (--jobs 1)")

    def design(self) -> tuple[int, int]:
        """(T0, the evaluations a hit counts within)."""
        init = default_init(self.budget) if self.init is None else self.init
        return init, self.budget if self.within is None else self.within


@dataclass(frozen=True, kw_only=True)
class ReferenceReportArgs(ReplayCommon):
    """`configsearch reference-report`."""

    # required, refused in `check` (after --out's own check: a FIFO there is named first)
    references: Path | None = flag(
        None, "A directory of reference files (export-references).", api=False
    )
    out: Path = flag(
        Path("configsearch-references-report"),
        "Output directory.",
        check=Rule(out_dir),
        api=False,
    )
    seeds: int = flag(
        20,
        "Seeds N..N+k-1 per replay (N = --seed-start).",
        check=Ints(1, MAX_SEED_COUNT),
        api=False,
    )
    min_test_points: int = flag(30, "C_min: n*s >= this.", check=counts(), api=False)
    surrogate: str = flag(
        "botorch",
        "BO surrogate: botorch | sklearn-gp.",
        check=Rule(_surrogate, "bogus"),
        api=False,
    )

    def check(self) -> None:
        if self.references is None:
            raise OptionError("--references: missing (a directory of reference files)")

    def reference_dir(self) -> Path:
        assert self.references is not None  # refused in `check`
        return self.references


NOT_RUNS = (
    "replay: computed in memory from the recorded references; no runs are written to any "
    "store and these rows are on no leaderboard (use `configsearch run --store` for runs)"
)


def register(app: typer.Typer) -> None:
    """Mount the replay commands on the configsearch app (in the order `--help` lists them)."""
    command(app, "replay", ReplayArgs, LlmOptions, OutputOptions)(replay_cmd)
    command(app, "reference-report", ReferenceReportArgs, OutputOptions)(reference_report_cmd)


def replay_cmd(args: ReplayArgs, llm: LlmOptions, output: OutputOptions) -> None:
    """BO vs random search and the no-data heuristic smallest-ns (and your optimiser) replayed on exhaustive reference tables: every
    evaluation is a lookup, so many seeds and every task take seconds, and no model is fitted.
    A replay writes no runs: its rows are on no leaderboard and `store verify` never sees
    them."""
    from labreplay.errors import LabreplayError
    from labreplay.suites.configsearch.optimizers import resolve_optimizer
    from labreplay.suites.configsearch.references import load_reference, load_references

    agent, references = args.agent, args.references
    factory: OptimizerFactory | None = None  # a zero-argument optimiser factory
    tally = None
    if agent is not None:
        from labreplay.sdk.agents import is_llm_agent

        if is_llm_agent(agent):
            from labreplay.suites.configsearch.llm_optimizer import make_factory

            factory, tally = make_factory(agent, **llm.builder_kwargs())
        else:
            factory, _ = resolve_optimizer(agent)
    # a directory of references, or one file (a FIFO, a device... there: the reader names it)
    refs = load_references(references) if references.is_dir() else [load_reference(references)]
    if not refs:
        raise LabreplayError(f"--references: no *.json.gz reference file in {references}")
    refs = args.references_of(refs)
    with _pool(args.jobs) as pool:
        _replay_rows(args, refs, factory, tally, pool, output)


def _pool(jobs: int) -> AbstractContextManager[Executor | None]:
    import contextlib

    from labreplay.suites.configsearch.references import replay_pool

    pool = replay_pool(jobs)
    return pool if pool is not None else contextlib.nullcontext()


def _replay_rows(
    args: ReplayArgs,
    refs: list[Reference],
    factory: OptimizerFactory | None,
    tally: CallTally | None,
    pool: Executor | None,
    output: OutputOptions,
) -> None:
    from labreplay.errors import LabreplayError
    from labreplay.suites.configsearch.references import (
        ReplayPlan,
        compare,
        compare_many,
    )
    from labreplay.suites.configsearch.which_model import compare_which_model

    init, within = args.design()
    problem, budget, min_test_points = args.problem, args.budget, args.min_test_points
    chosen, surrogate, json_pooled = args.seed_range(args.seeds), args.surrogate, args.json_pooled
    progress, json_out = progress_printer(output.quiet), output.json_out
    if problem == "which-model":
        by_task: dict[str, list[Reference]] = {}
        for ref in refs:
            by_task.setdefault(ref.task, []).append(ref)
        pairs = [v for v in by_task.values() if len(v) == 2]
        if not pairs:
            raise LabreplayError(f"--references: no task in {args.references} has two models")
        which_rows = []
        for a, b in pairs:
            which_rows.append(
                compare_which_model(a, b, chosen, budget, init, min_test_points, surrogate, pool)
            )
            if progress is not None:
                progress(f"which-model {a.task}: {len(chosen)} seeds done")
        if json_out:
            print_json({"rows": which_rows} if json_pooled else which_rows)
            return
        for row in which_rows:
            if not row["scored"]:
                console.print(f"{row['task']} which-model: {row['reason']}", markup=False)
                continue
            console.print(_which_model_line(row), markup=False)
        return
    if factory is None:  # every reference's seeds in one batch (the same rows as one by one)
        plans = [
            ReplayPlan(
                ref, problem, budget, init, within, args.cost_alpha, min_test_points, surrogate
            )
            for ref in refs
        ]
        rows: list[CompareRow] = compare_many(plans, chosen, pool, progress)
    else:
        rows = [
            compare(
                ref, chosen, budget, init, within, args.cost_alpha, problem, min_test_points,
                surrogate, factory, args.agent, pool,
            )
            for ref in refs
        ]  # fmt: skip
    from labreplay.suites.configsearch.cost import pooled_cost_claims
    from labreplay.suites.configsearch.pooled import pooled

    failed = tally is not None and _mark_llm_rows(rows, tally)
    block = pooled(rows)
    scored = [r for r in rows if r["scored"]]
    cost_pooled = pooled_cost_claims(scored)
    if json_out:
        whole = {"rows": rows, "pooled": block, "cost_claims_pooled": cost_pooled}
        print_json(whole if json_pooled else rows)
    else:
        _print_replay_rows(rows, problem, args.seeds, min_test_points, within)
        _print_pooled(block, chosen)
        for c in cost_pooled:
            lo, hi = c["saved_ci95"]
            console.print(
                f"  cost, {c['method']} vs {c['protocol']} over {c['references']} references: "
                f'{c["saved"]:.0%} saved [{lo:.0%}, {hi:.0%}] -> "more than half the cost '
                f'saved" {c["verdict"]}',
                markup=False,
            )
    if failed:
        raise typer.Exit(1)


def _which_model_line(row: WhichModelRow) -> str:
    t = row["truth"]
    lo, hi = t["paired_difference_ci95"]
    pr = row["methods"]["paired random"]
    named = ", ".join(f"{m} {k}" for m, k in pr["named"].items())
    loc = row["largest_difference"]
    assert loc is not None  # the replay locates it (compare_which_model's default)
    bo, rnd = loc["methods"]["bo"], loc["methods"]["random"]
    return (
        f"{row['task']} which-model over {row['configurations']} C_min configurations: "
        f"{t['difference']} = {t['paired_difference']:.4g} [{lo:.4g}, {hi:.4g}] (95%, "
        f"clustered by {t.get('interval_blocks')} (r, n) blocks) -> {t['verdict']}\n  paired random design, T = {row['budget']} configurations per seed: "
        f"{pr['tied']} tied, {named}; {pr['agrees_with_truth']}/{row['seeds']} agree with the "
        f"truth\n  largest |difference| (a separate search problem; target >= "
        f"{loc['target']:.4g}, {loc['on_target']} configurations, largest {loc['largest']:.4g}): "
        f"BO {bo['hits']}/{row['seeds']} (mean found {bo['mean_found']:.4g}), random "
        f"{rnd['hits']}/{row['seeds']} (mean found {rnd['mean_found']:.4g})"
    )


def _print_pooled(block: PooledBlock, chosen: range) -> None:
    b = block["bootstrap"]
    console.print(
        f"pooled over {len(block['references'])} references x {block['seeds_per_reference']} "
        f"seeds ({chosen.start}..{chosen.stop - 1}), paired by (reference, seed), BO minus each "
        f"reference method, the strongest baseline (most hits) first; 95% cluster bootstrap "
        f"(references, then seeds; {b['resamples']} resamples, seed {b['seed']}):",
        markup=False,
    )
    if block["left_out"]:
        console.print(f"  left out (no scored target): {', '.join(block['left_out'])}")

    def cell(m: MeasureCI | int, fmt: str) -> str:
        if isinstance(m, int):  # the counts of `vs` are printed as they are, not as cells
            return str(m)
        lo, hi = m["ci95"]
        note = "" if m["resolved"] else ", unresolved"
        return f"{m['mean']:{fmt}} [{lo:{fmt}}, {hi:{fmt}}]{note}"

    for other, v in block["vs"].items():
        lead = " (the strongest baseline)" if other == block["strongest"] else ""
        console.print(
            f"  vs {other}{lead}: hits {v['bo_hits']} vs {v[other + '_hits']} of {v['searches']}; "
            f"hit rate {cell(v['hit'], '+.3f')}; steps saved {cell(v['steps_saved'], '+.2f')}; "
            f"normalised gain {cell(v['normalised_gain'], '+.3f')}; extra fits "
            f"{cell(v['extra_fits'], '+.1f')}",
            markup=False,
        )


def _mark_llm_rows(rows: list[CompareRow], tally: CallTally) -> bool:
    """Put the LLM optimiser's usage and status on each row; True when every call failed (the
    run is failed and unranked: its invalid steps say nothing about search)."""
    failed = bool(tally.all_failed())
    for row in rows:
        if row["scored"] and "agent" in row:  # an unscored row ran no optimiser
            row["agent"]["llm_usage"] = tally.usage()
            row["agent"]["status"] = "failed" if failed else "complete"
            row["agent"]["ranked"] = not failed
            if failed:  # the failed-run rule's words, as `configsearch run` records them
                first = " ".join(str(tally.calls[0].get("error")).split())[:300]
                row["agent"]["cause"] = (
                    f"{MODEL_CALLS_FAILED}: every model call failed; first: {first}"
                )
    return failed


def _print_replay_rows(
    rows: list[CompareRow], problem: str, seeds: int, min_test_points: int, within: int
) -> None:
    from labreplay.sdk.agents import usage_line
    from labreplay.suites.configsearch.cost import cost_claim_line

    # A replay is computed in memory from recorded references: say so, so no reader takes
    # these rows for stored, verifiable runs.
    console.print(NOT_RUNS, markup=False)
    for row in rows:
        if not row["scored"]:
            console.print(
                f"{row['reference']} {problem}: {row['reason']} ({row['degenerate_configs']} "
                "configurations of the table flagged)",
                markup=False,
            )
            continue
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
            f"{row['candidates']} (chance of the random search run, its initial design then uniform draws, "
            f"{row['random_chance_within']:.0%}; of {within} uniform draws "
            f"{row['uniform_chance_within']:.0%}); BO {row['bo_hits']}/{seeds} ({row['bo_hits_in_initial_design']} in the initial "
            f"design), random {row['random_hits']}/{seeds}; steps saved "
            f"{row['steps_saved_mean']:.2f} [{lo:.2f}, {hi:.2f}]{extra}"
            + "".join(f"\n  warning: {w}" for w in row["warnings"])
        )
        if row["degenerate_configs"]:
            console.print(
                f"  degenerate: {row['degenerate_configs_in_c_min']} C_min configurations have a "
                f"degenerate test fold; "
                + ("excluded from candidates and targets" if row["degenerate_excluded"]
                   else "kept (--keep-degenerate)"),
                markup=False,
            )  # fmt: skip
        h = row["heuristic"]
        hlo, hhi = h["bo_vs_heuristic"]["steps_saved_ci95"]
        console.print(
            f"  smallest-ns (no-data heuristic, ascending n*s) {h['hits']}/{seeds} "
            f"({h['hits_in_initial_design']} in the initial design); BO steps saved vs it "
            f"{h['bo_vs_heuristic']['steps_saved_mean']:.2f} [{hlo:.2f}, {hhi:.2f}]"
            + (f"\n  boundary: {h['boundary']}" if h["boundary"] else ""),
            markup=False,
        )
        console.print("  " + _cost_line(row["cost"]), markup=False)
        console.print("  " + cost_claim_line(row["cost"]["claim"]), markup=False)
        usage = row.get("agent", {}).get("llm_usage")
        if usage is not None:
            status = row["agent"]["status"]
            cause = row["agent"].get("cause")
            note = f" ({cause}: not ranked)" if cause else ""
            console.print(f"  {row['agent']['label']}: {status}{note}; {usage_line(usage)}")


def _cost_line(cost: CostRow) -> str:
    parts = [
        f"{m} {c['mean_fits']:.0f} ({c['saved_vs_exhaustive']:.0%} saved, "
        f"{c['times_single_config']:.1f}x single)"
        for m, c in cost["methods"].items()
    ]
    return (
        f"cost, mean model fits per search vs exhaustive sweep {cost['exhaustive_fits']} fits "
        f"and single configuration (0, 48, 10) {cost['single_config_fits']} fits: "
        + "; ".join(parts)
    )


def reference_report_cmd(args: ReferenceReportArgs, output: OutputOptions) -> None:
    """The paper's claims table (robust C_min and full-space readings), BO vs random replays
    (every problem at T = 12, T0 = 4), which-model verdicts, (n, s) MAE heat maps per r and
    normalised traces, read from the recorded reference files only."""
    from labreplay.errors import LabreplayError
    from labreplay.sdk import readable_dir
    from labreplay.suites.configsearch import reference_report
    from labreplay.suites.configsearch.references import load_references

    references, out = args.reference_dir(), args.out
    readable_dir(references, "--references")
    refs = load_references(references)
    if not refs:
        raise LabreplayError(f"--references: no *.json.gz reference file in {references}")
    refs = args.references_of(refs)
    with _pool(args.jobs) as pool:
        report = reference_report.build(
            refs, args.seed_range(args.seeds), args.min_test_points, args.surrogate, pool,
            progress=progress_printer(output.quiet),
        )  # fmt: skip
    files = reference_report.write(report, refs, out)
    if output.json_out:
        print_json({**report["summary"], "out": str(out), "files": files})
        return
    console.print(reference_report.markdown(report), markup=False, soft_wrap=True)
    console.print(f"wrote {len(files)} pictures and references_report.md to {out}")
