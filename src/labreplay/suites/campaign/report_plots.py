"""The campaign report's figures: learning curves, lift intervals, the belief trajectory.

Every function returns PNG bytes; the same data gives the same bytes (`png_bytes`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np
from matplotlib.figure import Figure

from labreplay.sdk.report import png_bytes

if TYPE_CHECKING:
    from labreplay.suites.campaign.board_rows import SystemRow
    from labreplay.suites.campaign.report import CurveStats, TrajectoryStep

BRANCH_STYLE = {
    "adaptive": ("tab:blue", "-"),
    "random": ("tab:orange", "--"),
    "no-evidence": ("tab:green", ":"),
}


def learning_curves(system: str, by_horizon: Mapping[int, Mapping[str, CurveStats]]) -> bytes:
    """Held-out score s_t against experiments t, adaptive vs its two controls, one panel per
    horizon T (mean over the assignments of that length; band: +-1 SD over assignments)."""
    horizons = sorted(by_horizon)
    fig = Figure(figsize=(4.2 * max(1, len(horizons)), 3.2))
    # Fixed margins: constrained layout costs more than drawing these small figures.
    fig.subplots_adjust(left=0.1, right=0.98, bottom=0.15, top=0.85, wspace=0.3)
    axes = fig.subplots(1, max(1, len(horizons)), squeeze=False)[0]
    for ax, horizon in zip(axes, horizons, strict=False):
        for branch, entry in by_horizon[horizon].items():
            color, style = BRANCH_STYLE.get(branch, ("tab:gray", "-."))
            ax.plot(
                range(len(entry["mean"])),
                entry["mean"],
                style,
                color=color,
                marker="o",
                markersize=3,
                label=f"{branch} (n={entry['n']})",
            )
            if entry.get("sd") is not None and entry["n"] > 1:
                mean, sd = np.asarray(entry["mean"]), np.asarray(entry["sd"])
                ax.fill_between(
                    range(len(mean)), mean - sd, mean + sd, color=color, alpha=0.15, linewidth=0
                )
        ax.set_title(f"T = {horizon}", fontsize=9)
        ax.set_xlabel("experiments closed t")
        ax.set_ylabel("held-out score s_t (-panel loss)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(system, fontsize=10)
    return png_bytes(fig)


def lift_intervals(rows: Sequence[SystemRow]) -> bytes:
    """Selection and evidence lift per system with paired bootstrap 95% intervals."""
    height = 1.0 + 0.45 * max(1, len(rows))
    fig = Figure(figsize=(9.0, height))
    fig.subplots_adjust(left=0.3, right=0.98, bottom=0.5 / height, top=1 - 0.35 / height)
    axes = fig.subplots(1, 2, sharey=True)
    labels = [str(r["system"]) for r in rows]
    keys: tuple[Literal["selection_lift", "evidence_lift"], ...] = (
        "selection_lift",
        "evidence_lift",
    )
    for ax, key, title in zip(axes, keys, ("selection lift", "evidence lift"), strict=True):
        for i, row in enumerate(rows):
            ci = row.get(key)
            if ci:
                ax.errorbar(
                    [ci["mean"]],
                    [i],
                    xerr=[[ci["mean"] - ci["lo"]], [ci["hi"] - ci["mean"]]],
                    fmt="o",
                    color="tab:blue",
                    capsize=3,
                )
        ax.axvline(0.0, color="black", linewidth=0.8)
        ax.set_title(f"{title} (AUC, 95% CI)", fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].set_yticks(range(len(labels)), labels, fontsize=8)
    axes[0].set_ylim(-0.7, len(labels) - 0.3)
    return png_bytes(fig)


def per_assignment_lifts(rows: Sequence[SystemRow]) -> bytes:
    """Selection lift of every ranked system on every assignment of the board (the random
    replicates averaged first), with its 95% interval (`board_rows.lift_uncertainty`); a hollow
    marker is an unresolved sign (the interval holds 0, or one replicate). Assignments are labelled seed/id."""
    fig = Figure(figsize=(9.0, 3.2))
    fig.subplots_adjust(left=0.11, right=0.98, bottom=0.3, top=0.88)  # the y label whole
    ax = fig.subplots()
    labels: list[str] = []
    for i, row in enumerate(rows):
        per = [p for p in row.get("per_assignment", []) if p.get("selection_lift") is not None]
        labels = labels or ["/".join(str(p["assignment"]).split("/")[-2:]) for p in per]
        for resolved in (True, False):
            idx = [
                j
                for j, p in enumerate(per)
                if (p.get("selection_lift_sign") in ("+", "-")) == resolved
            ]
            if not idx:
                continue
            ax.errorbar(
                idx,
                [v for j in idx if (v := per[j].get("selection_lift")) is not None],
                yerr=[per[j].get("selection_lift_half_width") or 0.0 for j in idx],
                fmt="o",
                markersize=4,
                color=f"C{i}",
                mfc=f"C{i}" if resolved else "none",
                elinewidth=0.6,
                label=str(row["system"]) + ("" if resolved else " (unresolved)"),
            )
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(labels)), labels, rotation=60, fontsize=7)
    ax.set_ylabel("selection lift (AUC)")
    ax.set_title("selection lift per assignment (95% t interval; hollow: unresolved)", fontsize=9)
    ax.grid(alpha=0.3)
    if rows:
        ax.legend(fontsize=7)
    return png_bytes(fig)


def trajectory(steps: Sequence[TrajectoryStep], title: str) -> bytes:
    """Panel score after each checkpoint, and the budgets left, against the event index."""
    fig = Figure(figsize=(8.0, 3.6))
    fig.subplots_adjust(left=0.1, right=0.98, bottom=0.13, top=0.9, hspace=0.1)
    top, bottom = fig.subplots(2, 1, sharex=True)
    points = [(s["seq"], s["panel_score"]) for s in steps if "panel_score" in s]
    if points:
        top.plot([p[0] for p in points], [p[1] for p in points], "o-", color="tab:blue")
    top.set_ylabel("panel score")
    top.grid(alpha=0.3)
    names = sorted({k for s in steps for k in s.get("budgets_left", {})})
    for name in names:
        bottom.step(
            [s["seq"] for s in steps],
            [s["budgets_left"].get(name, 0) for s in steps],
            where="post",
            label=name,
        )
    bottom.set_ylabel("budget left")
    bottom.set_xlabel("event")
    bottom.legend(fontsize=7, ncols=max(1, len(names)))
    bottom.grid(alpha=0.3)
    fig.suptitle(title, fontsize=9)
    return png_bytes(fig)
