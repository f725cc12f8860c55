"""The campaign suite's HTML report section: leaderboard, lifts, learning curves and the
belief-trajectory viewer (data from `report.campaign_section`, read only from the store)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from labreplay.sdk.report import (
    ci_text,
    details,
    esc,
    image,
    interval,
    num,
    seed_list,
    signed,
    slug,
    table,
)
from labreplay.suites.campaign import report_plots as plots
from labreplay.suites.campaign.board_text import TITLES, summary

if TYPE_CHECKING:
    from labreplay.suites.campaign.leaderboard import Board
    from labreplay.suites.campaign.report import BeliefTrajectory, CampaignSection, SystemRuns


def campaign_html(section: CampaignSection) -> str:
    board = section["board"]
    boot = board["bootstrap"]
    reps = section["replicates"]
    parts = [
        '<h2 id="campaign">Campaign suite (SDL-1)</h2>',
        f'<p class="note">The paper\'s board first ({len(board["assignments"])} assignments, '
        f"equal weight: {esc(', '.join(board['assignments']))}), then the short board if the "
        "store holds both; the notes, figures and pairwise tables below are the first's. "
        f"Intervals: paired bootstrap over assignments, {boot['resamples']} resamples, seed "
        f"{boot['seed']}, level {boot['level']}. Tie group: systems whose adaptive-AUC "
        "difference from the group's best is not separable at 95%.</p>",
    ]
    # the terminal board's opening lines, from the same rows, on top
    parts.insert(
        1,
        '<ul class="summary">'
        + "".join(f"<li>{esc(line)}</li>" for line in summary(board))
        + "</ul>",
    )
    paper = "long" if board["tables"]["long"]["assignments"] else "short"
    for kind in ("long", "short"):  # the paper's board (long) first
        shown = board["tables"][kind]
        if not shown["assignments"]:
            continue
        parts.append(f"<h3>Leaderboard: {esc(TITLES[kind])}</h3>")
        # the paper's board keeps the plain id; the other board is named by its kind
        table_id = "campaign-leaderboard" + ("" if kind == paper else f"-{kind}")
        parts.append(board_table(table_id, shown, reps))
    from labreplay.suites.campaign.costs import cost_panel_html

    parts.append(cost_panel_html(board))
    parts.extend(f'<p class="note">{esc(str(note))}</p>' for note in board.get("notes", []))
    if board["incomplete"]:
        parts.append(
            f'<p class="note">Not ranked (incomplete branches): {esc(", ".join(board["incomplete"]))}</p>'
        )
    if board.get("failed"):
        parts.append(
            '<p class="note" id="campaign-failed">Not ranked (runs failed: every model call '
            f"failed): {esc(', '.join(board['failed']))}</p>"
        )
    for r in board["rows"]:
        if r.get("failed_call_share"):
            parts.append(
                f'<p class="note">{esc(r["system"])}: {r["failed_call_share"]:.1%} of model calls '
                "failed</p>"
            )
    if board["rows"]:
        parts.append(image(plots.lift_intervals(board["rows"]), "lift intervals", "campaign-lifts"))
        parts.append(
            image(
                plots.per_assignment_lifts(board["rows"]),
                "selection lift per assignment",
                "campaign-lift-per-assignment",
            )
        )
    parts.append("<h3>Pairwise adaptive-AUC differences (a - b)</h3>")
    if not board["pairwise"]:  # no empty table: say why there is nothing to compare
        parts.append('<p class="note">Fewer than two ranked systems: nothing to compare.</p>')
    else:
        parts.append(
            table(
                "campaign-pairwise",
                ["a", "b", "AUC difference", "95% CI", "separable"],
                [
                    [
                        p["a"],
                        p["b"],
                        signed(p["auc_diff"]),
                        interval(p["lo"], p["hi"]),
                        "yes" if p["separable"] else "no (tie)",
                    ]
                    for p in board["pairwise"]
                ],
                lambda j: j == 2,
            )
        )
    parts.append("<h3>Leave-one-assignment-out ranks</h3>")
    assignments = board["assignments"]
    parts.append(
        table(
            "campaign-loao",
            ["system", *[f"without {a.rsplit('/', 1)[-1]}" for a in assignments], "rank range"],
            [
                [s, *ranks, f"{min(ranks)}-{max(ranks)}"]
                for s, ranks in sorted(board["loao_ranks"].items())
            ],
            lambda j: 0 < j <= len(assignments),
        )
    )
    parts.append('<h3 id="learning-curves">Learning curves</h3>')
    parts.append(
        '<p class="note">Held-out score s_t against experiments closed, mean over assignments of '
        "the same length; adaptive branch against the schedule-matched random and call-matched "
        "no-evidence controls.</p>"
    )
    for system, by_horizon in section["curves"].items():
        parts.append(
            image(
                plots.learning_curves(system, by_horizon),
                f"learning curves {system}",
                f"curve-{slug(system)}",
            )
        )
    if section["trajectory"]:
        parts.append(trajectory_html(section["trajectory"]))
    return "\n".join(parts)


def board_table(table_id: str, shown: Board, reps: Mapping[str, SystemRuns]) -> str:
    """One campaign board (long or short) as a table: ranked rows, then the reference rows."""
    rows: list[Sequence[object]] = []
    for r in shown["rows"]:
        rep = reps.get(r["system"])
        rows.append(
            [
                r["rank"],
                r.get("tie_group", "-"),
                r["system"],
                num(r["adaptive_auc"]),
                ci_text(r.get("skill_over_context")),
                signed(r["held_out_gain"]),
                ci_text(r["selection_lift"]),
                ci_text(r["evidence_lift"]),
                num(r["overclaim_rate"], ".2f"),
                num(r["invalid_actions"], ".0f"),
                seed_list(rep["seeds"] if rep else []),
                r["assignments"],
                " / ".join(
                    str(rep["complete"].get(b, 0) if rep else 0) for b in plots.BRANCH_STYLE
                ),
            ]
        )
    for ref in shown["references"]:
        rows.append(
            [
                "ref",
                "-",
                ref["system"],
                num(ref["adaptive_auc"]),
                ci_text(ref.get("skill_over_context")),
                signed(ref["held_out_gain"]),
                ci_text(ref.get("selection_lift")),
                ci_text(ref.get("evidence_lift")),
                *["-"] * 3,
                ref.get("covers", ref["assignments"]),
                "-",
            ]
        )
    headers = [
        "rank",
        "tie group",
        "system",
        "adaptive AUC",
        "skill over context [95% CI]",
        "held-out gain (nats)",
        "selection lift [95% CI]",
        "evidence lift [95% CI]",
        "over-claim",
        "invalid actions",
        "seeds",
        "assignments",
        "complete runs (adaptive / random / no-evidence)",
    ]
    return table(table_id, headers, rows, lambda j: j in (3, 5, 8, 9, 11))


def trajectory_html(traj: BeliefTrajectory) -> str:
    steps = traj["steps"]
    title = f"{traj['agent']} / {traj['assignment']} / {traj['branch']} / seed {traj['seed']}"
    parts = [
        '<h3 id="belief-trajectory">Belief-trajectory viewer</h3>',
        f'<p class="note">Run {esc(traj["run_id"])}: {esc(title)}; trajectory head '
        f"{esc(traj['head_hash'])}. Local loss: joint log loss of the forecast for the open "
        "experiment against its recorded outcome (change = against the previous forecast for "
        "that experiment; negative is better). Panel score: minus the mean joint loss over the "
        "held-out panel after each checkpoint.</p>",
        image(plots.trajectory(steps, title), "belief trajectory", "trajectory-plot"),
    ]
    budget_names = sorted({k for s in steps for k in s.get("budgets_left", {})})
    rows, classes = [], []
    for s in steps:
        rows.append(
            [
                s["seq"],
                s.get("action", s["kind"]),
                s.get("experiment") or "",
                s.get("evidence", ""),
                s.get("forecast", ""),
                num(s.get("local_loss")) if "local_loss" in s else "",
                signed(s.get("local_change")) if "local_change" in s else "",
                num(s.get("panel_score")) if "panel_score" in s else "",
                signed(s.get("panel_change")) if "panel_change" in s else "",
                *[s["budgets_left"].get(b, "") for b in budget_names],
                s.get("note", ""),
            ]
        )
        classes.append(
            "checkpoint"
            if s["kind"] == "checkpoint"
            else ("rejected" if s.get("accepted") is False else "")
        )
    headers = [
        "event",
        "action",
        "experiment",
        "evidence bought",
        "forecast",
        "local loss",
        "local change",
        "panel score",
        "panel change",
        *[f"{b} left" for b in budget_names],
        "note",
    ]
    steps_table = table(
        "belief-trajectory-table",
        headers,
        rows,
        lambda j: 5 <= j <= 8 + len(budget_names),
        classes,
    )
    parts.append(details(f"Every event of the run ({len(rows)})", steps_table))
    return "\n".join(parts)
