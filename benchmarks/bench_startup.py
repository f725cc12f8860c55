"""Start-up figures: the wall time of `labreplay --help` and `labreplay version` as a user
starts them (a fresh interpreter each time), against a bare `python -c pass`.

Issue 47 asks for under a second on an idle machine; the ratio to a bare interpreter is the
figure that carries over from a loaded machine. `modules` counts what the command imports
(`python -X importtime` lines), the cause of the time.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from typing import Any

LABREPLAY = (sys.executable, "-m", "labreplay.cli.main")
BARE = (sys.executable, "-c", "pass")


def _wall(argv: tuple[str, ...]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True, env={**os.environ, "COLUMNS": "100"})
    return time.perf_counter() - started


def _median_wall(argv: tuple[str, ...], repeats: int) -> float:
    _wall(argv)  # warm the file cache: a user's second start, not the disk
    return statistics.median(_wall(argv) for _ in range(repeats))


def _modules(argv: tuple[str, ...]) -> int:
    done = subprocess.run(
        (argv[0], "-X", "importtime", *argv[1:]), check=True, capture_output=True, text=True
    )
    return sum(line.startswith("import time:") for line in done.stderr.splitlines()) - 1


def run(quick: bool) -> list[dict[str, Any]]:
    repeats = 3 if quick else 15
    bare = _median_wall(BARE, repeats)
    figures = []
    for command in ("--help", "version"):
        argv = (*LABREPLAY, command)
        seconds = _median_wall(argv, repeats)
        figures.append(
            {
                "name": f"labreplay {command}, a fresh process",
                "median": seconds,
                "unit": "s",
                "ratio": seconds / bare,
                "target": "< 1 s",
                "ratio_of": f"a bare `python -c pass` ({bare * 1e3:.0f} ms)",
                "modules": _modules(argv) - _modules(BARE),
            }
        )
    return figures
