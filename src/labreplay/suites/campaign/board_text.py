"""Terminal rendering of the campaign boards (used by the CLI and `make demo`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rich.table import Table

from labreplay.sdk.cli import print_table
from labreplay.suites.campaign.board_notes import BoardNotes, notes_text
from labreplay.suites.campaign.power import power_text

if TYPE_CHECKING:
    from rich.console import Console

    from labreplay.suites.campaign.board_rows import Interval
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


def _num(value: float | None, fmt: str = "{:.3f}") -> str:
    return "-" if value is None else fmt.format(value)


def _ci(v: Interval | None) -> str:
    return "-" if v is None else f"{v['mean']:+.3f} [{v['lo']:+.3f},{v['hi']:+.3f}]"


def _signs(signs: Mapping[str, int | str] | None) -> str:
    if not signs:
        return "per-assignment selection-lift signs: -"
    return (
        f"per-assignment selection-lift signs where resolved ({signs['rule']}): "
        f"+ {signs['positive']}, - {signs['negative']}, unresolved {signs['unresolved']}"
    )


def _share(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def print_board(
    console: Console, board: Mapping[str, Any], kinds: tuple[str, ...] = ("long", "short")
) -> None:
    unverified = set(board.get("unverified_data", []))
    for kind in kinds:
        table = board["tables"][kind]
        if not table["assignments"]:
            continue
        _print_table(console, kind, table, unverified)
    if unverified:
        console.print(
            f"UNVERIFIED DATA: {len(unverified)} spec(s) were compiled from files whose sha256 "
            f"differs from the manifest (--allow-modified-data): {', '.join(sorted(unverified))}"
        )


def _print_table(console: Console, kind: str, table: Board, unverified: set[str]) -> None:
    marked = [a for a in table["assignments"] if a in unverified]
    seeds = ", ".join(str(s) for s in table["seeds"])
    rich_table = Table(
        title=f"campaign: {TITLES[kind]} — {len(table['assignments'])} assignments, partition "
        f"seed(s) {seeds}, equal weight; 95% paired bootstrap"
        + (" — UNVERIFIED DATA" if marked else "")
    )
    for col in (
        "#",
        "system",
        "assignments",
        "isolation",
        "adaptive AUC",
        "skill over context [95% CI]",
        "held-out gain",
        "selection value",
        "headroom",
        "selection lift [95% CI]",
        "evidence lift [95% CI]",
        "seed SD",
        "invalid",
    ):
        rich_table.add_column(col)
    n = len(table["assignments"])
    for r in [*table["rows"], *table["references"]]:
        ranked = "rank" in r
        rich_table.add_row(
            str(r["rank"]) if ranked else "ref",
            r["system"],
            f"{r['assignments']}/{n}",
            str(r.get("isolation", "-")),
            _num(r["adaptive_auc"]),
            _ci(r.get("skill_over_context")),
            _num(r["held_out_gain"], "{:+.4f}"),
            _num(r.get("selection_value"), "{:+.4f}"),
            _share(r.get("headroom_captured")),
            _ci(r.get("selection_lift")),
            _ci(r.get("evidence_lift")),
            _num(r.get("between_seed_sd"), "{:.4f}"),
            _num(r.get("invalid_actions"), "{:.0f}"),
        )
    print_table(rich_table, "#", "system", to=console)  # the names stay whole at any width
    console.print(
        "reference rows (ref) are never ranked; assignments = how many of the board's "
        f"assignments a row covers. {skill_note(table)} selection value: held-out gain of the context-trained "
        "model told the true outcomes of the experiments the system chose (not an upper bound: "
        "it may be above or below the system's gain). headroom = held-out gain / the reference "
        "model's ceiling (best T candidates, greedy), pooled over assignments; seed SD = "
        "spread of the per-seed mean AUC",
        soft_wrap=True,
    )
    console.print(
        f"reference model's ceiling, best T candidates for the context-trained model (greedy): "
        f"{_num(table.get('reference_ceiling'), '{:+.4f}')} nats (mean over assignments)",
        soft_wrap=True,
    )
    for line in notes_text(table.get("flags") or BoardNotes()):
        console.print(line, soft_wrap=True)
    for r in table["rows"]:
        est = r["acceleration_estimable"]
        b = r["branches"]
        reps = r.get("random_replicates") or {}
        stops = ", ".join(
            f"{name} runs {v['runs']}: closed {v['experiments_closed']} / early stops "
            f"{v['early_stops']} / unused exp {v['unused_experiments']} / invalid actions "
            f"{v['invalid_actions']}"
            + (
                f" / departures in {v['departure_experiments']} experiment(s)"
                if v["departure_experiments"]
                else ""
            )
            for name, v in b.items()
        )
        console.print(
            f"{r['system']}: run seeds {', '.join(str(k) for k in r['run_seeds'])} pooled; "
            f"random replicates per assignment {reps.get('min', 0)}-{reps.get('max', 0)} "
            f"(noise SD {_num(r['random_noise_sd'], '{:.4f}')}); selection value range "
            + (
                "{:+.4f}..{:+.4f}".format(*r["selection_value_range"])
                if r["selection_value_range"]
                else "-"
            )
            + f" (gain above it in {r['gain_above_selection_value']}, <= 0 in "
            f"{r['selection_value_nonpositive']}); selection lift per seed "
            f"{', '.join(f'{v:+.3f}' for v in r['selection_lift_seed_means'].values()) or '-'} "
            f"(between-seed SD {_num(r['selection_lift_between_seed_sd'], '{:.4f}')}); "
            + _signs(r.get("selection_lift_signs"))
            + "; "
            f"acceleration (tau = context model t=0 + 0.05) first passage "
            f"{_num(r['acceleration_first'], '{:.2f}x')} ({est['first']} estimable, "
            f"target already met at t=0 in {r['target_met_at_t0']} of {r['assignments']}, "
            f"excluded), sustained {_num(r['acceleration_sustained'], '{:.2f}x')}; over-claim "
            f"rate {_num(r['overclaim_rate'], '{:.2f}')}; {stops}",
            soft_wrap=True,
        )
    for system in table["incomplete"]:
        reasons = table["incomplete_reasons"].get(system, {})
        first: tuple[str, list[str]] = next(iter(reasons.items()), ("", []))
        console.print(
            f"not ranked (incomplete): {system} — {len(reasons)} assignment(s), e.g. "
            f"{first[0]}: {'; '.join(first[1])}"
        )
    console.print(power_text(table["power"]), soft_wrap=True)
