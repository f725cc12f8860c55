"""`make demo`: the main job, on the real data.

Runs every registered suite's demonstration (in name order) into one results store and writes
the HTML report:
1. campaign: the full sdl1 protocol on the Precursor Genome with the reference agents, both
   matched controls and the oracle reference; prints the leaderboard;
2. conditions: compiles every screening table into questions, runs the reference agents, prints
   question counts and scores against the random floor;
3. configsearch: a short real Bayesian-optimisation vs random-search comparison;
then `labreplay report` over the store.
"""

from __future__ import annotations

import argparse
import sys
import time

from labreplay._files import writable_dir
from labreplay.cli._common import console, err_console, progress_printer
from labreplay.errors import LabreplayError
from labreplay.records.sources import resolve_data_dir
from labreplay.suite import get_suite, list_suites


def _elapsed(started: float) -> str:
    return f"{time.perf_counter() - started:.0f} s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m labreplay.demo", description=__doc__)
    parser.add_argument("--out", default="out", help="output directory")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--suites", default=None, help="comma list (default: every registered)")
    parser.add_argument("--full", action="store_true", help="configsearch at full size (slow)")
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="no progress lines on stderr (off anyway when it is not a terminal)",
    )
    args = parser.parse_args(argv)
    suites = [s for s in args.suites.split(",") if s] if args.suites else list_suites()
    started = time.perf_counter()
    try:
        out = writable_dir(args.out)  # a FIFO or a file there: refused, never replaced
        out.mkdir(parents=True, exist_ok=True)
        store = out / "labreplay.sqlite"
        data_dir = resolve_data_dir(args.data_dir)
        say = progress_printer(args.quiet)
        for i, name in enumerate(suites, 1):
            if say is not None:
                say(f"demo: {name} ({i} of {len(suites)}), {_elapsed(started)} so far")
            get_suite(name).demo(data_dir, store, out, full=args.full)
        from labreplay.report import build_report

        report = build_report(store, out / "report", progress=say)
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
