"""Campaign figures: median step(), compiling all records, a full sdl1 protocol run.

Targets (issue 3): median step() under 1 ms; compiling all records under 2 s; the full protocol
(12 assignments x adaptive + both control branches x checkpoints) with the reference agents
under 60 s on 2 cores. Issue 20: three schedule-matched random replicates cost bayes on seeds
0-4 no more than 1.8x the single-replicate protocol of before; set LABREPLAY_BENCH_BASE to a
checkout of the old code (e.g. `git worktree add BASE 115f20e`) to time both side by side.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from labreplay.records.sources import resolve_data_dir
from labreplay.store.sqlite import Store
from labreplay.suites.campaign.agents import BayesAgent
from labreplay.suites.campaign.api import agent_factory, compile_specs, load_records
from labreplay.suites.campaign.env import CampaignEnv
from labreplay.suites.campaign.runner import run_assignment


def _step_times(spec: Any, repeats: int) -> list[float]:
    """Time env.step() alone: the agent's actions are recorded first, then replayed."""
    agent = BayesAgent()
    env = CampaignEnv(spec)
    env.reset(0)
    agent.reset(0)
    actions = []
    while not env.done:
        action = agent.act(env.observation())
        actions.append(action)
        if env.step(action).checkpoint_due:
            env.submit_checkpoint({"forecasts": []}, len(env.closed_order), None, "")
    times = []
    for _ in range(repeats):
        env = CampaignEnv(spec)
        env.reset(0)
        for action in actions:
            t0 = time.perf_counter()
            result = env.step(action)
            times.append(time.perf_counter() - t0)
            if result.checkpoint_due:
                env.submit_checkpoint({"forecasts": []}, len(env.closed_order), None, "")
    return times


def run(quick: bool) -> list[dict[str, Any]]:
    data_dir = resolve_data_dir(None)
    figures = []
    load_times, compile_times = [], []
    for _ in range(1 if quick else 3):
        t0 = time.perf_counter()
        pg = load_records("precursor-genome", data_dir)
        alab = load_records("alab-pipeline", data_dir)
        t1 = time.perf_counter()
        compile_specs("precursor-genome", records=pg, seed=0)
        compile_specs("alab-pipeline", records=alab, seed=0)
        t2 = time.perf_counter()
        load_times.append(t1 - t0)
        compile_times.append(t2 - t1)
    figures.append(
        {
            "name": "campaign: load all records (PG + A-Lab, warm evidence cache)",
            "median": statistics.median(load_times),
            "unit": "s",
            "ratio": None,
            "target": "-",
        }
    )
    figures.append(
        {
            "name": "campaign: compile all records into sdl1 specs (PG + A-Lab)",
            "median": statistics.median(compile_times),
            "unit": "s",
            "ratio": None,
            "target": "< 2 s",
        }
    )
    _, specs, _ = compile_specs("precursor-genome", records=pg, seed=0)
    steps = _step_times(specs[0], 3 if quick else 20)
    figures.append(
        {
            "name": f"campaign: env.step() median over {len(steps)} steps",
            "median": statistics.median(steps) * 1e3,
            "unit": "ms",
            "ratio": None,
            "target": "< 1 ms",
        }
    )
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        with Store(Path(tmp) / "bench.sqlite") as store:
            chosen = specs[:2] if quick else specs
            for name in ("bayes", "no-evidence", "random"):
                make = agent_factory(name)
                for spec in chosen:
                    run_assignment(spec, make, store, 0)
            events = store.event_count()
        elapsed = time.perf_counter() - t0
    figures.append(
        {
            "name": f"campaign: full sdl1 run, 3 reference agents x {len(chosen)} assignments x 3 "
            f"branches ({events} events, stored)",
            "median": elapsed,
            "unit": "s",
            "ratio": None,
            "target": "< 60 s (12 assignments)",
        }
    )
    figures.extend(_replicates_vs_base(quick))
    return figures


def _cli_seconds(src: str, args: list[str]) -> float:
    """Wall time of one `labreplay` CLI call with `src` first on PYTHONPATH."""
    env = {**os.environ, "PYTHONPATH": src}
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "labreplay.cli.main", *args],
        env=env,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - t0


def _replicates_vs_base(quick: bool) -> list[dict[str, Any]]:
    """bayes + controls on seeds 0-4: 3 random replicates here vs 1 in the old code (if given).
    Each side compiles with its own code first (untimed); the run is timed."""
    here = str(Path(__file__).resolve().parents[1] / "src")
    base = os.environ.get("LABREPLAY_BENCH_BASE")
    seeds = "0" if quick else "0-4"
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, src, extra in (
            ("new", here, ["--random-replicates", "3"]),
            ("base", str(Path(base) / "src") if base else None, []),
        ):
            if src is None:
                continue
            specs, store = Path(tmp) / f"{label}-specs", Path(tmp) / f"{label}.sqlite"
            _cli_seconds(src, ["campaign", "compile", "--seeds", seeds, "--out", str(specs)])
            run = ["campaign", "run", "--specs", str(specs), "--store", str(store), "--agent"]
            out[label] = _cli_seconds(src, [*run, "bayes", "--json", *extra])
    ratio = out["new"] / out["base"] if "base" in out else None
    return [
        {
            "name": f"campaign: bayes + controls, seeds {seeds}, 3 random replicates "
            f"({out['new']:.1f} s; single replicate before: "
            + (
                f"{out['base']:.1f} s)" if "base" in out else "not timed, set LABREPLAY_BENCH_BASE)"
            ),
            "median": out["new"],
            "unit": "s",
            "ratio": ratio,
            "target": "<= 1.8x the single-replicate protocol",
        }
    ]
