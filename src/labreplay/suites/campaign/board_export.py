"""The paper's campaign board as a file: Markdown, LaTeX or CSV (`campaign leaderboard
--format`). Ranked rows and reference rows (marked, never ranked) with the assignments each
covers, skill over context, paired bootstrap 95% intervals, the board's notes (oracle beaten,
systems below a reference row, the reference ceiling exceeded or negative) and the power range
under the table."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from labreplay.suites.campaign.board_notes import BoardNotes, notes_text
from labreplay.suites.campaign.board_text import skill_note
from labreplay.suites.campaign.power import power_text

if TYPE_CHECKING:
    from labreplay.suites.campaign.board_rows import Interval
    from labreplay.suites.campaign.leaderboard import Board

FORMATS = ("markdown", "latex", "csv")
HEADERS = (
    "rank",
    "system",
    "assignments",
    "adaptive AUC",
    "skill over context [95% CI]",
    "held-out gain",
    "selection value",
    "headroom",
    "selection lift [95% CI]",
    "evidence lift [95% CI]",
)


def _num(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def _ci(v: Interval | None) -> str:
    return "-" if v is None else f"{v['mean']:+.3f} [{v['lo']:+.3f}, {v['hi']:+.3f}]"


def board_cells(table: Board) -> list[list[str]]:
    n = len(table["assignments"])
    out = []
    for r in [*table["rows"], *table["references"]]:
        share = r.get("headroom_captured")
        out.append(
            [
                str(r["rank"]) if "rank" in r else "ref",
                r["system"],
                f"{r['assignments']}/{n}",
                _num(r["adaptive_auc"], ".3f"),
                _ci(r.get("skill_over_context")),
                _num(r.get("held_out_gain"), "+.4f"),
                _num(r.get("selection_value"), "+.4f"),
                "-" if share is None else f"{100 * share:.0f}%",
                _ci(r.get("selection_lift")),
                _ci(r.get("evidence_lift")),
            ]
        )
    return out


def _latex_escape(text: str) -> str:
    for a, b in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("#", r"\#"),
                 ("_", r"\_"), ("$", r"\$")):  # fmt: skip
        text = text.replace(a, b)
    return text


def render(board: Mapping[str, Any], fmt: str, kind: str = "long") -> str:
    """One board (`long` = the paper's board; falls back to `short` when it is empty)."""
    table = board["tables"][kind]
    if not table["assignments"] and kind == "long":
        table = board["tables"]["short"]
    cells = board_cells(table)
    caption = (
        f"{len(table['assignments'])} assignments, partition seed(s) "
        f"{', '.join(str(s) for s in table['seeds'])}, equal weight; paired bootstrap 95% "
        f"intervals ({board['bootstrap']['resamples']} resamples, seed {board['bootstrap']['seed']}); "
        "ref = reference row, never ranked. " + skill_note(table)
    )
    notes = [*notes_text(table.get("flags") or BoardNotes()), power_text(table["power"])]
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(HEADERS)
        writer.writerows(cells)
        return buf.getvalue()
    if fmt == "markdown":
        lines = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in cells]
        return "\n".join([*lines, "", caption, "", "\n\n".join(notes)]) + "\n"
    if fmt == "latex":
        body = [" & ".join(_latex_escape(c) for c in row) + r" \\" for row in cells]
        return (
            "\n".join(
                [
                    r"\begin{table}",
                    r"\centering",
                    r"\begin{tabular}{ll" + "r" * (len(HEADERS) - 2) + "}",
                    r"\hline",
                    " & ".join(_latex_escape(h) for h in HEADERS) + r" \\",
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
