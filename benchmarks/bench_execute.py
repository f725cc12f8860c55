"""Execution figures: all 12 sdl1 assignments with the `bayes` agent and both controls, run
in-process and on a Dask LocalCluster with 2 single-threaded worker processes.

The Dask figure includes sending specs to the workers and the driver writing every result to
the store; cluster start-up is timed separately. Both runs must store identical trajectories
(head hashes compared); the ratio is Dask wall time / in-process wall time (< 1 = faster).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from labreplay.errors import LabreplayError
from labreplay.execute import DaskExecutor, InProcessExecutor
from labreplay.store import Store
from labreplay.suites.campaign.api import compile_specs
from labreplay.suites.campaign.runner import run_assignments


def _heads(results: list[dict[str, Any]]) -> list[str]:
    return [b["head_hash"] for r in results for b in r["branches"].values()]


def run(quick: bool) -> list[dict[str, Any]]:
    from distributed import LocalCluster

    _, specs, _ = compile_specs(record="precursor-genome", protocol="sdl1", seed=0)
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        with Store(Path(tmp) / "local.sqlite") as store:
            local = run_assignments(specs, "bayes", store, seed=0, executor=InProcessExecutor())
        local_s = time.perf_counter() - started
        started = time.perf_counter()
        with LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster:
            startup_s = time.perf_counter() - started
            with DaskExecutor(cluster=cluster) as executor:
                started = time.perf_counter()
                with Store(Path(tmp) / "dask.sqlite") as store:
                    remote = run_assignments(specs, "bayes", store, seed=0, executor=executor)
                dask_s = time.perf_counter() - started
    if _heads(local) != _heads(remote):
        raise LabreplayError("Dask and in-process runs stored different trajectories")
    ratio = dask_s / local_s
    print(f"dask(2 workers) / in-process wall time on 12 assignments: {ratio:.2f}")
    return [
        {
            "name": "execute: 12 bayes assignments in-process",
            "median": local_s,
            "unit": "s",
            "ratio": None,
            "target": None,
        },
        {
            "name": "execute: same on Dask LocalCluster, 2 workers (ratio vs in-process)",
            "median": dask_s,
            "unit": "s",
            "ratio": ratio,
            "target": "< 1 on >= 2 idle cores",
        },
        {
            "name": "execute: LocalCluster start-up (2 worker processes)",
            "median": startup_s,
            "unit": "s",
            "ratio": None,
            "target": None,
        },
    ]


if __name__ == "__main__":
    for figure in run(quick=True):
        print(figure)
