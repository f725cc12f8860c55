"""`make demo`: the main job, on the real data.

Runs every suite's demonstration into one results store and writes the HTML report:
1. campaign: the full sdl1 protocol on the Precursor Genome with the reference agents, both
   matched controls and the ceiling; prints the leaderboard;
2. conditions: compiles every screening table into questions, runs the reference agents, prints
   question counts and scores against the random floor;
3. configsearch: a short real Bayesian-optimisation vs random-search comparison;
then `labreplay report` over the store.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from labreplay.cli._common import console, err_console
from labreplay.errors import LabreplayError
from labreplay.records.sources import resolve_data_dir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m labreplay.demo", description=__doc__)
    parser.add_argument("--out", default="out", help="output directory")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--suites", default="campaign,conditions,configsearch")
    parser.add_argument("--full", action="store_true", help="configsearch at full size (slow)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    store = out / "labreplay.sqlite"
    suites = [s for s in args.suites.split(",") if s]
    started = time.perf_counter()
    try:
        data_dir = resolve_data_dir(args.data_dir)
        if "campaign" in suites:
            from labreplay.suites.campaign.demo import run_demo as campaign_demo

            campaign_demo(data_dir, store, out)
        if "conditions" in suites:
            from labreplay.suites.conditions.demo import run_demo as conditions_demo

            conditions_demo(data_dir, store, out / "conditions")
        if "configsearch" in suites:
            from labreplay.suites.configsearch.demo import run_demo as configsearch_demo

            configsearch_demo(data_dir, store, out / "configsearch", quick=not args.full)
        from labreplay.report import build_report

        report = build_report(store, out / "report")
    except LabreplayError as exc:
        err_console.print(f"labreplay: error: {exc}", markup=False, highlight=False)
        return exc.exit_code
    console.print(
        f"\nreport: {report['path']} ({report['runs']} runs, {report['events']} events); "
        f"store: {store}; total {time.perf_counter() - started:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
