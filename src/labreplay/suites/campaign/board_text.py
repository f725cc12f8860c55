"""Terminal rendering of the campaign boards (used by the CLI and `make demo`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.table import Table

from labreplay.suites.campaign.power import power_text

TITLES = {
    "long": "paper's board: long assignments (T = 12)",
    "short": "short assignments (own board)",
}


def _num(value: float | None, fmt: str = "{:.3f}") -> str:
    return "-" if value is None else fmt.format(value)


def _ci(v: Mapping[str, float] | None) -> str:
    return "-" if v is None else f"{v['mean']:+.3f} [{v['lo']:+.3f},{v['hi']:+.3f}]"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def print_board(
    console: Any, board: Mapping[str, Any], kinds: tuple[str, ...] = ("long", "short")
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


def _print_table(console: Any, kind: str, table: Mapping[str, Any], unverified: set[str]) -> None:
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
        "isolation",
        "adaptive AUC",
        "held-out gain",
        "ceiling (a)",
        "headroom",
        "selection lift [95% CI]",
        "evidence lift [95% CI]",
        "seed SD",
        "invalid",
    ):
        rich_table.add_column(col, no_wrap=col != "system")
    for r in table["rows"]:
        rich_table.add_row(
            str(r["rank"]),
            r["system"],
            str(r.get("isolation", "-")),
            _num(r["adaptive_auc"]),
            _num(r["held_out_gain"], "{:+.4f}"),
            _num(r["evidence_ceiling"]["selected"], "{:+.4f}"),
            _share(r["headroom_captured"]),
            _ci(r["selection_lift"]),
            _ci(r["evidence_lift"]),
            _num(r["between_seed_sd"], "{:.4f}"),
            f"{r['invalid_actions']:.0f}",
        )
    for ref in table["references"]:
        rich_table.add_row(
            "ref",
            ref["system"],
            str(ref.get("isolation", "-")),
            _num(ref["adaptive_auc"]),
            _num(ref["held_out_gain"], "{:+.4f}"),
            _num(ref["evidence_ceiling"]["selected"], "{:+.4f}"),
            _share(ref["headroom_captured"]),
            _ci(ref.get("selection_lift")),
            _ci(ref.get("evidence_lift")),
            _num(ref.get("between_seed_sd"), "{:.4f}"),
            _num(ref.get("invalid_actions"), "{:.0f}"),
        )
    for c in table["ceiling"]:
        rich_table.add_row(
            "ceil",
            c["system"] + " (sees outcomes)",
            "-",
            _num(c["adaptive_auc"]),
            _num(c["held_out_gain"], "{:+.4f}"),
            "-",
            "-",
            "-",
            "-",
            "-",
            "-",
        )
    console.print(rich_table)
    console.print(
        "ceiling (a): held-out gain of the context-trained model told the true outcomes of the "
        "experiments the system closed; headroom = held-out gain / ceiling (a), pooled over "
        "assignments; seed SD = spread of the per-seed mean AUC",
        soft_wrap=True,
    )
    console.print(
        f"evidence ceiling (b), best {len(table['assignments']) and 'T'} candidates for the "
        f"context-trained model: {_num(table['evidence_ceiling_best'], '{:+.4f}')} nats "
        "(mean over assignments)",
        soft_wrap=True,
    )
    for r in table["rows"]:
        est = r["acceleration_estimable"]
        b = r["branches"]
        stops = ", ".join(
            f"{name} closed {v['experiments_closed']} / early stops {v['early_stops']} / unused "
            f"exp {v['unused_experiments']}"
            + (f" / departures {v['control_departures']}" if v["control_departures"] else "")
            for name, v in b.items()
        )
        console.print(
            f"{r['system']}: headroom of ceiling (b) {_share(r['headroom_captured_best'])}; "
            f"selection lift per seed "
            f"{', '.join(f'{v:+.3f}' for v in r['selection_lift_seed_means'].values()) or '-'} "
            f"(between-seed SD {_num(r['selection_lift_between_seed_sd'], '{:.4f}')}); "
            f"acceleration (tau = context model t=0 + 0.05) first passage "
            f"{_num(r['acceleration_first'], '{:.2f}x')} ({est['first']} of {r['assignments']} "
            f"estimable), sustained {_num(r['acceleration_sustained'], '{:.2f}x')}; target met "
            f"at t=0 in {r['target_met_at_t0']}; over-claim rate "
            f"{_num(r['overclaim_rate'], '{:.2f}')}; {stops}",
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
