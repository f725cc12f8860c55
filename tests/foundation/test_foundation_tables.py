"""Tables printed by the CLI keep their name columns whole at any width: `COLUMNS` is honoured,
a file or a pipe gets each table at its natural width, and a table wider than the output is
printed in parts that repeat the name columns instead of squeezing them to `r…`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console
from rich.table import Table

from labreplay.cli._common import NATURAL_WIDTH, console_width
from labreplay.sdk.cli import print_table

NAMES = ("bayes", "oracle", "base-rate forecaster", "context-trained model", "llm:gpt-4o-mini")
HEADERS = ("#", "system", *(f"metric number {k}" for k in range(10)))


def _board() -> Table:
    table = Table(title="a board as wide as the campaign's, and a long title to go with it")
    for header in HEADERS:
        table.add_column(header)
    for k, name in enumerate(NAMES):
        table.add_row(str(k) if k < 2 else "ref", name, *(f"+0.{k}{j}88" for j in range(10)))
    return table


def _render(width: int) -> str:
    out = Console(file=StringIO(), width=width)
    print_table(_board(), "#", "system", to=out)
    text = out.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(text, str)
    return text


@pytest.mark.parametrize("width", [80, 60, 40])
def test_a_narrow_output_repeats_the_names_in_parts(width: int) -> None:
    text = _render(width)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= width
    assert "…" not in text  # nothing is cut short
    for name in NAMES:
        assert f" {name} " in text  # whole, on one line, in every part
        assert sum(f" {name} " in line for line in lines) == text.count("(continued)") + 1
    for k in range(len(NAMES) if width >= 60 else 0):  # every value, unfolded where it fits
        for j in range(10):
            assert f"+0.{k}{j}88" in text


def test_a_caption_goes_under_the_last_part_only() -> None:
    table = _board()
    table.caption = "a caption"
    out = Console(file=StringIO(), width=80)
    print_table(table, "#", "system", to=out)
    text = out.file.getvalue()  # type: ignore[attr-defined]
    assert text.count("(continued)") >= 1 and text.count("a caption") == 1
    assert text.rstrip().endswith("a caption")


def test_natural_width_prints_the_table_whole() -> None:
    text = _render(NATURAL_WIDTH)
    assert "(continued)" not in text
    (header,) = [line for line in text.splitlines() if "system" in line]
    assert all(h in header for h in HEADERS)
    assert max(len(line) for line in text.splitlines()) < 300  # its own width, not the limit's


def test_a_column_too_wide_for_any_part_folds_and_the_names_do_not() -> None:
    table = Table()
    table.add_column("system")
    table.add_column("note")
    table.add_row("context-trained model", "x" * 70)
    out = Console(file=StringIO(), width=40)
    print_table(table, "system", to=out)
    text = out.file.getvalue()  # type: ignore[attr-defined]
    assert " context-trained model " in text
    assert "".join(line.split("│")[2].strip() for line in text.splitlines()[3:-1]) == "x" * 70


@pytest.mark.parametrize(
    ("environ", "tty", "expected"),
    [
        ({"COLUMNS": "80"}, False, 80),
        ({"COLUMNS": "80"}, True, 80),
        ({}, True, None),  # rich asks the terminal
        ({}, False, NATURAL_WIDTH),  # a file, a pipe, a CI log
        ({"COLUMNS": "0"}, False, NATURAL_WIDTH),
        ({"COLUMNS": "wide"}, True, None),
    ],
)
def test_console_width(environ: dict[str, str], tty: bool, expected: int | None) -> None:
    assert console_width(environ, tty) == expected


def _cli_to_file(tmp_path: Path, columns: str | None, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = columns
    path = tmp_path / f"out-{columns}.txt"
    with path.open("w", encoding="utf-8") as handle:
        proc = subprocess.run(
            [sys.executable, "-m", "labreplay.cli.main", *args],
            stdout=handle,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=120,
        )
    assert proc.returncode == 0, proc.stderr
    return path.read_text(encoding="utf-8")


def _cli_json(*args: str) -> object:
    proc = subprocess.run(
        [sys.executable, "-m", "labreplay.cli.main", *args, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize(
    ("command", "key"), [(("conditions", "datasets"), "datasets"), (("data", "list"), None)]
)
def test_cli_tables_keep_their_names_in_a_file(
    tmp_path: Path, command: tuple[str, ...], key: str | None
) -> None:
    data = _cli_json(*command)
    rows = data[key] if isinstance(data, dict) and key else data
    assert isinstance(rows, list)
    names = [str(r["name"]) for r in rows]
    for columns in (None, "80"):
        text = _cli_to_file(tmp_path, columns, *command)
        for name in names:
            assert f" {name} " in text, (columns, name)
        if columns:
            assert max(len(line) for line in text.splitlines() if "│" in line) <= int(columns)
