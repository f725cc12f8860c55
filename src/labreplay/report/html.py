"""Assemble the static HTML report: one self-contained file, figures embedded as base64 PNG,
no scripts and no external resources (the page makes no network requests)."""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from labreplay.report import plots
from labreplay.scoring.stats import BOOTSTRAP_SEED

CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1200px;color:#222;padding:0 1em}
h1{font-size:1.5em} h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.85em}
th,td{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#f1f3f5} td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.rejected td{color:#a33} tr.checkpoint td{background:#eef6ff} .note{color:#555;font-size:.85em}
img{max-width:100%;border:1px solid #eee;margin:.4em 0}
"""


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def num(value: Any, fmt: str = ".3f") -> str:
    if value is None:
        return "-"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return esc(value)
    return format(value, fmt)


def ci_text(ci: Mapping[str, float] | None) -> str:
    return "-" if not ci else f"{ci['mean']:+.3f} [{ci['lo']:+.3f}, {ci['hi']:+.3f}]"


def table(
    table_id: str,
    headers: Sequence[str],
    rows: Iterable[Sequence[Any]],
    numeric: Callable[[int], bool] = lambda i: False,
    row_class: Sequence[str] | None = None,
) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = []
    for i, row in enumerate(rows):
        cls = f' class="{esc(row_class[i])}"' if row_class and row_class[i] else ""
        cells = "".join(
            f'<td class="num">{esc(c)}</td>' if numeric(j) else f"<td>{esc(c)}</td>"
            for j, c in enumerate(row)
        )
        body.append(f"<tr{cls}>{cells}</tr>")
    return (
        f'<table id="{esc(table_id)}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def image(png: bytes, alt: str, image_id: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<img id="{esc(image_id)}" alt="{esc(alt)}" src="data:image/png;base64,{data}">'


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")[:60]


def campaign_html(section: Mapping[str, Any]) -> str:
    board = section["board"]
    boot = board["bootstrap"]
    reps = section["replicates"]
    parts = [
        '<h2 id="campaign">Campaign suite (SDL-1)</h2>',
        f'<p class="note">{len(board["assignments"])} assignments, equal weight: '
        f"{esc(', '.join(board['assignments']))}. Intervals: paired bootstrap over assignments, "
        f"{boot['resamples']} resamples, seed {boot['seed']}, level {boot['level']}. Tie group: "
        "systems whose adaptive-AUC difference from the group's best is not separable at 95%."
        "</p>",
        "<h3>Leaderboard</h3>",
    ]
    rows = []
    for r in board["rows"]:
        rep = reps.get(r["system"], {})
        rows.append(
            [
                r["rank"],
                r.get("tie_group", "-"),
                r["system"],
                num(r["adaptive_auc"]),
                num(r["held_out_gain"], "+.3f"),
                ci_text(r["selection_lift"]),
                ci_text(r["evidence_lift"]),
                num(r["overclaim_rate"], ".2f"),
                num(r["invalid_actions"], ".0f"),
                ", ".join(str(s) for s in rep.get("seeds", [])),
                r["assignments"],
                " / ".join(str(rep.get("complete", {}).get(b, 0)) for b in plots.BRANCH_STYLE),
            ]
        )
    for ref in board.get("references", []):
        rows.append(["ref", "-", ref["system"], num(ref["adaptive_auc"]), "0 (flat)"] + ["-"] * 7)
    for c in board["ceiling"]:
        rows.append(
            ["ceiling", "-", f"{c['system']} (sees outcomes)", num(c["adaptive_auc"])]
            + [num(c["held_out_gain"], "+.3f")]
            + ["-"] * 7
        )
    headers = [
        "rank",
        "tie group",
        "system",
        "adaptive AUC",
        "held-out gain",
        "selection lift [95% CI]",
        "evidence lift [95% CI]",
        "over-claim",
        "invalid actions",
        "seeds",
        "assignments",
        "complete runs (adaptive / random / no-evidence)",
    ]
    parts.append(table("campaign-leaderboard", headers, rows, lambda j: j in (3, 4, 7, 8, 10)))
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
    parts.append("<h3>Pairwise adaptive-AUC differences (a - b)</h3>")
    if len(board["rows"]) < 2:
        parts.append('<p class="note">Fewer than two ranked systems: nothing to compare.</p>')
    parts.append(
        table(
            "campaign-pairwise",
            ["a", "b", "AUC difference", "95% CI", "separable"],
            [
                [
                    p["a"],
                    p["b"],
                    num(p["auc_diff"], "+.4f"),
                    f"[{p['lo']:+.4f}, {p['hi']:+.4f}]",
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
                f"curve-{_slug(system)}",
            )
        )
    if section["trajectory"]:
        parts.append(trajectory_html(section["trajectory"]))
    return "\n".join(parts)


def trajectory_html(traj: Mapping[str, Any]) -> str:
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
                num(s.get("local_change"), "+.3f") if "local_change" in s else "",
                num(s.get("panel_score")) if "panel_score" in s else "",
                num(s.get("panel_change"), "+.4f") if "panel_change" in s else "",
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
    parts.append(
        table(
            "belief-trajectory-table",
            headers,
            rows,
            lambda j: 5 <= j <= 8 + len(budget_names),
            classes,
        )
    )
    return "\n".join(parts)


def suite_html(section: Mapping[str, Any]) -> str:
    suite = section["suite"]
    slug = _slug(suite)
    parts = [f'<h2 id="{esc(slug)}">{esc(suite)} suite</h2>']
    metrics = section["metrics"]
    means = section["means"]
    parts.append("<h3>Leaderboard (mean over runs)</h3>")
    parts.append(
        table(
            f"{slug}-leaderboard",
            ["system", "runs", "seeds", *metrics],
            [
                [
                    s,
                    m["runs"],
                    ", ".join(map(str, m["seeds"])),
                    *[num(m["means"].get(k)) for k in metrics],
                ]
                for s, m in means.items()
            ],
            lambda j: j == 1 or j >= 3,
        )
    )
    if section["pairwise"]:
        parts.append(
            f'<p class="note">Paired bootstrap 95% intervals over shared units, seed '
            f"{BOOTSTRAP_SEED}, 10000 resamples.</p>"
        )
        parts.append(
            table(
                f"{slug}-pairwise",
                ["a", "b", "shared units", "mean score difference", "95% CI", "separable"],
                [
                    [
                        p["a"],
                        p["b"],
                        p["units"],
                        num(p["diff"], "+.4f"),
                        f"[{p['lo']:+.4f}, {p['hi']:+.4f}]",
                        "yes" if p["separable"] else "no (tie)",
                    ]
                    for p in section["pairwise"]
                ],
                lambda j: j in (2, 3),
            )
        )
    if section["per_key"]:
        keys = sorted({k for v in section["per_key"].values() for k in v})
        parts.append("<h3>Per-key accuracy</h3>")
        parts.append(
            table(
                f"{slug}-per-key",
                ["run / field", *keys],
                [
                    [label, *[num(v.get(k)) for k in keys]]
                    for label, v in sorted(section["per_key"].items())
                ],
                lambda j: j >= 1,
            )
        )
    if section["traces"]:
        parts.append("<h3>Traces</h3>")
        parts.append(
            image(plots.traces(section["traces"], f"{suite} traces"), "traces", f"{slug}-traces")
        )
    if section["points"]:
        parts.append("<h3>Evaluated configurations</h3>")
        parts.append(
            image(plots.scatter3d(section["points"]), "configurations", f"{slug}-scatter3d")
        )
    parts.append("<h3>Runs</h3>")
    parts.append(
        table(
            f"{slug}-runs",
            ["run", "system", "spec", "branch", "seed", "status", "scores"],
            [
                [
                    r["run_id"],
                    r["system"],
                    r["spec_id"],
                    r["branch"],
                    r["seed"],
                    r["status"],
                    json.dumps({k: v for k, v in r["scores"].items()}, sort_keys=True),
                ]
                for r in section["runs"]
            ],
        )
    )
    return "\n".join(parts)


def page(title: str, header: Mapping[str, Any], body: Sequence[str]) -> str:
    facts = "".join(f"<li>{esc(k)}: {esc(v)}</li>" for k, v in header.items())
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
        f'<h1>{esc(title)}</h1><ul class="note">{facts}</ul>\n'
        + "\n".join(body)
        + "\n</body></html>\n"
    )
