"""Conditions suite: compile every dataset (target < 10 s), in-process and as the command
`labreplay conditions compile --all` (process start, imports and writing included; < 10 s);
score 10,000 answers (< 1 s); import one HTE-sized grid table through the generic importer
(slicing rule, informational)."""

from __future__ import annotations

import statistics
import time
from typing import Any


def _timed(fn: Any, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def _import_grid() -> None:
    """8 aryl halides x 4 bases x 12 ligands x 23 additives, as a chemist's CSV."""
    import csv
    import tempfile
    from itertools import product
    from pathlib import Path

    import numpy as np

    from labreplay.suites.conditions.importer import ImportOptions, import_table

    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "grid.csv"
        with path.open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["halide", "base", "ligand", "additive", "yield"])
            for h, b, lig, a in product(range(8), range(4), range(12), range(23)):
                y = float(np.clip(rng.normal(30 + 5 * b + 2 * lig - a, 10), 0, 99))
                writer.writerow([f"ArX-{h}", f"base-{b}", f"L{lig}", f"add-{a}", f"{y:.1f}"])
        opts = ImportOptions(["halide"], ["base", "ligand", "additive"], "yield")
        import_table(path, opts)


def _cli_compile_all() -> None:
    """The command a user runs, in a fresh process (imports and the written file included)."""
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "labreplay.cli.main",
                "conditions",
                "compile",
                "--all",
                "--out",
                str(Path(tmp) / "q.jsonl"),
                "--json",
            ],
            check=True,
            capture_output=True,
        )


def run(quick: bool) -> list[dict[str, Any]]:
    from labreplay.records.sources import resolve_data_dir
    from labreplay.suites.conditions.agents import RandomAgent
    from labreplay.suites.conditions.compiler import compile_datasets
    from labreplay.suites.conditions.datasets import dataset_names
    from labreplay.suites.conditions.questions import agent_view
    from labreplay.suites.conditions.scoring import answer_key, score_answer

    data_dir = resolve_data_dir()
    repeats = 1 if quick else 3
    holder: dict[str, Any] = {}

    def compile_all() -> None:
        holder["set"] = compile_datasets(dataset_names(), data_dir, seed=0)

    compile_times = _timed(compile_all, repeats)
    questions = holder["set"].questions
    # 10,000 answers: cycle through the compiled questions with a seeded random agent.
    chosen = [questions[i % len(questions)] for i in range(10_000)]
    keys = [answer_key(q) for q in chosen]
    agent = RandomAgent(seed=0)
    answers = [agent.answer(agent_view(q)) for q in chosen]

    def score_all() -> None:
        for k, a in zip(keys, answers, strict=True):
            score_answer(k, a)

    score_times = _timed(score_all, 3 if quick else 7)
    key_times = _timed(lambda: [answer_key(q) for q in chosen], 1 if quick else 3)
    grid_times = _timed(_import_grid, 1 if quick else 3)
    cli_times = _timed(_cli_compile_all, 1 if quick else 3)
    compile_median = statistics.median(compile_times)
    score_median = statistics.median(score_times)
    return [
        {
            "name": f"conditions: compile all datasets ({len(questions)} questions)",
            "median": compile_median * 1000,
            "unit": "ms",
            "ratio": compile_median / 10.0,
            "ratio_of": "the 10 s target",
            "target": "< 10 s",
        },
        {
            "name": "conditions: `labreplay conditions compile --all` (fresh process)",
            "median": statistics.median(cli_times) * 1000,
            "unit": "ms",
            "ratio": statistics.median(cli_times) / 10.0,
            "ratio_of": "the 10 s target",
            "target": "< 10 s",
        },
        {
            "name": "conditions: score 10,000 answers (prepared answer keys)",
            "median": score_median * 1000,
            "unit": "ms",
            "ratio": score_median / 1.0,
            "ratio_of": "the 1 s target",
            "target": "< 1 s",
        },
        {
            "name": "conditions: import an 8,832-row base x ligand x additive grid (CSV)",
            "median": statistics.median(grid_times) * 1000,
            "unit": "ms",
            "ratio": None,
            "target": "(informational)",
        },
        {
            "name": "conditions: prepare 10,000 answer keys from questions",
            "median": statistics.median(key_times) * 1000,
            "unit": "ms",
            "ratio": None,
            "target": "(informational)",
        },
    ]


if __name__ == "__main__":
    for figure in run(quick=True):
        print(figure)
