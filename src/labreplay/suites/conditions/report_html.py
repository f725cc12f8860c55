"""The conditions part of the HTML report, read only from the store: per dataset, each agent's
score beside the exact random floor (bars), and the difficulty profile of the questions it was
scored on (options per question, axes varied) against the paper's reference values."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from labreplay.sdk.engine import Store
from labreplay.sdk.report import esc, num, table
from labreplay.suites.conditions.report import (
    PAPER_MC_ALL_FLOOR,
    PAPER_MEDIAN_AXES,
    PAPER_MEDIAN_ROWS,
)

# (question type, agent metric, its random floor, label)
BARS = (
    ("mc_single", "score", "floor_score", "MC_single score"),
    ("mc_all", "score", "floor_score", "MC_all score"),
    ("fib_all", "strict", "floor_strict", "FIB strict"),
)


def _bar(value: float | None, colour: str) -> str:
    width = 0.0 if value is None else max(0.0, min(1.0, float(value))) * 100
    return (
        f'<div style="background:{colour};height:.7em;width:{width:.1f}%;'
        f'min-width:1px" title="{num(value)}"></div>'
    )


def dataset_bars(store: Store) -> str:
    """HTML: per dataset and question type, a bar per agent run and one for the random floor."""
    runs = [r for r in store.runs(suite="conditions") if r.status == "complete"]
    by_dataset: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
    for run in runs:
        summary = (store.score_details(run.run_id) or {}).get("summary") or {}
        for ds, per in sorted((summary.get("by_dataset") or {}).items()):
            by_dataset.setdefault(ds, []).append((f"{run.agent} ({run.spec_id})", per))
    if not by_dataset:
        return ""
    parts = [
        "<h3>Per dataset: agent score against the random floor</h3>",
        '<p class="note">Bars run from 0 to 1; grey is the exact floor of a uniform random '
        "answer on the same questions. Paper reference: median "
        f"{PAPER_MEDIAN_ROWS} observed rows and {PAPER_MEDIAN_AXES} varying axes per table, "
        f"MC_all floor {PAPER_MC_ALL_FLOOR[0]}-{PAPER_MC_ALL_FLOOR[1]}.</p>",
    ]
    rows = []
    for ds, entries in sorted(by_dataset.items()):
        for qtype, metric, floor, label in BARS:
            for system, per in entries:
                agg = per.get(qtype)
                if not agg or agg.get(metric) is None:
                    continue
                rows.append(
                    "<tr>"
                    f"<td>{esc(ds)}</td><td>{esc(label)}</td><td>{esc(system)}</td>"
                    f'<td class="num">{agg.get("n", 0)}</td>'
                    f'<td class="num">{num(agg.get("median_options"), "g")}</td>'
                    f'<td class="num">{num(agg.get("median_varying_keys"), "g")}</td>'
                    f'<td class="num">{num(agg.get(metric))}</td>'
                    f'<td class="num">{num(agg.get(floor))}</td>'
                    f'<td style="width:30%">{_bar(agg.get(metric), "#1f77b4")}'
                    f"{_bar(agg.get(floor), '#bbb')}</td></tr>"
                )
    header = table(
        "conditions-datasets",
        [
            "dataset",
            "metric",
            "agent (question file)",
            "questions",
            "options (median)",
            "axes (median)",
            "agent",
            "random floor",
            "bars",
        ],
        [],
    )
    parts.append(header.replace("<tbody></tbody>", f"<tbody>{''.join(rows)}</tbody>"))
    return "\n".join(parts)


def cost_panel(store: Store) -> str:
    """HTML: the model cost of every LLM conditions run (the run summary's `usage`), failed
    runs included and marked, as the campaign report's cost panel does for its systems."""
    rows = []
    for run in store.runs(suite="conditions"):
        usage = (run.summary or {}).get("usage") or {}
        if not usage.get("calls"):
            continue
        rows.append(
            [
                f"{run.agent} ({run.spec_id}, seed {run.seed})",
                run.status + ("" if run.status == "complete" else " (not ranked)"),
                f"{usage['calls']:,}",
                f"{usage.get('failed_calls', 0):,}",
                f"{usage.get('prompt_tokens', 0):,}",
                f"{usage.get('completion_tokens', 0):,}",
                f"{usage.get('cached_tokens', 0):,}",
                f"{float(usage.get('latency_s') or 0):.0f}",
                str(usage.get("retries", 0)),
                ", ".join(usage.get("resolved_models") or []) or "-",
            ]
        )
    if not rows:
        return ""
    headers = [
        "run",
        "status",
        "calls",
        "failed calls",
        "prompt tokens",
        "completion tokens",
        "provider-cached",
        "latency (s)",
        "retries",
        "resolved model",
    ]
    return (
        '<h3 id="conditions-costs">Model cost</h3><p class="note">'
        + esc("Per LLM run: calls and tokens from the provider's usage (else a declared estimate).")
        + "</p>"
        + table("conditions-costs-table", headers, rows, lambda j: 1 < j < 9)
    )
