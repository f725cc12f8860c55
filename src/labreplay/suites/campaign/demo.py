"""The campaign part of `make demo`: the sdl1 protocol on the real Precursor Genome.

Compiles the frozen assignments of partition seeds 0-4, runs the reference agents (bayes,
no-evidence, and the random policy) each with both matched controls on the long assignments,
runs the oracle as a labelled reference (not an upper bound), and prints the paper's board: the
six long assignments of every seed pooled, with the reference ceiling, headroom captured and the
power line. The short assignments are run for the first seed only and shown on their own board.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, TypedDict

from labreplay.sdk import atomic_write_bytes
from labreplay.sdk.engine import EnvironmentSpec, Store
from labreplay.sdk.engine import run as labreplay_run
from labreplay.suites.campaign.api import compile_specs, load_records
from labreplay.suites.campaign.compiler import write_specs
from labreplay.suites.campaign.leaderboard import leaderboard

SUITE = "campaign"
REFERENCE = ("bayes", "no-evidence", "random")
SEEDS = (0, 1, 2, 3, 4)


class DemoSummary(TypedDict):
    leaderboard: dict[str, Any]  # `leaderboard.leaderboard` of the demo's store
    seconds: float  # wall time of the whole demo


def run_demo(
    data_dir: Path, store_path: Path, out_dir: Path, seeds: tuple[int, ...] = SEEDS
) -> DemoSummary:
    from labreplay.sdk.cli import console, reading_console
    from labreplay.suites.campaign.board_text import print_board

    started = time.perf_counter()
    records = load_records("precursor-genome", data_dir)
    chosen = []
    for seed in seeds:
        _, specs, index = compile_specs(
            record="precursor-genome", seed=seed, data_dir=data_dir, records=records
        )
        write_specs(out_dir / "campaign_specs" / f"seed{seed}", index, specs)
        chosen += [s for s in specs if s.body["assignment"]["kind"] == "long" or seed == seeds[0]]
        console.print(
            f"[bold]campaign[/bold]: Precursor Genome, sdl1 seed {seed}: panel "
            f"{index['panel_size']}, {len(specs)} assignments (long cover "
            f"{index['long_experiments']}, short {index['short_experiments']}), evaluation "
            f"precursors {', '.join(index['eval_precursors'])}"
        )
    compiled = time.perf_counter()
    with Store(store_path) as store:
        _refuse_other_protocols(store, chosen)
        # `labreplay.run` at its defaults: the runs `campaign run` makes (three random replicates)
        for name in (*REFERENCE, "oracle"):  # the oracle: adaptive only, never ranked
            labreplay_run(SUITE, chosen, name, store, seed=0)
        ran = time.perf_counter()
        board = leaderboard(store)
        curves = _write_curves(store, out_dir)
    print_board(reading_console(console), board)
    console.print(f"learning curves: {', '.join(str(p) for p in curves)}")
    console.print(
        f"compile {compiled - started:.1f} s; {len(REFERENCE)} agents x {len(chosen)} "
        f"assignments with their controls + oracle in {ran - compiled:.1f} s; boards "
        f"{time.perf_counter() - ran:.1f} s"
    )
    return {"leaderboard": board, "seconds": time.perf_counter() - started}


def _refuse_other_protocols(store: Store, specs: list[EnvironmentSpec]) -> None:
    """A store from an earlier version holds other spec hashes under the same spec ids; the
    boards would refuse it after minutes of running, so say so before running anything."""
    from labreplay.errors import SpecError

    ours = {s.spec_id: s.spec_hash for s in specs}
    for run in store.runs(suite="campaign"):
        if run.spec_id in ours and ours[run.spec_id] != run.spec_hash:
            raise SpecError(
                f"store {store.path} holds campaign runs of spec id {run.spec_id} under another "
                "spec hash (an earlier protocol or data); use a fresh --out directory"
            )


def _write_curves(store: Store, out_dir: Path) -> list[Path]:
    """One PNG per system: held-out score vs experiments, adaptive against both controls."""
    from labreplay.suites.campaign.report import mean_curves
    from labreplay.suites.campaign.report_plots import learning_curves

    paths = []
    for system, by_horizon in sorted(mean_curves(store).items()):
        path = out_dir / f"campaign_curves_{system.replace(' ', '_').replace('#', '-')}.png"
        atomic_write_bytes(path, learning_curves(system, by_horizon))
        paths.append(path)
    return paths
