"""The driver path against the old direct path: `campaign run --agent bayes` on five partition
seeds (5 x 12 assignments x 3 branches), wall time of the CLI, side by side.

Issue 18 moved every run path onto one driver (today the episode runner, `run_suite`) and
added the agent contract checks; the reference protocol must stay within 10% of the old wall
time. Set
`LABREPLAY_BENCH_BASELINE` to the `src/` directory of a checkout of the old code (e.g. a
`git worktree` of the commit before the change) to measure both, alternating runs so machine
load hits both alike; the ratio is new / old (< 1.10 is the target). Without the baseline only
the current time is reported.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SEEDS = "0-4"


def _cli(src: str | None, *args: str) -> None:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = src
    proc = subprocess.run(
        [sys.executable, "-m", "labreplay.cli.main", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:2])} failed: {proc.stderr.strip()[-400:]}")


def _timed_run(src: str, specs: Path, store: Path) -> float:
    # The same work on both sides: 3 branches per assignment. Since the random control became
    # replicated (default 3 replicates, 5 branches) a tree that has the option is told to run
    # one; older trees have no such option and always ran one.
    cli_source = Path(src or "src") / "labreplay" / "suites" / "campaign" / "cli.py"
    replicated = cli_source.is_file() and "--random-replicates" in cli_source.read_text()
    same_work = ["--random-replicates", "1"] if replicated else []
    args = ["campaign", "run", "--specs", str(specs), "--agent", "bayes", "--store", str(store)]
    t0 = time.perf_counter()
    _cli(src, *args, *same_work)
    return time.perf_counter() - t0


def run(quick: bool) -> list[dict[str, Any]]:
    baseline = os.environ.get("LABREPLAY_BENCH_BASELINE")
    current = str(Path(__file__).resolve().parents[1] / "src")
    versions = {"new": current, **({"old": baseline} if baseline else {})}
    repeats = 1 if quick else 3
    times: dict[str, list[float]] = {v: [] for v in versions}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for label, src in versions.items():
            _cli(src, "campaign", "compile", "--seeds", SEEDS, "--out", str(root / label))
        for i in range(repeats):
            for label, src in versions.items():  # alternate: load hits both alike
                store = root / f"{label}-{i}.sqlite"
                times[label].append(_timed_run(src, root / label, store))
    new = statistics.median(times["new"])
    figures = [
        {
            "name": f"campaign run --agent bayes, partition seeds {SEEDS} (60 assignments x 3 "
            "branches), through the driver",
            "median": new,
            "unit": "s",
            "ratio": None,
            "target": "-",
        }
    ]
    if "old" in times:
        old = statistics.median(times["old"])
        figures.append(
            {
                "name": "  same, old direct path (LABREPLAY_BENCH_BASELINE); ratio new / old",
                "median": old,
                "unit": "s",
                "ratio": new / old,
                "target": "ratio < 1.10",
            }
        )
    return figures
