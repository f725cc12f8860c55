"""The conditions-suite demo: compile every real dataset, run the references, print the tables."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TypedDict

from labreplay.sdk.engine import Store
from labreplay.sdk.engine import run as labreplay_run
from labreplay.suites.conditions.agents import LeaveTableOutRanker, RandomAgent
from labreplay.suites.conditions.compiler import compile_datasets
from labreplay.suites.conditions.datasets import dataset_names
from labreplay.suites.conditions.questions import load_questions
from labreplay.suites.conditions.report import write_compiled
from labreplay.suites.conditions.runner import question_spec
from labreplay.suites.conditions.summary import HEADLINE_LABELS, GoldPosition

TYPES = ("mc_single", "mc_all", "fib_all")
# (metric, its exact random floor); rows labelled as the report and the leaderboard label them
SHOWN = (
    ("mc_single_accuracy", None),
    ("mc_single_score", "mc_single_floor_score"),
    ("mc_all_accuracy", "mc_all_floor_accuracy"),
    ("mc_all_score", "mc_all_floor_score"),
    ("fib_hit", "fib_floor_hit"),
    ("fib_strict", "fib_floor_strict"),
    ("fib_score_given_hit", "fib_floor_score_given_hit"),
    ("delta_axis", None),
)


def _print_tables(counts: dict[str, dict[str, int]], runs: dict[str, dict[str, object]]) -> None:
    from rich.table import Table

    from labreplay.sdk.cli import print_table

    table = Table(title="conditions: questions per dataset and type (+ precedent twins)")
    table.add_column("dataset")
    for t in TYPES:
        table.add_column(t, justify="right")
    table.add_column("with precedents", justify="right")
    for ds, c in counts.items():
        twins = sum(v for k, v in c.items() if k.endswith("_with_precedents"))
        table.add_row(ds, *(str(c.get(t, 0)) for t in TYPES), str(twins))
    print_table(table, "dataset")
    scores = Table(
        title="conditions: reference agents vs the exact random floor (no-precedent set)"
    )
    scores.add_column("metric")
    for name in runs:
        scores.add_column(name, justify="right")
    scores.add_column("random floor", justify="right")
    first = next(iter(runs.values()))
    for metric, floor in SHOWN:
        cells = [f"{r[metric]:.3f}" if r.get(metric) is not None else "-" for r in runs.values()]
        floor_cell = f"{first[floor]:.3f}" if floor and first.get(floor) is not None else ""
        scores.add_row(HEADLINE_LABELS[metric], *cells, floor_cell)
    print_table(scores, "metric")


def _number(value: object) -> float:
    """A stored score, 0 when the run has none."""
    return float(value) if isinstance(value, int | float) else 0.0


class DemoFigures(TypedDict):
    """What `run_demo` prints and returns."""

    questions_file: str
    spec_hash: str
    n_questions: int
    counts: dict[str, dict[str, int]]  # dataset -> question type -> questions
    skipped: dict[str, int]
    gold_position_audit: dict[str, GoldPosition]
    runs: dict[str, dict[str, object]]  # agent -> its run summary
    ranker_beats_floor: dict[str, bool]
    compile_seconds: float
    total_seconds: float


def run_demo(data_dir: Path, store: Path, out_dir: Path) -> DemoFigures:
    """Compile all datasets, run the random and leave-table-out references, print and return
    the figures (question counts, scores, floors, timings)."""
    started = time.perf_counter()
    out_dir.mkdir(parents=True, exist_ok=True)
    compiled = compile_datasets(dataset_names(), data_dir, seed=0)
    questions_path = out_dir / "conditions_questions.jsonl"
    info = write_compiled(compiled, questions_path)
    compile_s = time.perf_counter() - started
    questions = load_questions(questions_path)
    spec = question_spec(questions_path, questions)
    runs: dict[str, dict[str, object]] = {}
    with Store(store) as db:
        for name in ("random", "ranker"):  # through the one door, like the CLI
            (result,) = labreplay_run(
                "conditions", [spec], name, db, seed=0, questions=questions_path
            )
            runs[str(db.run(str(result["run_id"])).agent)] = result
    _print_tables(info["counts"], runs)
    ranker, floor = runs[LeaveTableOutRanker.name], runs[RandomAgent.name]
    beats = {
        metric: bool(
            isinstance(score := ranker.get(metric), int | float)
            and score > _number(floor.get(floor_metric))
        )
        for metric, floor_metric in SHOWN
        if floor_metric
    }
    return {
        "questions_file": str(questions_path),
        "spec_hash": compiled.spec_hash,
        "n_questions": len(questions),
        "counts": info["counts"],
        "skipped": info["skipped"],
        "gold_position_audit": info["gold_position_audit"],
        "runs": runs,
        "ranker_beats_floor": beats,
        "compile_seconds": round(compile_s, 2),
        "total_seconds": round(time.perf_counter() - started, 2),
    }
