"""Campaign record loading: cold evidence build vs warm (cached) loads.

"Compiling all records under 2 s" needs the per-experiment evidence summaries (576 XRD
patterns, 500k temperature points) cached; these figures show both paths on the real data.
Each measurement uses a private, temporary cache directory.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from labreplay.records.sources import resolve_data_dir
from labreplay.suites.campaign.records_alab import load_alab_pipeline
from labreplay.suites.campaign.records_pg import load_precursor_genome

FRESH_PROCESS = (
    "from labreplay.suites.campaign.records_pg import load_precursor_genome\n"
    "from labreplay.suites.campaign.records_alab import load_alab_pipeline\n"
    "from labreplay.records.sources import resolve_data_dir\n"
    "d = resolve_data_dir()\n"
    "assert len(load_precursor_genome(d)) == 1035 and len(load_alab_pipeline(d)) == 592\n"
)


def _median_ms(fn: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(times)


def run(quick: bool) -> list[dict[str, Any]]:
    data_dir = resolve_data_dir()
    previous = os.environ.get("LABREPLAY_CACHE_DIR")
    figures: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="labreplay-bench-cache-") as cache:
        os.environ["LABREPLAY_CACHE_DIR"] = cache
        try:
            cold = _median_ms(
                lambda: load_alab_pipeline(data_dir, use_cache=False), 1 if quick else 3
            )
            load_alab_pipeline(data_dir)  # writes the cache
            repeats = 3 if quick else 7
            warm_alab = _median_ms(lambda: load_alab_pipeline(data_dir), repeats)
            warm_pg = _median_ms(lambda: load_precursor_genome(data_dir), repeats)
            ledger_only = _median_ms(
                lambda: load_precursor_genome(data_dir, with_pipeline=False), repeats
            )
            env = {**os.environ, "LABREPLAY_DATA_DIR": str(data_dir)}
            fresh = _median_ms(
                lambda: subprocess.run(
                    [sys.executable, "-c", FRESH_PROCESS], check=True, env=env, cwd=Path.cwd()
                ),
                1 if quick else 3,
            )
        finally:
            if previous is None:
                os.environ.pop("LABREPLAY_CACHE_DIR", None)
            else:
                os.environ["LABREPLAY_CACHE_DIR"] = previous
    warm_total = warm_alab + warm_pg
    figures.append(
        {
            "name": "campaign records: A-Lab evidence cold build (576 XRD, 500k log points)",
            "median": cold,
            "unit": "ms",
            "ratio": None,
            "target": "(cached after the first load)",
        }
    )
    figures.append(
        {
            "name": "campaign records: A-Lab 592 records, warm cache",
            "median": warm_alab,
            "unit": "ms",
            "ratio": cold / warm_alab if warm_alab else None,
            "target": "< 2000 ms",
        }
    )
    figures.append(
        {
            "name": "campaign records: Precursor Genome 1,035 records + pipeline join, warm",
            "median": warm_pg,
            "unit": "ms",
            "ratio": None,
            "target": "< 2000 ms",
        }
    )
    figures.append(
        {
            "name": "campaign records: Precursor Genome ledger only (no pipeline)",
            "median": ledger_only,
            "unit": "ms",
            "ratio": None,
            "target": "< 2000 ms",
        }
    )
    figures.append(
        {
            "name": "campaign records: all 1,627 records, warm, in process",
            "median": warm_total,
            "unit": "ms",
            "ratio": None,
            "target": "< 2000 ms",
        }
    )
    figures.append(
        {
            "name": "campaign records: all records, warm, fresh process incl. imports",
            "median": fresh,
            "unit": "ms",
            "ratio": None,
            "target": "< 2000 ms",
        }
    )
    return figures


if __name__ == "__main__":
    for figure in run(quick="--quick" in sys.argv):
        print(
            f"{figure['name']}: {figure['median']:.0f} {figure['unit']} (target {figure['target']})"
        )
