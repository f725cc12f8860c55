"""Foundation figures: canonical hashing of a spec, store appends, verifying the data directory.

All inputs are real: the spec-sized object is built from the Precursor Genome records, event
payloads are those records, and verify reads every file of the data directory.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from labreplay._hashing import canonical_json, sha256_json
from labreplay.errors import DataError
from labreplay.records import manifest
from labreplay.records.sources import data_file, resolve_data_dir, verify
from labreplay.store import Store

PG_SAMPLES = "precursor_genome/pg_samples.jsonl"
DESCRIPTOR_FIELDS = (
    "sample_id",
    "precursor_1",
    "precursor_2",
    "target",
    "target_stoichiometry",
    "temperature_c",
    "time_min",
    "reaction_energy_ev_per_atom",
)


def _median_seconds(action: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _pg_records(data_dir: Path) -> list[dict[str, Any]]:
    path = data_file(data_dir, PG_SAMPLES)
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def spec_like(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The shape of a campaign spec: header, roles, budgets, prices, agent-visible records."""
    return {
        "suite": "campaign",
        "protocol": "sdl1-replay",
        "version": 1,
        "spec_id": "bench-pg-all",
        "body": {
            "budgets": {"experiments": 24, "evidence": 60, "reviews": 12},
            "prices": {"execution": 1, "thermal": 1, "xrd": 2, "refinement": 3, "review": 5},
            "roles": {
                "context": [r["sample_id"] for r in records[: len(records) // 2]],
                "candidates": [r["sample_id"] for r in records[len(records) // 2 :]],
            },
            "records": [{k: r.get(k) for k in DESCRIPTOR_FIELDS} for r in records],
        },
    }


def bench_hashing(records: list[dict[str, Any]], quick: bool) -> dict[str, Any]:
    spec = spec_like(records)
    size_kb = len(canonical_json(spec).encode("utf-8")) / 1024
    repeats = 5 if quick else 30
    canonical = _median_seconds(lambda: sha256_json(spec), repeats)
    plain = _median_seconds(
        lambda: hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest(), repeats
    )
    return {
        "name": f"canonical_json + sha256 of a spec ({len(records)} records, {size_kb:.0f} kB)",
        "median": canonical * 1e3,
        "unit": "ms",
        "ratio": canonical / plain,  # cost of canonicalisation over plain json.dumps
        "target": "< 50 ms",
        "ratio_of": "plain json.dumps(sort_keys) + sha256",
    }


def bench_store(records: list[dict[str, Any]], quick: bool) -> dict[str, Any]:
    n_events = 200 if quick else 1000
    with (
        tempfile.TemporaryDirectory(prefix="labreplay-bench-") as tmp,
        Store(Path(tmp) / "bench.sqlite") as store,
    ):
        run_id, _ = store.open_run(
            suite="campaign",
            spec_hash="0" * 64,
            spec_id="bench",
            branch="adaptive",
            agent="bench",
            agent_params={},
            seed=0,
        )
        events = [
            {
                "seq": seq,
                "kind": "reveal",
                "payload": {k: records[seq % len(records)].get(k) for k in DESCRIPTOR_FIELDS},
                "prev_hash": "p",
                "hash": f"h{seq}",
            }
            for seq in range(2 * n_events)
        ]
        per_event = []
        for event in events[:n_events]:
            started = time.perf_counter()
            store.append_events(run_id, [event])
            per_event.append(time.perf_counter() - started)
        started = time.perf_counter()
        store.append_events(run_id, events[n_events:])
        batched = (time.perf_counter() - started) / n_events
        if store.event_count(run_id) != 2 * n_events:
            raise DataError("store lost events during the benchmark", file=tmp)
    median = statistics.median(per_event)
    return {
        "name": f"store append, one event per transaction ({n_events} events)",
        "median": median * 1e3,
        "unit": "ms",
        "ratio": median / batched,  # what one transaction per event costs over one batch
        "target": "< 1 ms",
        "ratio_of": f"per event in one batch of {n_events}",
    }


def bench_verify(data_dir: Path, quick: bool) -> dict[str, Any]:
    entries = [entry for source in manifest.sources() for entry in source.files]
    megabytes = sum(entry.size for entry in entries) / 1e6
    outcome: list[int] = []

    def verify_all() -> None:
        results = verify(data_dir)
        outcome.append(sum(r.status != "ok" for r in results))

    seconds = _median_seconds(verify_all, 1 if quick else 3)
    if any(outcome):
        raise DataError(f"{outcome[-1]} files fail verification", file=str(data_dir))
    return {
        "name": f"data verify, all {len(entries)} files ({megabytes:.0f} MB)",
        "median": seconds,
        "unit": "s",
        "ratio": None,
        "target": "< 10 s",
        "throughput_mb_per_s": megabytes / seconds,
    }


def run(quick: bool) -> list[dict[str, Any]]:
    data_dir = resolve_data_dir()
    records = _pg_records(data_dir)
    return [
        bench_hashing(records, quick),
        bench_store(records, quick),
        bench_verify(data_dir, quick),
    ]
