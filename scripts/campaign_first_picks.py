"""How often the schedule-matched random control's first pick lands on the same sorted
candidate position (issue 37): runs `bayes` with K random replicates on every assignment of one
partition seed (nothing stored) and counts, per replicate, the assignments that share the most
common first-pick position, and the assignments where all replicates pick the same position.

    python scripts/campaign_first_picks.py [--seeds 0 1 2 3 4] [--replicates 3] [--kind long]
"""

from __future__ import annotations

import argparse
from collections import Counter

from labreplay.suites.campaign.agents import BayesAgent
from labreplay.suites.campaign.api import compile_specs
from labreplay.suites.campaign.branches import random_branches
from labreplay.suites.campaign.runner import run_assignment_branches


def first_pick(events: list[dict]) -> str:
    for e in events:
        p = e["payload"] if e["kind"] == "action" else None
        if p and p["accepted"] and p["action"]["type"] == "select_experiment":
            return str(p["action"]["experiment_id"])
    raise ValueError("no accepted selection")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--replicates", type=int, default=3)
    ap.add_argument("--kind", default="all", choices=("long", "short", "all"))
    args = ap.parse_args()
    specs = [
        s for seed in args.seeds for s in compile_specs(record="precursor-genome", seed=seed)[1]
    ]
    specs = [s for s in specs if args.kind == "all" or s.body["assignment"]["kind"] == args.kind]
    branches = random_branches(args.replicates)
    positions: dict[str, list[int]] = {b: [] for b in branches}
    for spec in specs:
        results = run_assignment_branches(spec, BayesAgent, None, 0, branches)
        ids = sorted(c["experiment_id"] for c in spec.body["candidates"])
        for b in branches:
            positions[b].append(ids.index(first_pick(results[b].events)))
    n = len(specs)
    for b in branches:
        pos, count = Counter(positions[b]).most_common(1)[0]
        print(f"{b}: {count}/{n} assignments pick sorted position {pos} first; {positions[b]}")
    same = sum(1 for i in range(n) if len({positions[b][i] for b in branches}) == 1)
    print(f"all {args.replicates} replicates pick the same position first in {same}/{n}")


if __name__ == "__main__":
    main()
