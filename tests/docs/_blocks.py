"""The fenced code blocks of the docs (docs/**/*.md and README.md) and the markers above them.

A block is preceded by zero or more HTML-comment lines; two of them say how it is checked:
`<!-- not-run: REASON -->` (it is not run, for the reason given) and
`<!-- run-by: tests/PATH.py[::TEST] -->` (another test runs it as written). A bash or python
block with neither is run by `test_docs_examples.py`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUNNABLE = {"bash", "sh", "shell", "python"}
_OPEN = re.compile(r"^(?P<indent> *)```(?P<lang>[\w+-]*)\s*$")
_MARKER = re.compile(r"^\s*<!--\s*(?P<kind>not-run|run-by):\s*(?P<value>.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    not_run: tuple[str, ...] = field(default=())
    run_by: tuple[str, ...] = field(default=())

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def pages() -> list[Path]:
    return [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]


def blocks(page: Path) -> list[Block]:
    lines = page.read_text(encoding="utf-8").split("\n")
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = _OPEN.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, close = len(opening["indent"]), i + 1
        while close < len(lines) and lines[close].strip() != "```":
            close += 1
        code = "\n".join(line[indent:] for line in lines[i + 1 : close]) + "\n"
        not_run: list[str] = []
        run_by: list[str] = []
        above = i - 1
        while above >= 0 and lines[above].lstrip().startswith("<!--"):
            marker = _MARKER.match(lines[above])
            if marker:
                (not_run if marker["kind"] == "not-run" else run_by).append(marker["value"])
            above -= 1
        found.append(Block(page, i + 1, opening["lang"], code, tuple(not_run), tuple(run_by)))
        i = close + 1
    return found


def runnable_blocks() -> list[Block]:
    return [b for page in pages() for b in blocks(page) if b.lang in RUNNABLE]
