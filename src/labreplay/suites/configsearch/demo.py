"""A short real BO-vs-random comparison on the band-gap task (part of `make demo`).

quick=True shrinks the protocol so it fits in a few minutes on two shared cores, and says so:
n_total = 300 materials, 90 OOD candidates, r in {0, 0.3}, n in {4, 6, 8}, s in 1..10
(60 configurations). The exhaustive sweep of RF-SCM over that space is the truth; BO and random
search (budget 12, 4 initial points) are each run for 20 seeds on the best-model problem, and the
table reports how often each reached the normalised target (score >= 0.95, METRICS.md) and after
how many steps.
quick=False runs the paper's protocol (858 configurations, n_total = 1,600): hours here.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import TypedDict

from labreplay.sdk.engine import Store
from labreplay.sdk.engine import run as labreplay_run
from labreplay.suites.configsearch.cache import StageCounts
from labreplay.suites.configsearch.episodes import sweep
from labreplay.suites.configsearch.json_numbers import as_float
from labreplay.suites.configsearch.pipeline import PipelineSettings
from labreplay.suites.configsearch.report import write_report
from labreplay.suites.configsearch.runner import ConfigSearch
from labreplay.suites.configsearch.space import PAPER_S, ConfigSpace

QUICK_SETTINGS = PipelineSettings(n_total=300, n_ood=90)


class DemoRow(TypedDict):
    """One method over the demo's seeds."""

    method: str
    seeds: int
    reached_within_12: int
    median_steps_to_target: float | None
    mean_final_best_mae: float
    exhaustive_optimum: object  # as the run summaries hold it
    cost_saved_fits_vs_exhaustive: float
    bo_overhead_max_s: float


class DemoSummary(TypedDict):
    task: str
    model: str
    quick: bool
    configurations: int
    infeasible: int
    mae_min: float
    mae_max: float
    mae_max_min_ratio: float | None
    comparison: list[DemoRow]
    cache: dict[str, StageCounts | float | None]
    report_files: object  # the report's files, as `write_report` lists them


QUICK_SPACE = ConfigSpace(r_values=(0.0, 0.3), n_values=(4, 6, 8), s_values=PAPER_S, s_cap=())


def run_demo(data_dir: Path, store: Path, out_dir: Path, quick: bool) -> DemoSummary:
    from rich.table import Table

    from labreplay.sdk.cli import console, print_table

    settings, space = (QUICK_SETTINGS, QUICK_SPACE) if quick else (None, None)
    seeds = range(20)
    with Store(store) as db:
        campaign = ConfigSearch(data_dir, "band_gap", db, settings=settings, space=space)
        # the exhaustive reference (what `configsearch sweep` computes), then the searches
        # through `labreplay.run` at its defaults (models rf-scm, best-model, budget 12, init 4)
        _, table = sweep(campaign, "rf-scm")
        values = [table[("rf-scm", c)] for c in campaign.feasible]
        rows: list[DemoRow] = []
        for method in ("bo", "random"):
            results = labreplay_run(
                "configsearch", [campaign.environment], method, db, seed=seeds[0],
                seeds=len(seeds), data_dir=data_dir, settings=settings, space=space,
            )  # fmt: skip
            # the summaries are JSON objects: steps_to_target an int, or None when missed
            reached = [s for r in results if isinstance(s := r["steps_to_target"], int)]
            rows.append(
                {
                    "method": method,
                    "seeds": len(results),
                    "reached_within_12": len(reached),
                    "median_steps_to_target": statistics.median(reached) if reached else None,
                    "mean_final_best_mae": sum(as_float(r["best_objective"]) for r in results)
                    / len(results),
                    "exhaustive_optimum": results[0]["exhaustive_optimum"],
                    "cost_saved_fits_vs_exhaustive": statistics.mean(
                        as_float(r["cost_saved_fits_vs_exhaustive"]) for r in results
                    ),
                    "bo_overhead_max_s": max(
                        as_float(r["bo_overhead_max_s"] or 0.0) for r in results
                    ),
                }
            )
        report = write_report(db, out_dir)
    summary: DemoSummary = {
        "task": "band_gap",
        "model": "rf-scm",
        "quick": quick,
        "configurations": len(campaign.feasible),
        "infeasible": len(campaign.infeasible),
        "mae_min": min(values),
        "mae_max": max(values),
        "mae_max_min_ratio": max(values) / min(values) if min(values) > 0 else None,
        "comparison": rows,
        "cache": campaign.stats.as_dict(),
        "report_files": report["files"],
    }
    out = Table(
        title=f"configsearch demo: band gap, RF-SCM, {len(campaign.feasible)} configurations"
        f"{' (quick protocol)' if quick else ''}"
    )
    for col in (
        "method",
        "reached within 12 (of 20)",
        "median steps",
        "mean best MAE",
        "exhaustive optimum",
        "fits saved vs exhaustive",
    ):
        out.add_column(col)
    for row in rows:
        out.add_row(
            row["method"],
            str(row["reached_within_12"]),
            str(row["median_steps_to_target"]),
            f"{row['mean_final_best_mae']:.4f}",
            f"{row['exhaustive_optimum']:.4f}",
            f"{row['cost_saved_fits_vs_exhaustive']:.1%}",
        )
    print_table(out, "method")
    console.print(
        f"MAE spread over configurations: min {summary['mae_min']:.4f}, max "
        f"{summary['mae_max']:.4f}, max/min {summary['mae_max_min_ratio']}; cache hit "
        f"ratio {summary['cache']['overall_ratio']}"
    )
    return summary
