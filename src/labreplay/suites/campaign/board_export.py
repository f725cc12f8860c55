"""The paper's campaign board as a file: Markdown, LaTeX or CSV (`campaign leaderboard
--format`). The terminal board's summary, then ranked rows and reference rows (marked, never
ranked) in the columns `--columns` chose, with the terminal's cells (`board_text.board_cells`:
the same figures and rounding), then the board's notes (ranked systems that bought no evidence,
oracle beaten, systems below a reference row, the reference ceiling exceeded or negative) and
the power range. CSV holds every column, unmarked."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from typing import Any

from labreplay.suites.campaign.board_notes import BoardNotes, notes_text
from labreplay.suites.campaign.board_text import (
    COLUMNS,
    board_cells,
    bullets,
    context_model_line,
    no_evidence_line,
    skill_note,
    summary,
    wrap,
)
from labreplay.suites.campaign.options import BOARD_COLUMNS
from labreplay.suites.campaign.power import power_text

FORMATS = ("markdown", "latex", "csv")
# A CSV file holds every figure the export has ever held, whatever `--columns` says.
CSV_COLUMNS = ("assignments", "auc", "skill", "gain", "value", "headroom", "selection", "evidence")


def _latex_escape(text: str) -> str:
    for a, b in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("#", r"\#"),
                 ("_", r"\_"), ("$", r"\$")):  # fmt: skip
        text = text.replace(a, b)
    return text


def render(
    board: Mapping[str, Any],
    fmt: str,
    kind: str = "long",
    columns: Sequence[str] = BOARD_COLUMNS,
    width: int = 80,
) -> str:
    """One board (`long` = the paper's board; falls back to `short` when it is empty), its
    prose wrapped at `width` (Markdown; the table's rows are as wide as their cells)."""
    if not board["tables"][kind]["assignments"] and kind == "long":
        kind = "short"
    table = board["tables"][kind]
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(["rank", "system", *(COLUMNS[c][0] for c in CSV_COLUMNS)])
        writer.writerows(board_cells(table, CSV_COLUMNS, marked=False))
        return buf.getvalue()
    headers = ["rank", "system", *(COLUMNS[c][0] for c in columns)]
    cells = board_cells(table, columns)
    caption = (
        f"{len(table['assignments'])} assignments, partition seed(s) "
        f"{', '.join(str(s) for s in table['seeds'])}, equal weight; paired bootstrap 95% "
        f"intervals ({board['bootstrap']['resamples']} resamples, seed {board['bootstrap']['seed']}); "
        "ref = reference row, never ranked. " + skill_note(table)
    )
    marks = [line for line in (no_evidence_line(table), context_model_line(table)) if line]
    notes = [*marks, *notes_text(table.get("flags") or BoardNotes()), power_text(table["power"])]
    if fmt == "markdown":
        lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in cells]
        top = ["\n".join(wrap(line, width)) for line in summary(board, (kind,))]
        notes_lines = [line for note in notes for line in bullets(note, width)]
        prose = ["\n".join(wrap(caption, width)), "\n".join(notes_lines)]
        return "\n\n".join([*top, "\n".join(lines), *prose]) + "\n"
    if fmt == "latex":
        body = [" & ".join(_latex_escape(c) for c in row) + r" \\" for row in cells]
        return (
            "\n".join(
                [
                    r"\begin{table}",
                    r"\centering",
                    r"\begin{tabular}{ll" + "r" * (len(headers) - 2) + "}",
                    r"\hline",
                    " & ".join(_latex_escape(h) for h in headers) + r" \\",
                    r"\hline",
                    *body,
                    r"\hline",
                    r"\end{tabular}",
                    r"\caption{" + _latex_escape(" ".join([caption, *notes])) + "}",
                    r"\end{table}",
                ]
            )
            + "\n"
        )
    raise ValueError(f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})")
