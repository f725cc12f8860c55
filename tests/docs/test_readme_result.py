"""The README's "One result" (also on the docs home page) is what its three commands print
now: every cell of its table and the power line's figures (per pair named) are read off a
fresh board."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from labreplay.cli.main import run

ROOT = Path(__file__).resolve().parents[2]
PAGES = (ROOT / "README.md", ROOT / "docs" / "index.md")


def _table(text: str) -> list[dict[str, str]]:
    """The rows of the first Markdown table after "One result", by header."""
    lines = text.split("## One result", 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines[start:end]]
    header, rows = cells[0], cells[2:]
    return [dict(zip(header, row, strict=True)) for row in rows]


def _commands(text: str) -> list[str]:
    """The `labreplay campaign` commands of a page's "One result", without `labreplay`."""
    result = text.split("## One result", 1)[1].split("\n## ", 1)[0]
    return [
        line.split(maxsplit=1)[1] for line in result.splitlines() if line.startswith("labreplay ")
    ]


@pytest.mark.slow
def test_the_readme_result_is_a_fresh_board(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if not os.environ.get("LABREPLAY_DATA_DIR"):
        pytest.skip("LABREPLAY_DATA_DIR is not set: the result is a run on the data")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "400")
    commands, index_commands = (_commands(page.read_text(encoding="utf-8")) for page in PAGES)
    assert [c.split()[1] for c in commands] == ["compile", "run", "leaderboard"]
    assert index_commands == commands, "the docs home page runs other commands"
    for command in commands:
        capsys.readouterr()
        assert run(command.split()) == 0, command
    board = capsys.readouterr().out
    fresh = {row["system"]: row for row in _table("## One result\n" + board)}
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        summary = text.split("## One result", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
        assert board.startswith(summary), f"{page.name}: the board's summary reads otherwise"
        for row in _table(text):
            assert {k: fresh[row["system"]][k] for k in row} == row, f"{page.name}: {row}"
        _check_power_sentence(page.name, text, board)


WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}


def _check_power_sentence(page: str, text: str, board: str) -> None:
    """The power sentence quotes the seeds the board's power line gives for each pair it names,
    and it is about the pair it compares: Bayes against the model it starts from."""
    flat, board = " ".join(text.split()), " ".join(board.split())
    gap = re.search(r"a difference of (0\.\d+) ", flat)
    assert gap, f"{page} lost its power sentence"
    assert f"the paper's gap {gap[1]} needs" in board
    said = {
        pair: WORDS[word]
        for word, pair in re.findall(
            r"about (\w+) (?:partition seeds )?for `(bayes vs [^`]+)`", flat
        )
    }
    assert "bayes vs context-trained model" in said, f"{page}: the sentence names another pair"
    for pair, seeds in said.items():
        assert f"(~{seeds} partition seeds) for {pair}" in board, f"{page}: {pair}"
