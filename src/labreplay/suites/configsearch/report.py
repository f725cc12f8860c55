"""Configsearch report, read only from the store: sweep spread, chosen configurations, BO vs
random evaluations-to-target, cost saved, and the paper-style plots (3-D MAE scatter over
(r, n, s); best-so-far traces)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from labreplay.store.sqlite import RunInfo, Store
from labreplay.suites.configsearch.cache import atomic_write_bytes

SUITE = "configsearch"


def _sweep_points(store: Store, run: RunInfo) -> list[dict[str, Any]]:
    return [e["payload"] for e in store.events(run.run_id) if e["kind"] == "evaluation"]


def collect(store: Store) -> dict[str, Any]:
    runs = store.runs(suite=SUITE, status="complete")
    sweeps, groups = [], defaultdict(list)
    for run in runs:
        params, summary = run.agent_params, run.summary or {}
        if run.branch == "sweep/exhaustive":
            sweeps.append(
                {
                    "run_id": run.run_id,
                    "task": params["task"],
                    "model": params["models"][0],
                    **{
                        k: summary.get(k)
                        for k in (
                            "evaluated",
                            "infeasible",
                            "min_mae",
                            "max_mae",
                            "max_min_ratio",
                            "argmin",
                            "argmax",
                        )
                    },
                }
            )
            continue
        key = (
            params["task"],
            ",".join(params["models"]),
            params["problem"],
            run.agent,
            params.get("budget"),
            params.get("gt"),
        )
        groups[key].append({"seed": run.seed, "run_id": run.run_id, **summary})
    searches = []
    for (task, models, problem, method, budget, gt), items in sorted(groups.items()):
        reached = [i.get("steps_to_target") for i in items]
        has_truth = all("steps_to_target" in i for i in items)
        hits = [r for r in reached if r is not None]
        searches.append(
            {
                "task": task,
                "models": models,
                "problem": problem,
                "method": method,
                "budget": budget,
                "gt": gt,
                "seeds": len(items),
                "truth_known": has_truth,
                "reached_target": len(hits) if has_truth else None,
                "median_steps_to_target": float(np.median(hits)) if hits else None,
                "mean_final_best": float(np.mean([i["best_objective"] for i in items])),
                "mean_evaluations": float(
                    np.mean([i["evaluations"] + i.get("gt_evaluations", 0) for i in items])
                ),
                "exhaustive_evaluations": items[0].get("exhaustive_evaluations"),
                "exhaustive_optimum": items[0].get("exhaustive_optimum"),
                "mean_cost_saved_vs_exhaustive": float(
                    np.mean([i["cost_saved_vs_exhaustive"] for i in items])
                ),
                "bo_overhead_max_s": max((i.get("bo_overhead_max_s") or 0.0) for i in items),
                "answer_seed42": next((i["answer"] for i in items if i["seed"] == 42), None),
                "traces": {i["seed"]: i["trace"] for i in items},
            }
        )
    return {"sweeps": sweeps, "searches": searches}


def _plot_sweep(store: Store, sweep: dict[str, Any], path: Path) -> None:
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


def _plot_traces(group: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    colours = {"bo": "tab:red", "random": "tab:blue"}
    for item in group:
        traces = list(item["traces"].values())
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
    if group[0].get("exhaustive_optimum") is not None:
        ax.axhline(
            group[0]["exhaustive_optimum"], color="black", ls="--", lw=1, label="exhaustive optimum"
        )
    ax.set_xlabel("step")
    ax.set_ylabel("best-so-far objective")
    ax.set_title(f"{group[0]['task']} / {group[0]['problem']} ({group[0]['models']})")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def markdown(report: dict[str, Any]) -> str:
    lines = [
        "# Configsearch report",
        "",
        "## Exhaustive sweeps (spread of MAE over configurations)",
        "",
        "| task | model | evaluated | infeasible | min MAE | max MAE | max/min | argmin |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in report["sweeps"]:
        argmin = s["argmin"] or {}
        lines.append(
            f"| {s['task']} | {s['model']} | {s['evaluated']} | {s['infeasible']} | "
            f"{_fmt(s['min_mae'])} | {_fmt(s['max_mae'])} | {_fmt(s['max_min_ratio'])} | "
            f"({_fmt(argmin.get('r'))}, {_fmt(argmin.get('n'))}, {_fmt(argmin.get('s'))}) |"
        )
    lines += [
        "",
        "## Searches (BO vs random; target = within 5% of the exhaustive optimum)",
        "",
        "| task | models | problem | method | budget | seeds | reached | median steps | "
        "mean final best | exhaustive opt | mean evals | cost saved vs exhaustive |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for g in report["searches"]:
        reached = "-" if g["reached_target"] is None else f"{g['reached_target']}/{g['seeds']}"
        lines.append(
            f"| {g['task']} | {g['models']} | {g['problem']} | {g['method']} | {g['budget']} | "
            f"{g['seeds']} | {reached} | {_fmt(g['median_steps_to_target'])} | "
            f"{_fmt(g['mean_final_best'])} | {_fmt(g['exhaustive_optimum'])} | "
            f"{_fmt(g['mean_evaluations'])} | {_fmt(g['mean_cost_saved_vs_exhaustive'])} |"
        )
    lines += ["", "## Chosen configurations (seed 42)", ""]
    for g in report["searches"]:
        if g["answer_seed42"] is not None:
            lines.append(
                f"- {g['task']} {g['problem']} {g['method']}: "
                f"`{json.dumps(g['answer_seed42'], sort_keys=True)}`"
            )
    return "\n".join(lines) + "\n"


def write_report(store: Store, out_dir: Path) -> dict[str, Any]:
    out_dir.mkdir(parents=True, exist_ok=True)
    report = collect(store)
    files = []
    for sweep in report["sweeps"]:
        path = out_dir / f"sweep_{sweep['task']}_{sweep['model']}.png"
        _plot_sweep(store, sweep, path)
        files.append(path.name)
    by_problem: dict[tuple[str, str, str, Any], list[dict[str, Any]]] = defaultdict(list)
    for g in report["searches"]:
        by_problem[(g["task"], g["models"], g["problem"], g["budget"])].append(g)
    for (task, models, problem, budget), group in sorted(by_problem.items()):
        path = out_dir / f"trace_{task}_{problem}_{models.replace(',', '+')}_T{budget}.png"
        _plot_traces(group, path)
        files.append(path.name)
    report["files"] = files
    atomic_write_bytes(out_dir / "configsearch_report.md", markdown(report).encode("utf-8"))
    slim = {
        **report,
        "searches": [{k: v for k, v in g.items() if k != "traces"} for g in report["searches"]],
    }
    atomic_write_bytes(
        out_dir / "configsearch_report.json",
        json.dumps(slim, indent=2, sort_keys=True).encode("utf-8"),
    )
    return slim
