"""Why the no-data heuristic leads BO on the best-model target (issue 49): per scored
reference, the distinct (r, n) blocks a search's evaluations cover, and the hits when searches
observe the block-shrunk value instead of the raw MAE (best-model, T = 12, T0 = 4, seeds
42..51; nothing stored; a few minutes, botorch needed).

    python scripts/configsearch_block_coverage.py [--references benchmarks/references/configsearch]
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from labreplay.suites.configsearch.references import (
    COST_ALPHA,
    REFERENCE_METHODS,
    Reference,
    _search_tables,
    load_references,
    replay_landscape,
    unscorable,
)
from labreplay.suites.configsearch.search import scored_trace
from labreplay.suites.configsearch.targets import target_metrics

SEEDS = range(42, 52)
BUDGET, INIT, MIN_TEST_POINTS = 12, 4, 30


def play(ref: Reference, observed: Reference, method: str, seed: int) -> tuple[int, bool]:
    """(distinct blocks evaluated, target reached) of one search that observes `observed`."""
    land = replay_landscape(ref, "best-model", MIN_TEST_POINTS)
    result = _search_tables(
        {ref.model: observed}, "best-model", method, BUDGET, INIT, seed, MIN_TEST_POINTS,
        "botorch", COST_ALPHA, None, None,
    )  # fmt: skip
    blocks = {(s.candidate.config.r, s.candidate.config.n) for s in result.steps if s.candidate}
    steps = list(range(1, len(result.steps) + 1))
    reached = target_metrics(land, scored_trace(land, result.steps), steps, INIT)["reached_target"]
    return len(blocks), bool(reached)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--references", default="benchmarks/references/configsearch")
    refs = load_references(Path(ap.parse_args().references))
    blocks = {m: 0 for m in REFERENCE_METHODS}
    hits = {(m, seen): 0 for m in REFERENCE_METHODS for seen in ("raw", "shrunk")}
    searches = 0
    for ref in refs:
        if unscorable(ref, "best-model", MIN_TEST_POINTS) is not None:
            continue
        land = replay_landscape(ref, "best-model", MIN_TEST_POINTS)
        shrunk = dataclasses.replace(ref, maes={
            c: land.value_of(ref.model, c, m) if c.n * c.s >= MIN_TEST_POINTS else m
            for c, m in ref.maes.items()
        })  # fmt: skip
        searches += len(SEEDS)
        for method in REFERENCE_METHODS:
            for seed in SEEDS:
                covered, hit = play(ref, ref, method, seed)
                blocks[method] += covered
                hits[method, "raw"] += hit
                hits[method, "shrunk"] += play(ref, shrunk, method, seed)[1]
        print(f"{ref.label}: done", flush=True)
    for method in REFERENCE_METHODS:
        print(
            f"{method:12s} blocks per search {blocks[method] / searches:.2f}; hits of {searches}: "
            f"observing the raw MAE {hits[method, 'raw']}, the block-shrunk value "
            f"{hits[method, 'shrunk']}"
        )


if __name__ == "__main__":
    main()
