"""Per-dataset question counts, largest option lists and mean random floors of a compile of
every built-in conditions dataset (the figures the compile rules are judged by).

Usage: LABREPLAY_DATA_DIR=... python scripts/conditions_question_counts.py [SEED]
Prints one JSON object: seconds, totals, mean floors per type, and per dataset.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter, defaultdict
from typing import Any

from labreplay.records.sources import resolve_data_dir
from labreplay.suites.conditions.compiler import compile_datasets
from labreplay.suites.conditions.datasets import dataset_names
from labreplay.suites.conditions.scoring import answer_key, random_floor

TYPES = ("mc_single", "mc_all", "fib_all")


def main(seed: int) -> dict[str, Any]:
    start = time.perf_counter()
    compiled = compile_datasets(dataset_names(), resolve_data_dir(), seed=seed)
    seconds = time.perf_counter() - start
    floors: dict[tuple[str, str], list[float]] = defaultdict(list)
    options: dict[tuple[str, str], list[int]] = defaultdict(list)
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for q in compiled.questions:
        ds, qtype = q["meta"]["dataset"], q["question_type"]
        counts[ds][qtype] += 1
        floor = random_floor(answer_key(q))
        floors[(ds, qtype)].append(floor["hit"] if qtype == "fib_all" else floor["score"])
        options[(ds, qtype)].append(len(q["options"]))
    per_dataset: dict[str, dict[str, Any]] = {}
    for ds in sorted(counts):
        per_dataset[ds] = {}
        for qtype in TYPES:
            vals = floors.get((ds, qtype), [])
            per_dataset[ds][qtype] = {
                "n": len(vals),
                "mean_floor": round(sum(vals) / len(vals), 3) if vals else None,
                "max_options": max(options[(ds, qtype)], default=0),
            }
    totals = {t: sum(c[t] for c in counts.values()) for t in TYPES}
    mean_floor = {}
    for qtype in TYPES:
        vals = [v for (_, t), vs in floors.items() if t == qtype for v in vs]
        mean_floor[qtype] = round(sum(vals) / len(vals), 3) if vals else None
    return {
        "seconds": round(seconds, 2),
        "n_questions": len(compiled.questions),
        "totals": totals,
        "mean_floor (MC: score, FIB: hit)": mean_floor,
        "dropped": compiled.skipped,
        "per_dataset": per_dataset,
    }


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]) if len(sys.argv) > 1 else 0), indent=1))
