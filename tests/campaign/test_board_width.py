"""`campaign leaderboard > file`: every system name in full, at 80 columns (a file without
COLUMNS, or COLUMNS=80: the board is printed in parts that repeat the names, no line is
longer, the summary comes first) and with every column on a wide output."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def _cli(*args: str, columns: str | None = None, stdout: object = subprocess.PIPE) -> str:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = columns
    proc = subprocess.run(
        [sys.executable, "-m", "labreplay.cli.main", *args],
        stdout=stdout,  # type: ignore[arg-type]
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout or ""


def test_the_board_in_a_file_shows_every_system_name(pg_specs: list[Any], tmp_path: Path) -> None:
    from labreplay.store.sqlite import Store
    from labreplay.suites.campaign.leaderboard import leaderboard
    from labreplay.suites.campaign.runner import run_assignments

    store = tmp_path / "runs.sqlite"
    (spec,) = [s for s in pg_specs if s.body["assignment"]["id"] == "long-1"]
    with Store(store) as db:  # the runs in-process (as `make demo`); the board from the CLI
        run_assignments([spec], "bayes", db, 0)
        run_assignments([spec], "oracle", db, 0, controls=())  # a reference row, never ranked
        board = leaderboard(db)
    table = board["tables"]["long"]
    names = [r["system"] for r in [*table["rows"], *table["references"]]]
    assert {"bayes", "oracle"} <= set(names) and len(names) >= 4
    headers = ["skill over context [95% CI]", "selection value", "seed SD", "isolation"]
    for columns, extra in ((None, ()), ("80", ()), ("250", ("--columns", "all"))):
        path = tmp_path / f"board-{columns}.txt"
        with path.open("w", encoding="utf-8") as handle:
            _cli(
                "campaign", "leaderboard", "--store", str(store), *extra,
                columns=columns, stdout=handle,
            )  # fmt: skip
        text = path.read_text(encoding="utf-8")
        rows = [line for line in text.splitlines() if line.startswith("│")]
        parts = text.count("(continued)") + 1
        for name in names:  # whole, in its own cell, once in every part
            assert sum(f"│ {name} " in line for line in rows) == parts, (columns, name)
        assert "…" not in text
        if extra:  # a wide output gets every column in one part
            assert parts == 1 and all(h in text for h in headers), text
            continue
        # a file without COLUMNS is read at 80 columns, as COLUMNS=80 asks: the table in
        # parts, the summary first, the prose cut into bullets (issue 51)
        assert parts > 1
        assert max(len(line) for line in text.splitlines()) <= 80, columns
        assert text.startswith("bayes on 1 long assignment: skill over context ")
        assert "\n- reference rows (ref) are never ranked\n" in text
