"""Engine figures: the recorder's per-event cost, and the configsearch sweep on Dask vs
in-process.

Recorder: N answer-like events (nested payload with floats, strings, lists) appended through
`Recorder` into a real SQLite store with the default batched flush, wall time per event
(canonical JSON, hash chain, batched INSERT); and the same without a store (a worker's
in-memory recorder). Target < 100 us per event.

Sweep: a reduced configsearch protocol (band_gap, n_total=200, n_ood=60, r in {0, 0.5},
n in {4, 6}, s in {1, 2, 3}: 12 configurations, 4 (r, n) training sets) swept with rf-scm from an
empty pipeline cache, in-process and on a Dask LocalCluster of 2 single-threaded worker
processes (one unit per (r, n) training set, fitted there; the runner then records the sweep
in-process from the shared fit cache). Cluster start-up is timed separately; both runs
must store identical trajectories. The ratio is in-process / Dask wall time (speedup; > 1 =
faster on Dask). On the shared 2-core machine this is a lower bound of what idle cores give.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from labreplay.compile.spec import EnvironmentSpec
from labreplay.errors import LabreplayError
from labreplay.runtime.recorder import Recorder, RunHeader, open_recorder
from labreplay.store.sqlite import Store

SPEC = EnvironmentSpec("bench", "bench", "1", "recorder", {"rule": "bench"})


def _payload(i: int) -> dict[str, Any]:
    return {
        "question_id": f"q-{i:06d}",
        "raw": {"option": i % 7, "text": "Which option for the base at 60 C?"},
        "answer": {"option": i % 7},
        "result": {"score": (i % 7) / 7 + 0.1 + 0.2, "hit": i % 2 == 0, "rank": [1, 2, 3]},
    }


def recorder_cost(n: int) -> tuple[float, float]:
    payloads = [_payload(i) for i in range(n)]
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "r.sqlite") as store:
        recorder = open_recorder(store, RunHeader(SPEC, "main", "bench", {}, 0))
        started = time.perf_counter()
        for p in payloads:
            recorder.append("answer", p)
        recorder.finish("complete", {})
        stored_us = (time.perf_counter() - started) / n * 1e6
        if store.event_count() != n:
            raise LabreplayError("recorder lost events")
    memory = Recorder(SPEC.spec_hash)
    started = time.perf_counter()
    for p in payloads:
        memory.append("answer", p)
    memory_us = (time.perf_counter() - started) / n * 1e6
    return stored_us, memory_us


def sweep_speedup() -> tuple[float, float, float]:
    from distributed import LocalCluster

    from labreplay.execute import DaskExecutor
    from labreplay.records.sources import resolve_data_dir
    from labreplay.suites.configsearch.episodes import sweep
    from labreplay.suites.configsearch.pipeline import PipelineSettings
    from labreplay.suites.configsearch.runner import ConfigSearch
    from labreplay.suites.configsearch.space import ConfigSpace

    settings = PipelineSettings(n_total=200, n_ood=60)
    space = ConfigSpace(r_values=(0.0, 0.5), n_values=(4, 6), s_values=(1, 2, 3), s_cap=())
    data_dir = resolve_data_dir(None)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        # warm-up outside the timings: imports and the data files' page cache
        ConfigSearch(data_dir, "band_gap", None, settings, space, root / "warm")
        started = time.perf_counter()
        with Store(root / "local.sqlite") as store:
            campaign = ConfigSearch(data_dir, "band_gap", store, settings, space, root / "c1")
            local_id, _ = sweep(campaign, "rf-scm")
            local_events = store.events(local_id)
        local_s = time.perf_counter() - started
        started = time.perf_counter()
        with LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster:
            startup_s = time.perf_counter() - started
            with DaskExecutor(cluster=cluster) as executor:
                started = time.perf_counter()
                with Store(root / "dask.sqlite") as store:
                    campaign = ConfigSearch(
                        data_dir, "band_gap", store, settings, space, root / "c2"
                    )
                    dask_id, _ = sweep(campaign, "rf-scm", None, executor)
                    dask_events = store.events(dask_id)
                dask_s = time.perf_counter() - started
    if [e["hash"] for e in local_events] != [e["hash"] for e in dask_events]:
        raise LabreplayError("Dask and in-process sweeps stored different trajectories")
    return local_s, dask_s, startup_s


def run(quick: bool) -> list[dict[str, Any]]:
    n = 2_000 if quick else 20_000
    costs = [recorder_cost(n) for _ in range(3)]
    stored_us = statistics.median(c[0] for c in costs)
    memory_us = statistics.median(c[1] for c in costs)
    figures: list[dict[str, Any]] = [
        {
            "name": f"engine: recorder per event, SQLite store, batched ({n} events)",
            "median": stored_us,
            "unit": "us",
            "ratio": stored_us / 100.0,
            "target": "< 100 us",
        },
        {
            "name": "engine: recorder per event, in memory (worker side)",
            "median": memory_us,
            "unit": "us",
            "ratio": memory_us / 100.0,
            "target": "< 100 us",
        },
    ]
    local_s, dask_s, startup_s = sweep_speedup()
    print(f"configsearch reduced sweep: in-process {local_s:.1f} s, Dask(2) {dask_s:.1f} s")
    figures += [
        {
            "name": "engine: configsearch reduced sweep (12 configs) in-process",
            "median": local_s,
            "unit": "s",
            "ratio": None,
            "target": None,
        },
        {
            "name": "engine: same sweep on Dask LocalCluster, 2 workers (ratio = speedup)",
            "median": dask_s,
            "unit": "s",
            "ratio": local_s / dask_s,
            "target": "> 1 on >= 2 idle cores",
        },
        {
            "name": "engine: LocalCluster start-up (2 worker processes)",
            "median": startup_s,
            "unit": "s",
            "ratio": None,
            "target": None,
        },
    ]
    return figures


if __name__ == "__main__":
    for figure in run(quick=True):
        print(figure)
