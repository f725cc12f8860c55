"""`labreplay configsearch`: the AutoMatBench configuration space, sweeps, searches, report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

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

app = typer.Typer(
    help="Search OOD benchmark configurations (r, n, s) of materials-property "
    "prediction (AutoMatBench) on real MP + JARVIS data.",
    no_args_is_help=True,
)

StoreOption = typer.Option(Path("configsearch.sqlite"), "--store", help="Results store (SQLite).")
TaskOption = typer.Option(
    ...,
    "--task",
    help="band_gap, metallicity, bulk_modulus, "
    "shear_modulus, formation_energy or refractive_index.",
)
NTotalOption = typer.Option(1600, "--n-total", help="Materials per sample (paper: 1,600).")
NOodOption = typer.Option(480, "--n-ood", help="OOD candidates per sample (paper: 480).")


def _campaign(data_dir: Path | None, task: str, store: Any, n_total: int, n_ood: int) -> Any:
    from labreplay.records.sources import resolve_data_dir
    from labreplay.suites.configsearch.pipeline import PipelineSettings
    from labreplay.suites.configsearch.runner import ConfigSearch

    return ConfigSearch(
        resolve_data_dir(data_dir),
        task,
        store,
        settings=PipelineSettings(n_total=n_total, n_ood=n_ood),
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
    task: str = TaskOption,
    model: str = typer.Option("rf-scm", "--model", help="rf-scm, crabnet or ofm-mlp."),
    store: Path = StoreOption,
    data_dir: Path | None = DataDirOption,
    n_total: int = NTotalOption,
    n_ood: int = NOodOption,
    executor: str = ExecutorOption,
    scheduler: str | None = SchedulerOption,
    workers: int | None = WorkersOption,
    json_out: bool = JsonOption,
) -> None:
    """Exhaustive sweep of one model over every configuration (resumable). On threads or Dask,
    one work unit per (r, n) training set."""
    from labreplay.execute.driver import open_executor
    from labreplay.store.sqlite import Store

    with Store(store) as db:
        campaign = _campaign(data_dir, task, db, n_total, n_ood)
        with (
            open_executor(executor, scheduler, workers) as ex,
            progress_bar(f"sweep {task} {model}", len(campaign.feasible), not json_out) as bar,
        ):
            run_id, _ = campaign.sweep(model, bar, None if executor == "in-process" else ex)
        summary = db.run(run_id).summary or {}
    if json_out:
        print_json({"run_id": run_id, **summary})
        return
    console.print(
        f"run {run_id}: {summary['evaluated']} evaluated, {summary['infeasible']} "
        f"infeasible; MAE {summary['min_mae']:.4g}..{summary['max_mae']:.4g} (max/min "
        f"{summary['max_min_ratio']:.3g}); cache hit ratio "
        f"{summary['cache']['overall_ratio']}"
    )


@app.command("run")
def run_cmd(
    task: str = TaskOption,
    models: str = typer.Option("rf-scm", "--models", help="Comma list of models."),
    problem: str = typer.Option(
        "best-model", "--problem", help="best-model | discriminate | closest."
    ),
    method: str = typer.Option("bo", "--method", help="bo | random | exhaustive."),
    budget: int = typer.Option(12, "--budget", help="Search steps T."),
    init: int = typer.Option(4, "--init", help="Random initial steps T0."),
    seed: int = typer.Option(42, "--seed", help="Search seed."),
    seeds: int = typer.Option(1, "--seeds", help="Run seeds seed..seed+k-1."),
    gt: str = typer.Option("reference", "--gt", help="closest: reference (0,48,10) | mean."),
    store: Path = StoreOption,
    data_dir: Path | None = DataDirOption,
    n_total: int = NTotalOption,
    n_ood: int = NOodOption,
    executor: str = ExecutorOption,
    scheduler: str | None = SchedulerOption,
    workers: int | None = WorkersOption,
    json_out: bool = JsonOption,
) -> None:
    """A budgeted search (Algorithm 1, 2 or 3) with BO or random search; one work unit per
    seed on threads or Dask."""
    from labreplay.execute.driver import open_executor
    from labreplay.store.sqlite import Store
    from labreplay.suites.configsearch.execute import run_searches

    names = [m.strip() for m in models.split(",") if m.strip()]
    out = []
    with Store(store) as db, open_executor(executor, scheduler, workers) as ex:
        campaign = _campaign(data_dir, task, db, n_total, n_ood)
        chosen = [seed + k for k in range(seeds)]
        done = run_searches(campaign, names, problem, method, budget, init, chosen, gt, ex)
        for k, (run_id, _, summary) in zip(chosen, done, strict=True):
            out.append({"run_id": run_id, "seed": k, **summary})
    if json_out:
        print_json(out)
        return
    for item in out:
        reached = item.get("steps_to_target", "n/a (no sweep)")
        console.print(
            f"seed {item['seed']}: best {item['best_objective']:.4g} after "
            f"{item['steps']} steps ({item['evaluations']} evaluations); steps to "
            f"target {reached}; answer {item['answer']}"
        )


@app.command("report")
def report_cmd(
    store: Path = StoreOption,
    out: Path = typer.Option(Path("configsearch-report"), "--out", help="Output directory."),
    json_out: bool = JsonOption,
) -> None:
    """Tables and plots of every stored configsearch run."""
    from labreplay.errors import StoreError
    from labreplay.store.sqlite import Store
    from labreplay.suites.configsearch.report import markdown, write_report

    if not store.is_file():
        raise StoreError(f"store {store} does not exist")
    with Store(store) as db:
        report = write_report(db, out)
    if json_out:
        print_json(report)
        return
    console.print(markdown({**report, "searches": report["searches"]}), markup=False)
    console.print(f"wrote {len(report['files'])} plots and the report to {out}")
