"""Terminal rendering of the campaign boards (used by the CLI and `make demo`): a summary of a
few lines, then each board's table (the columns `--columns` chose) and its notes as bulleted
lines wrapped at the output's width (`reading_console`: 80 columns when not a terminal). The
cells and the summary are the Markdown board's too (`board_export`): one format per figure."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich.table import Table

from labreplay.sdk.cli import print_table
from labreplay.suites.campaign.board_notes import BoardNotes, notes_text
from labreplay.suites.campaign.options import ALL_BOARD_COLUMNS, BOARD_COLUMNS
from labreplay.suites.campaign.power import power_text

if TYPE_CHECKING:
    from rich.console import Console

    from labreplay.sdk.report import Interval
    from labreplay.suites.campaign.board_rows import SystemRow
    from labreplay.suites.campaign.leaderboard import Board

# How the panel-relative score is read (declared; METRICS.md, fourth round).
SKILL_NOTE = (
    "skill over context = adaptive AUC minus the context-trained model's AUC on the same "
    "assignments (paired bootstrap 95%). Absolute AUC includes how hard the query panel is, "
    "which changes with the partition seed and differs from the paper's panel: compare across "
    "panels, and with the paper's board, by skill over context and by differences of it "
    "between systems, not by absolute AUC."
)


def skill_note(table: Board) -> str:
    """`SKILL_NOTE`, with the context model's per-seed mean AUC range on this board."""
    context = next((r for r in table["references"] if r["system"] == "context-trained model"), None)
    by_seed: dict[int, list[float]] = {}
    for p in context["per_assignment"] if context else []:
        by_seed.setdefault(int(p["partition_seed"]), []).append(float(p["adaptive_auc"]))
    if len(by_seed) < 2:
        return SKILL_NOTE
    means = [sum(v) / len(v) for v in by_seed.values()]
    return (
        f"{SKILL_NOTE} On this board the context model's mean AUC per partition seed ranges "
        f"{min(means):.3f} to {max(means):.3f}."
    )


TITLES = {
    "long": "paper's board: long assignments (T = 12)",
    "short": "short assignments (own board)",
}
NO_EVIDENCE_MARK = "†"  # beside the rank of a ranked system that bought no evidence


def _num(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def interval(v: Interval | None) -> str:
    return "-" if v is None else f"{v['mean']:+.3f} [{v['lo']:+.3f}, {v['hi']:+.3f}]"


def _times(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


# Every column a board can show: name (`--columns`) -> header, cell of a row (n = assignments).
Cell = Callable[["SystemRow", int], str]
COLUMNS: dict[str, tuple[str, Cell]] = {
    "assignments": ("assignments", lambda r, n: f"{r['assignments']}/{n}"),
    "isolation": ("isolation", lambda r, n: str(r.get("isolation", "-"))),
    "auc": ("adaptive AUC", lambda r, n: _num(r["adaptive_auc"], ".3f")),
    "skill": ("skill over context [95% CI]", lambda r, n: interval(r.get("skill_over_context"))),
    "gain": ("held-out gain", lambda r, n: _num(r["held_out_gain"], "+.3f")),
    "value": ("selection value", lambda r, n: _num(r.get("selection_value"), "+.3f")),
    "headroom": ("headroom", lambda r, n: _share(r.get("headroom_captured"))),
    "selection": ("selection lift [95% CI]", lambda r, n: interval(r.get("selection_lift"))),
    "evidence": ("evidence lift [95% CI]", lambda r, n: interval(r.get("evidence_lift"))),
    "seed-sd": ("seed SD", lambda r, n: _num(r.get("between_seed_sd"), ".3f")),
    "invalid": ("invalid", lambda r, n: _num(r.get("invalid_actions"), ".0f")),
}
assert tuple(COLUMNS) == ALL_BOARD_COLUMNS, "options.ALL_BOARD_COLUMNS names every column"


def bought_no_evidence(row: SystemRow) -> bool:
    """A ranked row whose adaptive runs took no evidence action on any assignment (issue 48):
    its selection and evidence lifts then say nothing about using evidence."""
    adaptive = (row.get("branches") or {}).get("adaptive") or {}
    return (
        "rank" in row
        and adaptive.get("runs", 0) > 0
        and adaptive.get("evidence_actions") == 0
        and not adaptive.get("evidence_unrecorded")  # runs stored before it was counted
    )


def rank_cell(row: SystemRow, marked: bool = True) -> str:
    if "rank" not in row:
        return "ref"
    return str(row["rank"]) + (f" {NO_EVIDENCE_MARK}" if marked and bought_no_evidence(row) else "")


def board_cells(table: Board, columns: Sequence[str], marked: bool = True) -> list[list[str]]:
    """One list of cells per row (ranked, then reference): rank, system, then `columns`."""
    n = len(table["assignments"])
    return [
        [rank_cell(r, marked), r["system"], *(COLUMNS[c][1](r, n) for c in columns)]
        for r in [*table["rows"], *table["references"]]
    ]


def _verdict(v: Interval | None) -> str:
    if v is None:
        return "-"
    side = "above 0" if v["lo"] > 0 else "below 0" if v["hi"] < 0 else "no effect shown"
    return f"{interval(v)} — {side}"


def no_evidence_line(table: Board) -> str | None:
    """The line under a board naming its ranked systems that bought no evidence."""
    names = [r["system"] for r in table["rows"] if bought_no_evidence(r)]
    if not names:
        return None
    return (
        f"{NO_EVIDENCE_MARK} bought no evidence on any assignment: {', '.join(names)}; "
        "its selection and evidence lifts do not measure the use of evidence"
    )


def context_model_line(table: Board) -> str | None:
    """The line under a card's board saying what its reference rows are: what the
    context-trained model (and the no-evidence and oracle agents, which use it) read."""
    reading = table.get("context_model")
    if not reading:
        return None
    return f"reference rows on this card: the context-trained model is a {reading}"


def summary(board: Mapping[str, Any], kinds: Sequence[str] = ("long", "short")) -> list[str]:
    """Two to five lines a reader needs first, from the rows the boards print: the leading
    system's skill over context and lifts on the first board, the other ranked systems, the
    leader of the next board, and who bought no evidence."""
    out: list[str] = []
    shown = [k for k in kinds if board["tables"][k]["assignments"]]
    for kind in shown:
        table: Board = board["tables"][kind]
        n, rows = len(table["assignments"]), table["rows"]
        if not rows:
            held = f" ({len(table['incomplete'])} incomplete)" if table["incomplete"] else ""
            out.append(f"{kind} board ({n} assignments): no ranked system{held}")
            continue
        top = rows[0]
        if kind == shown[0]:
            out.append(
                f"{top['system']} on {n} {kind} assignment{'s' * (n != 1)}: skill over context "
                f"{_verdict(top['skill_over_context'])}; selection lift "
                f"{_verdict(top.get('selection_lift'))}; evidence lift "
                + _verdict(top.get("evidence_lift"))
            )
        else:
            out.append(
                f"{kind} board ({n} assignments): {top['system']} skill over context "
                + _verdict(top["skill_over_context"])
            )
        if len(rows) > 1:
            others = [f"{r['system']} {interval(r['skill_over_context'])}" for r in rows[1:4]]
            more = f" and {len(rows) - 4} more" if len(rows) > 4 else ""
            out.append(f"also ranked on the {kind} board (skill): {', '.join(others)}{more}")
    flagged = sorted({r["system"] for k in shown for r in board["tables"][k]["rows"]
                      if bought_no_evidence(r)})  # fmt: skip
    if flagged:
        out.append(f"bought no evidence ({', '.join(flagged)}): the lifts do not measure it")
    return out


def wrap(text: str, width: int, first: str = "", rest: str | None = None) -> list[str]:
    """`text` in lines of at most `width` (a word longer than that is cut), never at a hyphen
    (a figure's minus sign stays with it)."""
    indent = " " * len(first) if rest is None else rest
    return textwrap.wrap(
        text, width, initial_indent=first, subsequent_indent=indent, break_on_hyphens=False
    ) or [first.rstrip()]


def _clauses(text: str) -> list[str]:
    """`text` cut at each "; " outside parentheses."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and text.startswith("; ", i):
            parts.append(text[start:i])
            start = i + 2
    return [*parts, text[start:]]


def bullets(text: str, width: int) -> list[str]:
    """One note as a bullet, its "; "-separated clauses as bullets under it, wrapped."""
    first, *rest = _clauses(text)
    lines = wrap(first, width, "- ")
    for clause in rest:
        lines += wrap(clause, width, "  - ")
    return lines


def legend(table: Board) -> list[str]:
    """What the columns mean, one note each."""
    return [
        "reference rows (ref) are never ranked",
        "assignments = how many of the board's assignments a row covers",
        skill_note(table),
        "selection value: held-out gain of the context-trained model told the true outcomes of "
        "the experiments the system chose (not an upper bound: it may be above or below the "
        "system's gain)",
        "headroom = held-out gain / the reference model's ceiling (best T candidates, greedy), "
        "pooled over assignments",
        "seed SD = spread of the per-seed mean AUC",
        "reference model's ceiling, best T candidates for the context-trained model (greedy): "
        f"{_num(table.get('reference_ceiling'), '+.4f')} nats (mean over assignments)",
    ]


def _signs(signs: Mapping[str, int | str] | None) -> str:
    if not signs:
        return "per-assignment selection-lift signs: -"
    return (
        f"per-assignment selection-lift signs where resolved ({signs['rule']}): "
        f"+ {signs['positive']}, - {signs['negative']}, unresolved {signs['unresolved']}"
    )


def system_note(r: SystemRow) -> str:
    """A ranked system's details: seeds, replicates, selection value, lifts, acceleration,
    over-claims and each branch's closures and stops."""
    est, reps = r["acceleration_estimable"], r.get("random_replicates") or {}
    stops = [
        f"{name} runs {v['runs']}: closed {v['experiments_closed']} / early stops "
        f"{v['early_stops']} / unused exp {v['unused_experiments']} / invalid actions "
        f"{v['invalid_actions']}"
        + (
            f" / departures in {v['departure_experiments']} experiment(s)"
            if v["departure_experiments"]
            else ""
        )
        for name, v in r["branches"].items()
    ]
    value_range = r["selection_value_range"]
    parts = [
        f"run seeds {', '.join(str(k) for k in r['run_seeds'])} pooled",
        f"random replicates per assignment {reps.get('min', 0)}-{reps.get('max', 0)} "
        f"(noise SD {_num(r['random_noise_sd'], '.4f')})",
        "selection value range "
        + ("{:+.4f}..{:+.4f}".format(*value_range) if value_range else "-")
        + f" (gain above it in {r['gain_above_selection_value']}, <= 0 in "
        f"{r['selection_value_nonpositive']})",
        "selection lift per seed "
        f"{', '.join(f'{v:+.3f}' for v in r['selection_lift_seed_means'].values()) or '-'} "
        f"(between-seed SD {_num(r['selection_lift_between_seed_sd'], '.4f')})",
        _signs(r.get("selection_lift_signs")),
        f"acceleration (tau = context model t=0 + 0.05) first passage "
        f"{_times(r['acceleration_first'])} ({est['first']} estimable, "
        f"target already met at t=0 in {r['target_met_at_t0']} of {r['assignments']}, "
        f"excluded), sustained {_times(r['acceleration_sustained'])}",
        f"over-claim rate {_num(r['overclaim_rate'], '.2f')}",
        *stops,
    ]
    return f"{r['system']}: " + "; ".join(parts)


def board_notes_lines(table: Board) -> list[str]:
    """Every note under a board, each one line (`bullets` cuts them for reading)."""
    lines = [*legend(table), *notes_text(table.get("flags") or BoardNotes())]
    lines += [system_note(r) for r in table["rows"]]
    for system in table["incomplete"]:
        reasons = table["incomplete_reasons"].get(system, {})
        first: tuple[str, list[str]] = next(iter(reasons.items()), ("", []))
        lines.append(
            f"not ranked (incomplete): {system} — {len(reasons)} assignment(s), e.g. "
            f"{first[0]}: {'; '.join(first[1])}"
        )
    return [*lines, power_text(table["power"])]


def print_board(
    console: Console,
    board: Mapping[str, Any],
    kinds: tuple[str, ...] = ("long", "short"),
    columns: Sequence[str] = BOARD_COLUMNS,
) -> None:
    """The summary, then each board and its notes; `console` at the width to fit (see
    `reading_console`)."""
    width = console.width
    for line in summary(board, kinds):
        _say(console, wrap(line, width))
    unverified = set(board.get("unverified_data", []))
    for kind in kinds:
        table = board["tables"][kind]
        if not table["assignments"]:
            continue
        _print_table(console, kind, table, unverified, columns)
        for note in board_notes_lines(table):
            _say(console, bullets(note, width))
    if unverified:
        _say(
            console,
            wrap(
                f"UNVERIFIED DATA: {len(unverified)} spec(s) were compiled from files whose "
                "sha256 differs from the manifest (--allow-modified-data): "
                + ", ".join(sorted(unverified)),
                width,
            ),
        )


def _say(console: Console, lines: list[str]) -> None:
    for line in lines:  # already cut to the width: printed as they are
        console.print(line, soft_wrap=True, markup=False, highlight=False)


def _print_table(
    console: Console, kind: str, table: Board, unverified: set[str], columns: Sequence[str]
) -> None:
    marked = [a for a in table["assignments"] if a in unverified]
    seeds = ", ".join(str(s) for s in table["seeds"])
    rich_table = Table(
        title=f"campaign: {TITLES[kind]} — {len(table['assignments'])} assignments, partition "
        f"seed(s) {seeds}, equal weight; 95% paired bootstrap"
        + (" — UNVERIFIED DATA" if marked else "")
    )
    for header in ("#", "system", *(COLUMNS[c][0] for c in columns)):
        rich_table.add_column(header)
    for cells in board_cells(table, columns):
        rich_table.add_row(*cells)
    print_table(rich_table, "#", "system", to=console)  # the names stay whole at any width
    for line in (no_evidence_line(table), context_model_line(table)):
        if line is not None:
            _say(console, wrap(line, console.width))
