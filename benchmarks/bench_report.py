"""Report figures: `labreplay report` on a real store of at least 10,000 events.

The store is filled with real campaign runs (all 12 sdl1 assignments of the Precursor Genome,
adaptive + both controls) for several reference systems and seeds until it holds 10k events;
then the whole report (leaderboard with 10,000-resample bootstraps, references, curves,
trajectory viewer, figures, HTML) is timed end to end.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from labreplay.report import build_report
from labreplay.store import Store
from labreplay.suites.campaign.api import compile_specs
from labreplay.suites.campaign.runner import run_assignments

TARGET_EVENTS = 10_000
# (agent, seed) pairs added in this order until the store reaches TARGET_EVENTS.
SYSTEMS = (("bayes", 0), ("random", 0), ("no-evidence", 0), ("bayes", 1), ("random", 1))


def fill_store(path: Path, target_events: int = TARGET_EVENTS) -> int:
    _, specs, _ = compile_specs(record="precursor-genome", protocol="sdl1", seed=0)
    with Store(path) as store:
        for agent, seed in SYSTEMS:
            if store.event_count() >= target_events:
                break
            run_assignments(specs, agent, store, seed=seed)
        return store.event_count()


def run(quick: bool) -> list[dict[str, Any]]:
    repeats = 1 if quick else 3
    with tempfile.TemporaryDirectory() as tmp:
        store_path = Path(tmp) / "bench.sqlite"
        events = fill_store(store_path)
        times = []
        for i in range(repeats):
            started = time.perf_counter()
            build_report(store_path, Path(tmp) / f"report-{i}")
            times.append(time.perf_counter() - started)
    median = statistics.median(times)
    return [
        {
            "name": f"report: HTML report of a {events}-event store",
            "median": median,
            "unit": "s",
            "ratio": None,
            "target": "< 10 s",
        }
    ]


if __name__ == "__main__":
    for figure in run(quick=True):
        print(figure)
