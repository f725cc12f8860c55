"""Record-card compiles of synthetic reaction tables, the context learner's fit, and the
Precursor Genome's compile on the same machine to scale them by.

Targets: the 5,000-row table into five partition seeds under 30 s on one core (issue 34); the
100k-row table at one seed and the learner's fit per assignment are reported with their ratio to
the Precursor Genome's one-seed compile (issue 48). The tables come from `synthetic_card.py`
(seeded, written into a temporary folder); compiles run `campaign compile ... --out` in process,
end to end (load, partition, bind, hash, write).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _write_card(folder: Path, rows: int) -> Path:
    spec = importlib.util.spec_from_file_location("synthetic_card", HERE / "synthetic_card.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    card: Path = module.write_card(folder, rows)
    return card


def _compile_seconds(source: list[str], seeds: str, out: Path) -> float:
    from labreplay.cli.main import run as cli

    start = time.perf_counter()
    # the printed indexes would bury the benchmark table in a log: kept out of it
    with contextlib.redirect_stdout(io.StringIO()):
        code = cli(["campaign", "compile", *source, "--seeds", seeds, "--out", str(out), "--json"])
    if code != 0:
        raise RuntimeError(f"compile {source} exited {code}")
    return time.perf_counter() - start


def _fit_seconds(specs: Path, repeats: int) -> list[float]:
    """The learner refitted from scratch on each assignment's context rows (no fit cache)."""
    import json

    from labreplay.suites.campaign.learner import CardModel

    times = []
    for path in sorted(specs.glob("*.json"))[:repeats]:
        if path.name == "index.json":
            continue
        body = json.loads(path.read_text(encoding="utf-8"))["body"]
        start = time.perf_counter()
        CardModel(body["categories"], body["record"]["table"]).fit_context(body["context_rows"])
        times.append(time.perf_counter() - start)
    return times


def run(quick: bool) -> list[dict[str, Any]]:
    repeats = 1 if quick else 3
    with tempfile.TemporaryDirectory(prefix="labreplay-bench-card-") as tmp:
        root = Path(tmp)
        (root / "t5k").mkdir()
        (root / "t100k").mkdir()
        small, large = _write_card(root / "t5k", 5000), _write_card(root / "t100k", 100_000)
        pg = [_compile_seconds([], "0", root / f"pg{i}") for i in range(repeats)]
        five = [_compile_seconds(["--record-card", str(small)], "0-4", root / f"s{i}")
                for i in range(repeats)]  # fmt: skip
        hundred = [_compile_seconds(["--record-card", str(large)], "0", root / f"l{i}")
                   for i in range(repeats)]  # fmt: skip
        fits = _fit_seconds(root / "l0" / "seed0", repeats + 1)
    base = statistics.median(pg)
    return [
        {"name": "card compile: Precursor Genome, seed 0 (the ratios' base)",
         "median": base, "unit": "s", "target": None},
        {"name": "card compile: 5,000-row table, seeds 0-4", "median": statistics.median(five),
         "unit": "s", "ratio": statistics.median(five) / base, "target": "< 30 s"},
        {"name": "card compile: 100k-row table, seed 0", "median": statistics.median(hundred),
         "unit": "s", "ratio": statistics.median(hundred) / base, "target": None},
        {"name": "card learner: fit per assignment, 100k-row table", "median": statistics.median(fits),
         "unit": "s", "ratio": statistics.median(fits) / base, "target": None},
    ]  # fmt: skip
