"""The conditions part of the HTML report, read only from the store: per dataset, each agent's
score with its bootstrap interval beside the exact random floor (bars), the difficulty profile
of the questions it was scored on (options per question, axes varied) against the paper's
reference values, and the precedent lift of every run with its interval."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from labreplay.sdk.engine import RunInfo, Store
from labreplay.sdk.report import details, esc, interval, num, signed, system_labels, table
from labreplay.sdk.scoring import BOOTSTRAP_SEED, paired_bootstrap_ci
from labreplay.suites.conditions.report import (
    PAPER_MC_ALL_FLOOR,
    PAPER_MEDIAN_AXES,
    PAPER_MEDIAN_ROWS,
)
from labreplay.suites.conditions.summary import LiftInterval

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


# Question ids read `<dataset>_<table>_<index>_<type>[_<key>][_prec]`; `_prec` marks the twin
# shown with precedents, which the per-dataset scores (like the run summary's) leave out.
PRECEDENT_SUFFIX = "_prec"
QTYPE_MARKERS = (("mc_single", "_mc_single"), ("mc_all", "_mc_all"), ("fib_all", "_fib_all"))
# Rows of the per-dataset table shown open; a longer table starts collapsed.
OPEN_ROWS = 30


def _question_scores(
    store: Store, run: RunInfo, datasets: list[str]
) -> dict[tuple[str, str], list[float]]:
    """(dataset, question type) -> the run's per-question metric (the BARS metric; an invalid
    answer scores 0), read from its answer events."""
    metric = {qtype: m for qtype, m, _, _ in BARS}
    longest_first = sorted(datasets, key=len, reverse=True)
    out: dict[tuple[str, str], list[float]] = {}
    for event in store.events(run.run_id):
        payload = event["payload"]
        if not isinstance(payload, Mapping):
            continue
        qid, result = str(payload.get("question_id", "")), payload.get("result")
        if not isinstance(result, Mapping) or qid.endswith(PRECEDENT_SUFFIX):
            continue
        ds = next((d for d in longest_first if qid.startswith(d + "_")), None)
        qtype = next((t for t, marker in QTYPE_MARKERS if marker in qid[len(ds or "") :]), None)
        if ds is None or qtype is None:
            continue
        value = result.get(metric[qtype])
        number = float(value) if isinstance(value, int | float) else 0.0
        out.setdefault((ds, qtype), []).append(number)
    return out


def _score_interval(values: list[float] | None, purpose: str) -> str:
    if not values:
        return "-"
    _, lo, hi = paired_bootstrap_ci(values, BOOTSTRAP_SEED, purpose=purpose)
    return interval(lo, hi).replace("+", "")


def dataset_bars(store: Store) -> str:
    """HTML: per dataset and question type, a bar per agent run and one for the random floor,
    with the run's bootstrap 95% interval over the questions."""
    runs = [r for r in store.runs(suite="conditions") if r.status == "complete"]
    labels = system_labels(runs)
    by_dataset: dict[str, list[tuple[str, Mapping[str, Any], dict[tuple[str, str], list[float]]]]]
    by_dataset = {}
    for run in runs:
        summary = (store.score_details(run.run_id) or {}).get("summary") or {}
        per_dataset = summary.get("by_dataset") or {}
        scores = _question_scores(store, run, list(per_dataset))
        for ds, per in sorted(per_dataset.items()):
            label = f"{labels[run.run_id]} ({run.spec_id})"
            by_dataset.setdefault(ds, []).append((label, per, scores))
    if not by_dataset:
        return ""
    parts = [
        "<h3>Per dataset: agent score against the random floor</h3>",
        '<p class="note">Bars run from 0 to 1; grey is the exact floor of a uniform random '
        "answer on the same questions. Paper reference: median "
        f"{PAPER_MEDIAN_ROWS} observed rows and {PAPER_MEDIAN_AXES} varying axes per table, "
        f"MC_all floor {PAPER_MC_ALL_FLOOR[0]}-{PAPER_MC_ALL_FLOOR[1]}. Interval: percentile "
        f"bootstrap of the mean over the questions, seed {BOOTSTRAP_SEED}.</p>",
    ]
    rows = []
    for ds, entries in sorted(by_dataset.items()):
        for qtype, metric, floor, label in BARS:
            for system, per, scores in entries:
                agg = per.get(qtype)
                if not agg or agg.get(metric) is None:
                    continue
                rows.append(
                    "<tr>"
                    f"<td>{esc(ds)}</td><td>{esc(label)}</td><td>{esc(system)}</td>"
                    f'<td class="num">{agg.get("n", 0)}</td>'
                    f'<td class="num">{num(agg.get("median_options"), "g")}</td>'
                    f'<td class="num">{num(agg.get("median_varying_keys"), "g")}</td>'
                    f'<td class="num">{num(agg.get(metric), ".3f")}</td>'
                    f'<td class="num">{_score_interval(scores.get((ds, qtype)), system + ds + qtype)}</td>'
                    f'<td class="num">{num(agg.get(floor), ".3f")}</td>'
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
            "agent 95% CI",
            "random floor",
            "bars",
        ],
        [],
    )
    filled = header.replace("<tbody></tbody>", f"<tbody>{''.join(rows)}</tbody>")
    if not rows:
        return ""
    parts.append(details(f"Datasets ({len(rows)} rows)", filled, open_=len(rows) <= OPEN_ROWS))
    return "\n".join(parts)


# (summary key, label) of the precedent lifts shown: the run summary's paired bootstrap
LIFTS = (
    ("mc_single.score", "MC_single score"),
    ("mc_all.score", "MC_all score"),
    ("fib_all.strict", "FIB strict"),
)


def _lift_text(entry: LiftInterval | None) -> str:
    if not entry or entry.get("mean") is None or not entry.get("n"):
        return "-"
    ci = entry.get("ci95")
    lo, hi = (ci[0], ci[1]) if ci else (None, None)
    return f"{signed(entry['mean'])} ({interval(lo, hi)}), n {entry['n']}"


def precedent_lifts(store: Store) -> str:
    """HTML: every complete run's precedent lift (score with precedents minus without, paired
    by twin question) with its 95% interval. A baseline that excludes precedents, where the
    store holds one, is a row here too: the lift a system gets without using them."""
    runs = [r for r in store.runs(suite="conditions") if r.status == "complete"]
    labels = system_labels(runs)
    rows = []
    for run in runs:
        summary = (store.score_details(run.run_id) or {}).get("summary") or {}
        lift = summary.get("precedent_lift") or {}
        if not lift:
            continue
        rows.append(
            [
                f"{labels[run.run_id]} (seed {run.seed})",
                *(_lift_text(lift.get(k)) for k, _ in LIFTS),
            ]
        )
    if not rows:
        return ""
    note = (
        '<p class="note">Metric with precedents minus without, paired by twin question: mean '
        "(95% bootstrap interval), n twin pairs. A system that ignores precedents sits at 0; "
        "compare each lift with the baseline rows' lifts.</p>"
    )
    body = note + table(
        "conditions-precedent-lift", ["run", *(label for _, label in LIFTS)], rows, lambda j: j > 0
    )
    return '<h3 id="conditions-precedents">Precedent lift</h3>' + details(
        f"Precedent lift ({len(rows)} runs)", body, open_=len(rows) <= OPEN_ROWS
    )


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
