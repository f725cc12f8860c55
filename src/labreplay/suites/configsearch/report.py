"""Configsearch report, read only from the store: sweep spread, chosen configurations, BO vs
random evaluations-to-target, cost saved, and the paper-style plots (3-D MAE scatter over
(r, n, s); best-so-far traces)."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NotRequired, TypedDict

import numpy as np

from labreplay.sdk import atomic_write_bytes, sha256_json
from labreplay.sdk.engine import RunInfo, Store
from labreplay.sdk.events import JsonValue
from labreplay.sdk.scoring import paired_bootstrap_ci
from labreplay.suites.configsearch.data import BUILTIN_TASKS
from labreplay.suites.configsearch.events import ConfigJson, EvaluationPayload
from labreplay.suites.configsearch.optimizers import SurrogateIdentity
from labreplay.suites.configsearch.search import (
    Answer,
    Candidate,
    SearchResult,
    Step,
    candidates,
    landscape,
)
from labreplay.suites.configsearch.space import REFERENCE_CONFIG, Config
from labreplay.suites.configsearch.targets import (
    MIN_TEST_POINTS,
    PaperClaims,
    SweepSummary,
    chance_of_target,
    costs,
    paper_claims,
    sweep_summary,
    target_metrics,
)

SUITE = "configsearch"


PROTOCOL_KEYS = ("n_total", "n_ood", "s_max", "space", "space_size")
GROUP_KEYS = ("budget", "init", "gt", "cost_alpha", "initial_design")
# runs under different surrogates (or library versions) are never one group
SURROGATE_KEY = "surrogate"


class SweepRow(SweepSummary):
    """One stored exhaustive sweep: its landscape and the paper's findings checked on it."""

    run_id: str
    task: str
    model: str
    protocol: str
    infeasible: int | None  # configurations that cannot be evaluated (None: not recorded)
    paper_claims: PaperClaims


class SearchGroup(TypedDict):
    """The runs of one search protocol (task, models, problem, method, T, T0, surrogate...)
    over their seeds; target columns recomputed from the sweeps stored now (None: no sweep
    of every model yet)."""

    task: str
    models: str  # comma-joined
    problem: str
    method: str
    protocol: str
    budget: int
    init: int
    gt: str | None
    cost_alpha: float | None
    initial_design: str | None
    surrogate: SurrogateIdentity | None  # BO's, as its runs recorded it
    seeds: int
    truth_known: bool
    reached_target: int | None
    reached_in_initial_design: int | None
    reached_top1pct: int | None
    median_steps_to_target: float | None
    median_evaluations_to_target: float | None
    mean_final_normalised: float | None
    mean_final_best: float | None
    mean_evaluations: float | None
    mean_fits: float | None
    exhaustive_evaluations: int | None
    exhaustive_fits: int | None
    exhaustive_optimum: float | None
    exhaustive_median: float | None
    degenerate_objective: bool | None
    configs_on_target: int | None
    candidates: int | None
    mean_cost_saved_evaluations_vs_exhaustive: float | None
    mean_cost_saved_fits_vs_exhaustive: float | None
    mean_cost_saved_evaluations_vs_omee_0_48_10: float | None
    mean_cost_saved_fits_vs_omee_0_48_10: float | None
    bo_overhead_max_s: float
    answer_seed42: Answer | None
    seed_list: list[int]
    traces: NotRequired[dict[int, list[float]]]  # seed -> best so far (not in the JSON)
    normalised_traces: NotRequired[dict[int, list[float | None]]]  # (not in the JSON)
    steps_to_target_by_seed: dict[int, int | None]


class Comparison(TypedDict):
    """BO vs random search of one protocol, paired over the seeds both ran."""

    task: str
    models: str
    problem: str
    protocol: str
    budget: int
    init: int
    cost_alpha: float | None
    paired_seeds: int
    bo_reached: int
    random_reached: int
    mean_steps_saved: float  # random - BO (> 0: BO faster)
    ci95: list[float]
    bo_better: bool


class ConfigsearchReport(TypedDict):
    sweeps: list[SweepRow]
    searches: list[SearchGroup]
    comparisons: list[Comparison]
    files: NotRequired[list[str]]  # the plots `write_report` drew


def _sweep_points(store: Store, run: RunInfo) -> list[EvaluationPayload]:
    return [e["payload"] for e in store.events(run.run_id) if e["kind"] == "evaluation"]


def _config(p: ConfigJson) -> Config:
    return Config(float(p["r"]), int(p["n"]), int(p["s"]))


def _protocol_label(params: Mapping[str, JsonValue]) -> str:
    return ", ".join(f"{k}={params.get(k)}" for k in PROTOCOL_KEYS)


def _run_trajectory(
    store: Store, run: RunInfo
) -> tuple[list[Step], dict[str, float], int, list[tuple[str, Config]]]:
    steps, truth, gt_evals = [], {}, 0
    for e in store.events(run.run_id):
        p = e["payload"]
        if e["kind"] == "ground_truth":
            truth, gt_evals = dict(p["values"]), int(p["evaluations"])
        elif e["kind"] == "step":
            steps.append(
                Step(
                    p["step"],
                    p["phase"],
                    Candidate(_config(p["config"]), p["model"]) if p["config"] else None,
                    dict(p["maes"]),
                    p["objective"],
                    p["best_so_far"],
                    p["acquisition"],
                    0.0,
                    int(p.get("new_fits", 0)),
                    p.get("error"),
                )
            )
    used = [(m, s.candidate.config) for s in steps if s.candidate for m in s.maes]
    return steps, truth, gt_evals, used


def _censored(steps: int | None, budget: int) -> float:
    """Steps to target with a miss counted as budget + 1 (declared censoring)."""
    return float(steps) if steps is not None else float(budget + 1)


def collect(store: Store) -> ConfigsearchReport:
    """Everything from the store; target metrics are recomputed here from the stored steps and
    whatever sweeps the store holds now, so a sweep that arrives after a run still counts."""
    runs = store.runs(suite=SUITE, status="complete")
    sweeps: list[SweepRow] = []
    tables: dict[tuple[str, str], dict[Config, float]] = {}
    for run in runs:
        if run.branch != "sweep/exhaustive":
            continue
        params = run.agent_params
        points = _sweep_points(store, run)
        tables[(run.spec_hash, params["models"][0])] = {
            _config(p["config"]): float(p["mae"]) for p in points
        }
        summary = sweep_summary(points)
        sweeps.append(
            {
                "run_id": run.run_id,
                "task": params["task"],
                "model": params["models"][0],
                "protocol": _protocol_label(params),
                "infeasible": (run.summary or {}).get("infeasible"),
                "paper_claims": paper_claims(points, params["task"]),
                **summary,
            }
        )
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for run in runs:
        if run.branch == "sweep/exhaustive":
            continue
        params = run.agent_params
        models = list(params["models"])
        key = (
            params["task"],
            ",".join(models),
            params["problem"],
            run.agent,
            _protocol_label(params),
            *(params.get(k) for k in GROUP_KEYS),
            json.dumps(params.get(SURROGATE_KEY), sort_keys=True),
        )
        steps, truth, gt_evals, used = _run_trajectory(store, run)
        result = SearchResult(params["problem"], run.agent, steps, truth, gt_evals)
        item: dict[str, Any] = {
            "seed": run.seed,
            "run_id": run.run_id,
            "answer": result.answer(),
            "trace": result.trace(),
            "evaluations": result.evaluations + gt_evals,
            "best_objective": result.trace()[-1] if steps else None,
            "bo_overhead_max_s": (run.summary or {}).get("bo_overhead_max_s"),
        }
        if all((run.spec_hash, m) in tables for m in models) and steps:
            table = {(m, c): v for m in models for c, v in tables[(run.spec_hash, m)].items()}
            feasible = sorted({c for _, c in table})
            if all((m, c) in table for m in models for c in feasible):
                if result.problem == "closest" and gt_evals:
                    used += [(m, Config(*REFERENCE_CONFIG)) for m in models]
                # the run's own C_min (recorded with it; runs before it existed: the default)
                c_min = int(params.get("min_test_points") or MIN_TEST_POINTS)
                cands = candidates(result.problem, feasible, models, c_min)
                exhaustive = [
                    (m, c.config) for c in cands for m in ([c.model] if c.model else models)
                ]
                land = landscape(result.problem, table, models, feasible, truth, c_min)
                cumulative = list(np.cumsum([len(s.maes) for s in steps]).tolist())
                item |= target_metrics(land, result.trace(), cumulative, int(params["init"]))
                item |= costs(used, exhaustive, models)
        if "cost_saved_fits_vs_exhaustive" not in item:
            item |= {
                k: v
                for k, v in (run.summary or {}).items()
                if k.startswith(("used_", "cost_saved_", "omee_", "exhaustive_ev"))
            }
        groups[key].append(item)
    searches: list[SearchGroup] = []
    for key, items in sorted(groups.items(), key=lambda kv: tuple(map(str, kv[0]))):
        task, models, problem, method, protocol, budget, init, gt, alpha, design, bo = key
        items.sort(key=lambda i: i["seed"])
        has_truth = all("steps_to_target" in i for i in items)

        def mean(name: str, items: list[dict[str, Any]] = items) -> float | None:
            values = [i[name] for i in items if i.get(name) is not None]
            return float(np.mean(values)) if values else None

        hits = [i["steps_to_target"] for i in items if i.get("steps_to_target") is not None]
        seed42 = next((i["answer"] for i in items if i["seed"] == 42), None)
        searches.append(
            {
                "task": task,
                "models": models,
                "problem": problem,
                "method": method,
                "protocol": protocol,
                "budget": budget,
                "init": init,
                "gt": gt,
                "cost_alpha": alpha,
                "initial_design": design,
                "surrogate": json.loads(bo),
                "seeds": len(items),
                "truth_known": has_truth,
                "reached_target": len(hits) if has_truth else None,
                "reached_in_initial_design": sum(
                    bool(i.get("target_in_initial_design")) for i in items
                )
                if has_truth
                else None,
                "reached_top1pct": sum(bool(i.get("reached_top1pct")) for i in items)
                if has_truth
                else None,
                "median_steps_to_target": float(np.median(hits)) if hits else None,
                "median_evaluations_to_target": float(
                    np.median(
                        [i["evaluations_to_target"] for i in items if i.get("steps_to_target")]
                    )
                )
                if hits
                else None,
                "mean_final_normalised": mean("final_normalised"),
                "mean_final_best": mean("best_objective"),
                "mean_evaluations": mean("evaluations"),
                "mean_fits": mean("used_fits"),
                "exhaustive_evaluations": items[0].get("exhaustive_evaluations"),
                "exhaustive_fits": items[0].get("exhaustive_fits"),
                "exhaustive_optimum": items[0].get("exhaustive_optimum"),
                "exhaustive_median": items[0].get("exhaustive_median"),
                "degenerate_objective": items[0].get("degenerate_objective"),
                "configs_on_target": items[0].get("configs_on_target"),
                "candidates": items[0].get("candidates"),
                "mean_cost_saved_evaluations_vs_exhaustive": mean(
                    "cost_saved_evaluations_vs_exhaustive"
                ),
                "mean_cost_saved_fits_vs_exhaustive": mean("cost_saved_fits_vs_exhaustive"),
                "mean_cost_saved_evaluations_vs_omee_0_48_10": mean(
                    "cost_saved_evaluations_vs_omee_0_48_10"
                ),
                "mean_cost_saved_fits_vs_omee_0_48_10": mean("cost_saved_fits_vs_omee_0_48_10"),
                "bo_overhead_max_s": max((i.get("bo_overhead_max_s") or 0.0) for i in items),
                "answer_seed42": seed42,
                "seed_list": [i["seed"] for i in items],
                "traces": {i["seed"]: i["trace"] for i in items},
                "normalised_traces": {
                    i["seed"]: i["normalised_trace"] for i in items if "normalised_trace" in i
                },
                "steps_to_target_by_seed": {i["seed"]: i.get("steps_to_target") for i in items},
            }
        )
    return {"sweeps": sweeps, "searches": searches, "comparisons": _comparisons(searches)}


def _comparisons(searches: list[SearchGroup]) -> list[Comparison]:
    """BO vs random on steps to target, paired over the seeds both ran (same protocol, budget,
    T0 and initial design); a miss counts as budget + 1. Difference = random - BO (> 0: BO
    faster), with a seeded percentile-bootstrap 95% interval."""
    out: list[Comparison] = []
    for bo in searches:
        if bo["method"] != "bo" or not bo["truth_known"]:
            continue
        match = [
            g
            for g in searches
            if g["method"] == "random"
            and g["truth_known"]
            and all(
                g[k] == bo[k]
                for k in ("task", "models", "problem", "protocol", "budget", "init", "gt")
            )
        ]
        if not match:
            continue
        rnd = match[0]
        seeds = sorted(set(bo["steps_to_target_by_seed"]) & set(rnd["steps_to_target_by_seed"]))
        if not seeds:
            continue
        budget = int(bo["budget"])
        diffs = [
            _censored(rnd["steps_to_target_by_seed"][s], budget)
            - _censored(bo["steps_to_target_by_seed"][s], budget)
            for s in seeds
        ]
        mean_diff, lo, hi = paired_bootstrap_ci(diffs, seed=0, purpose="configsearch-bo-vs-random")
        out.append(
            {
                "task": bo["task"],
                "models": bo["models"],
                "problem": bo["problem"],
                "protocol": bo["protocol"],
                "budget": budget,
                "init": bo["init"],
                "cost_alpha": bo["cost_alpha"],
                "paired_seeds": len(seeds),
                "bo_reached": sum(bo["steps_to_target_by_seed"][s] is not None for s in seeds),
                "random_reached": sum(rnd["steps_to_target_by_seed"][s] is not None for s in seeds),
                "mean_steps_saved": mean_diff,
                "ci95": [lo, hi],
                "bo_better": lo > 0,
            }
        )
    return out


def _plot_sweep(store: Store, sweep: SweepRow, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    run = store.run(sweep["run_id"])
    points = _sweep_points(store, run)
    r = [p["config"]["r"] for p in points]
    n = [p["config"]["n"] for p in points]
    s = [p["config"]["s"] for p in points]
    mae = np.array([p["mae"] for p in points])
    fig = plt.figure(figsize=(6, 5))
    ax = fig.add_subplot(projection="3d")
    size = 10 + 60 * (mae - mae.min()) / (np.ptp(mae) or 1.0)
    sc = ax.scatter(r, n, s, c=mae, s=size, cmap="viridis")
    ax.set_xlabel("r (JARVIS share)")
    ax.set_ylabel("n (clusters)")
    ax.set_zlabel("s (test per cluster)")
    ax.set_title(f"{sweep['task']} / {sweep['model']}: MAE over (r, n, s)")
    fig.colorbar(sc, ax=ax, shrink=0.6, label="MAE")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot_traces(group: list[SearchGroup], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    colours = {"bo": "tab:red", "random": "tab:blue"}
    normalised = all(item["normalised_traces"] for item in group)
    for item in group:
        shown = item["normalised_traces"] if normalised else item["traces"]
        traces = [[v if v is not None else float("nan") for v in t] for t in shown.values()]
        colour = colours.get(item["method"], "grey")
        for trace in traces:
            ax.plot(range(1, len(trace) + 1), trace, color=colour, alpha=0.15, lw=0.8)
        length = min(len(t) for t in traces)
        mean = np.mean([t[:length] for t in traces], axis=0)
        ax.plot(
            range(1, length + 1),
            mean,
            color=colour,
            lw=2,
            label=f"{item['method']} (mean of {len(traces)} seeds)",
        )
    ax.set_xlabel("step")
    ax.set_ylabel("normalised best-so-far score" if normalised else "best-so-far objective")
    ax.set_title(f"{group[0]['task']} / {group[0]['problem']} ({group[0]['models']})")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _fmt(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _method(group: SearchGroup) -> str:
    """The method with its surrogate and library version (BO), so no two surrogates share a row."""
    bo = group.get("surrogate")
    if not bo:
        return str(group["method"])
    version = (bo.get("versions") or {}).get(bo["surrogate"])
    return f"{group['method']} ({bo['surrogate']} {version or ''})".replace(" )", ")")


def _on_target(group: SearchGroup) -> str:
    good, size = group.get("configs_on_target"), group.get("candidates")
    if good is None or not size:
        return "-"
    return f"{good}/{size} ({chance_of_target(good, size, int(group['budget'])):.0%})"


def markdown(report: ConfigsearchReport) -> str:
    lines = [
        "# Configsearch report",
        "",
        "## Exhaustive sweeps (MAE landscape over configurations)",
        "",
        "Test sets: each fold's s test points are its anchor and the anchor's s - 1 nearest OOD "
        "candidates; `short folds` counts folds with fewer than s points (must be 0). A fold is "
        "degenerate when all its test targets sit on one point mass of the target (e.g. zero-gap "
        "metals); the spread is shown with and without those folds.",
        "",
        "| task | model | protocol | evaluated | infeasible | test points | short folds | "
        "degenerate folds | min MAE | max MAE | max/min | max/min w/o degenerate | argmin | "
        "argmin test points (degenerate folds) | configurations on target |",
        "|" + "---|" * 15,
    ]
    if not report["sweeps"]:
        lines.append("| (no exhaustive sweep stored) |||||||||||||||")
    for s in report["sweeps"]:
        at = s["argmin"]
        argmin = (at["r"], at["n"], at["s"]) if at else (None, None, None)
        tp = s["test_points"]
        lines.append(
            f"| {s['task']} | {s['model']} | {s['protocol']} | {s['evaluated']} | "
            f"{_fmt(s['infeasible'])} | {tp['min']}..{tp['max']} | {s['short_folds']} | "
            f"{s['degenerate_folds']}/{s['folds']} | {_fmt(s['mae']['min'])} | "
            f"{_fmt(s['mae']['max'])} | {_fmt(s['mae']['max_min_ratio'])} | "
            f"{_fmt(s['mae_without_degenerate_folds']['max_min_ratio'])} | "
            f"({', '.join(_fmt(v) for v in argmin)}) | "
            f"{_fmt(s.get('argmin_test_points'))} ({_fmt(s.get('argmin_degenerate_folds'))}) | "
            f"{_fmt(s.get('configs_on_target'))}/{s['evaluated']} |"
        )
    for s in report["sweeps"]:
        a, points = s["argmin"], s["argmin_test_points"]
        if a is None or points is None:  # (both None together: no evaluation)
            continue
        if points >= 30 and s["argmin_degenerate_folds"] != a["n"]:
            continue
        lines.append(
            f"\nNote ({s['task']} x {s['model']}): the optimum ({a['r']:g}, {a['n']}, {a['s']}) "
            f"is scored on {s['argmin_test_points']} test points with "
            f"{s['argmin_degenerate_folds']} of {a['n']} folds degenerate; only "
            f"{s['configs_on_target']} of {s['evaluated']} configurations clear the normalised "
            "target (flagged: under 30 test points or every fold degenerate). A search that "
            "'finds the best configuration' here finds the easiest small "
            "test set: read the target columns below as a needle search, not as a benchmark "
            "recommendation."
        )
    lines += [
        "",
        "## The paper's findings against these sweeps",
        "",
        "From the mean MAE per value of each axis (declared thresholds): s <= 8 optimal = the "
        "best s is at most 8; n <= 24 enough = the best n <= 24 is within 5% of the best n; r "
        "negligible = the range over r is under a fifth of the range over n, for the r values the "
        "JARVIS pool allows (listed); band gap s = 1 = the best s is 1.",
        "",
        "| task | model | best s | s <= 8 optimal | best n | n <= 24 enough | r values | "
        "range over r | range over n | r negligible | band gap s = 1 |",
        "|" + "---|" * 11,
    ]
    for s in report["sweeps"]:
        pc = s["paper_claims"]
        if not pc:
            continue
        lines.append(
            f"| {s['task']} | {s['model']} | {pc['best_s']} | {pc['s_le_8_optimal']} | "
            f"{pc['best_n']} | {pc['n_le_24_enough']} | "
            f"{','.join(f'{r:g}' for r in pc['r_values'])} "
            f"| {_fmt(pc['r_range'])} | {_fmt(pc['n_range'])} | {_fmt(pc['r_negligible'])} | "
            f"{_fmt(pc.get('band_gap_s_is_1'))} |"
        )
    tasks = {s["task"] for s in report["sweeps"]}
    missing = [t for t in BUILTIN_TASKS if t not in tasks]
    if missing:
        lines.append(f"\nNo stored sweep (run `configsearch references`): {', '.join(missing)}.")
    lines += [
        "",
        "## Searches (target: top 5% of C_min or within 1 SE of its optimum; trace (med - b) / (med - opt))",
        "",
        "Runs are grouped by their full protocol (n_total, n_ood, s_max, space, T, T0, "
        "acquisition); target columns are recomputed from the sweeps stored now. `reached` "
        "counts seeds that met the target within T; `in T0` those that met it inside the shared "
        "initial design; `top 1%` those that found a top-1% candidate; `on target (chance)` is "
        "how many candidates clear the target and the chance that T uniform draws hit one (a "
        "needle when small: no search finds it reliably). Cost saved is 1 - used / "
        "compared protocol, in evaluations and in model fits, vs the exhaustive sweep and vs Omee "
        "et al.'s (0, 48, 10) (negative: the search spent more).",
        "",
        "| task | models | problem | method | protocol | T | T0 | alpha | seeds | "
        "on target (chance) | reached | in T0 | top 1% | median steps | median evals | "
        "mean final score | mean evals | mean fits | saved evals vs exh. | saved fits vs exh. | "
        "saved evals vs (0,48,10) | saved fits vs (0,48,10) |",
        "|" + "---|" * 22,
    ]
    for g in report["searches"]:
        reached = "-" if g["reached_target"] is None else f"{g['reached_target']}/{g['seeds']}"
        lines.append(
            f"| {g['task']} | {g['models']} | {g['problem']} | {_method(g)} | {g['protocol']} | "
            f"{g['budget']} | {g['init']} | {_fmt(g['cost_alpha'])} | {g['seeds']} | "
            f"{_on_target(g)} | {reached} | "
            f"{_fmt(g['reached_in_initial_design'])} | {_fmt(g['reached_top1pct'])} | "
            f"{_fmt(g['median_steps_to_target'])} | {_fmt(g['median_evaluations_to_target'])} | "
            f"{_fmt(g['mean_final_normalised'])} | {_fmt(g['mean_evaluations'])} | "
            f"{_fmt(g['mean_fits'])} | {_fmt(g['mean_cost_saved_evaluations_vs_exhaustive'])} | "
            f"{_fmt(g['mean_cost_saved_fits_vs_exhaustive'])} | "
            f"{_fmt(g['mean_cost_saved_evaluations_vs_omee_0_48_10'])} | "
            f"{_fmt(g['mean_cost_saved_fits_vs_omee_0_48_10'])} |"
        )
        if g["truth_known"] is False:
            lines.append(f"|  | (no complete sweep of {g['models']} under this protocol yet) |")
    lines += [
        "",
        "## BO vs random search (paired over seeds; steps to target, a miss counts as T + 1)",
        "",
        "| task | models | problem | protocol | T | T0 | alpha | seeds | BO reached | "
        "random reached | mean steps saved (random - BO) | 95% interval | BO better |",
        "|" + "---|" * 13,
    ]
    if not report["comparisons"]:
        lines.append("| (no BO/random pair with a stored sweep) ||||||||||||")
    for c in report["comparisons"]:
        lines.append(
            f"| {c['task']} | {c['models']} | {c['problem']} | {c['protocol']} | {c['budget']} | "
            f"{c['init']} | {_fmt(c['cost_alpha'])} | {c['paired_seeds']} | {c['bo_reached']} | "
            f"{c['random_reached']} | {_fmt(c['mean_steps_saved'])} | "
            f"[{_fmt(c['ci95'][0])}, {_fmt(c['ci95'][1])}] | {c['bo_better']} |"
        )
    lines += ["", "## Chosen configurations (seed 42)", ""]
    for g in report["searches"]:
        if g["answer_seed42"] is not None:
            lines.append(
                f"- {g['task']} {g['problem']} {g['method']} (T={g['budget']}): "
                f"`{json.dumps(g['answer_seed42'], sort_keys=True)}`"
            )
        else:
            seeds = g["seed_list"]
            lines.append(
                f"- {g['task']} {g['problem']} {g['method']} (T={g['budget']}): no seed-42 run "
                f"(seeds {seeds[0]}..{seeds[-1]})"
            )
    if not report["searches"]:
        lines.append("- no search runs stored")
    return "\n".join(lines) + "\n"


def _without_traces(group: SearchGroup) -> SearchGroup:
    out = group.copy()
    out.pop("traces", None)
    out.pop("normalised_traces", None)
    return out


def write_report(store: Store, out_dir: Path) -> ConfigsearchReport:
    out_dir.mkdir(parents=True, exist_ok=True)
    report = collect(store)
    files = []
    for sweep in report["sweeps"]:
        path = out_dir / f"sweep_{sweep['task']}_{sweep['model']}.png"
        _plot_sweep(store, sweep, path)
        files.append(path.name)
    by_problem: dict[tuple[str, str, str, int, str], list[SearchGroup]] = defaultdict(list)
    for g in report["searches"]:
        tag = sha256_json([g["protocol"], g["init"], g["gt"], g["cost_alpha"]])[:6]
        by_problem[(g["task"], g["models"], g["problem"], g["budget"], tag)].append(g)
    for (task, models, problem, budget, tag), group in sorted(by_problem.items()):
        path = out_dir / f"trace_{task}_{problem}_{models.replace(',', '+')}_T{budget}_{tag}.png"
        _plot_traces(group, path)
        files.append(path.name)
    report["files"] = files
    atomic_write_bytes(out_dir / "configsearch_report.md", markdown(report).encode("utf-8"))
    slim: ConfigsearchReport = {
        **report,
        "searches": [_without_traces(g) for g in report["searches"]],
    }
    atomic_write_bytes(
        out_dir / "configsearch_report.json",
        json.dumps(slim, indent=2, sort_keys=True).encode("utf-8"),
    )
    return slim
