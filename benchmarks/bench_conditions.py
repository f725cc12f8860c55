"""Conditions suite: compile every dataset (target < 10 s); score 10,000 answers (< 1 s)."""

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
            "name": "conditions: score 10,000 answers (prepared answer keys)",
            "median": score_median * 1000,
            "unit": "ms",
            "ratio": score_median / 1.0,
            "ratio_of": "the 1 s target",
            "target": "< 1 s",
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
