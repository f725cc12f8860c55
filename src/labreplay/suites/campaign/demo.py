"""The campaign part of `make demo`: the full sdl1 protocol on the real Precursor Genome.

Compiles the frozen assignments, runs the reference agents (bayes, random, no-evidence) each
with both matched controls, runs the oracle as a labelled ceiling, and prints the leaderboard.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from labreplay.store.sqlite import Store
from labreplay.suites.campaign.agents import OracleAgent
from labreplay.suites.campaign.api import agent_factory, compile_specs
from labreplay.suites.campaign.compiler import write_specs
from labreplay.suites.campaign.leaderboard import leaderboard, reference_rows
from labreplay.suites.campaign.runner import run_assignment, run_branch

REFERENCE = ("bayes", "no-evidence", "random")


def run_demo(data_dir: Path, store_path: Path, out_dir: Path, seed: int = 0) -> dict[str, Any]:
    from labreplay.cli._common import console
    from labreplay.suites.campaign.cli import print_leaderboard

    started = time.perf_counter()
    _, specs, index = compile_specs(record="precursor-genome", seed=seed, data_dir=data_dir)
    write_specs(out_dir / "campaign_specs", index, specs)
    console.print(
        f"[bold]campaign[/bold]: Precursor Genome, sdl1 seed {seed}: panel "
        f"{index['panel_size']}, {len(specs)} assignments (long cover "
        f"{index['long_experiments']}, short {index['short_experiments']}), evaluation "
        f"precursors {', '.join(index['eval_precursors'])}"
    )
    compiled = time.perf_counter()
    with Store(store_path) as store:
        for name in REFERENCE:
            make = agent_factory(name)
            for spec in specs:
                run_assignment(spec, make, store, seed)
        for spec in specs:  # the ceiling: adaptive branch only, never ranked
            run_branch(spec, OracleAgent(spec.body["evaluator"]), seed, "adaptive", store)
        board = leaderboard(store)
        board["references"] = reference_rows(store)
        curves = _write_curves(store, out_dir)
    ran = time.perf_counter()
    print_leaderboard(board)
    console.print(f"learning curves: {', '.join(str(p) for p in curves)}")
    console.print(
        f"compile {compiled - started:.1f} s; {len(REFERENCE)} agents x {len(specs)} "
        f"assignments x 3 branches + ceiling in {ran - compiled:.1f} s"
    )
    return {"index": index, "leaderboard": board, "seconds": ran - started}


def _write_curves(store: Store, out_dir: Path) -> list[Path]:
    """One PNG per system: held-out score vs experiments, adaptive against both controls."""
    from labreplay.report.plots import learning_curves
    from labreplay.suites.campaign.report import mean_curves

    paths = []
    for system, by_horizon in sorted(mean_curves(store).items()):
        path = out_dir / f"campaign_curves_{system.replace(' ', '_').replace('#', '-')}.png"
        path.write_bytes(learning_curves(system, by_horizon))
        paths.append(path)
    return paths
