"""`conditions leaderboard > file`: every agent name in full, at the table's natural width and
with COLUMNS=80 (printed in parts that repeat the agent column)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.report.test_labels_and_numbers import SNAKE


def _cli(*args: str, columns: str | None = None, stdout: Any = subprocess.PIPE) -> str:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = columns
    proc = subprocess.run(
        [sys.executable, "-m", "labreplay.cli.main", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout or ""


def test_the_conditions_board_in_a_file_shows_every_agent(data_dir: Path, tmp_path: Path) -> None:
    from labreplay.suites.conditions.compiler import compile_datasets
    from labreplay.suites.conditions.report import write_compiled

    questions, store = tmp_path / "mitsunobu.jsonl", tmp_path / "runs.sqlite"
    write_compiled(compile_datasets(["edbo_mitsunobu"], data_dir, seed=0), questions)
    import labreplay
    from labreplay.store.sqlite import Store
    from labreplay.suites.conditions.questions import load_questions
    from labreplay.suites.conditions.runner import leaderboard, question_spec

    with Store(store) as db:  # the runs in-process (as `make demo`); the board from the CLI
        for agent in ("random", "ranker"):
            labreplay.run(
                "conditions",
                [question_spec(questions, load_questions(questions))],
                agent,
                db,
                seed=0,
                questions=questions,
            )
        board = leaderboard(db)
    names = [str(r["agent"]) for r in board["runs"]]
    assert len(names) == 2 and all(len(n) > 5 for n in names)
    for columns in (None, "80"):
        path = tmp_path / f"board-{columns}.txt"
        with path.open("w", encoding="utf-8") as handle:
            _cli("conditions", "leaderboard", "--store", str(store), columns=columns, stdout=handle)
        text = path.read_text(encoding="utf-8")
        rows = [line for line in text.splitlines() if line.startswith("│")]
        parts = text.count("(continued)") + 1
        for name in names:
            assert sum(f"│ {name} " in line for line in rows) == parts, (columns, name)
        assert "…" not in text
        # issue 49: the usual winner's reference row on every board, no lift read as chemistry
        assert sum("│ usual_winner (reference) " in line for line in rows) == parts
        assert "chemistry" not in text.lower()
        if columns is None:
            assert parts == 1 and "completion tokens" in text
            # the report's column names (`HEADLINE_LABELS`), never a metric key (issue 51)
            header = " ".join(line for line in text.splitlines() if line.startswith("┃"))
            assert "MC_all random-floor score (0-1)" in header and not SNAKE.search(header)
        else:
            assert parts > 1
            assert max(len(line) for line in text.splitlines() if line[:1] in "┏┃┡│└") <= 80
