"""The configsearch part of the HTML report beyond the generic section: the paper's claims,
tested on every exhaustive sweep the store holds (the same rows as `configsearch references`
writes as Markdown), as an HTML table with readable verdicts and 4-significant-digit values."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from labreplay.sdk.engine import Store
from labreplay.sdk.report import details, image, interval, num, png_bytes, system_labels, table
from labreplay.suites.configsearch.claims import ClaimRow, ClaimTableRow, claims_table
from labreplay.suites.configsearch.space import Config
from labreplay.suites.configsearch.targets import MIN_TEST_POINTS

SWEEP_BRANCH = "sweep/exhaustive"


def _sweep_maes(store: Store, run_id: str) -> dict[Config, float]:
    """The test MAE of every configuration an exhaustive sweep evaluated."""
    maes: dict[Config, float] = {}
    for event in store.events(run_id):
        payload = event["payload"]
        if event["kind"] != "evaluation" or not isinstance(payload, Mapping):
            continue
        config, mae = payload.get("config"), payload.get("mae")
        if isinstance(config, Mapping) and isinstance(mae, int | float):
            maes[Config(float(config["r"]), int(config["n"]), int(config["s"]))] = float(mae)
    return maes


def stored_claims(store: Store) -> list[ClaimTableRow]:
    """The claim rows of every complete exhaustive sweep in the store (claims.claims_table)."""
    rows: list[ClaimTableRow] = []
    for run in store.runs(suite="configsearch", status="complete"):
        if run.branch != SWEEP_BRANCH:
            continue
        params = run.agent_params or {}
        models = params.get("models") or ["?"]
        min_points = int(params.get("min_test_points") or MIN_TEST_POINTS)
        maes = _sweep_maes(store, run.run_id)
        rows.extend(claims_table(str(params.get("task")), str(models[0]), maes, min_points))
    return rows


def _value(row: ClaimRow) -> str:
    value = row.get("value")
    if not isinstance(value, int | float) or math.isnan(value):
        return "-"
    return num(value)


def _ci(row: ClaimRow) -> str:
    ci: Sequence[float] = row.get("ci95") or ()
    if len(ci) != 2 or any(not isinstance(v, int | float) or math.isnan(v) for v in ci):
        return "-"
    return interval(float(ci[0]), float(ci[1]))


def claims_html(store: Store) -> str:
    """HTML: the claims table (empty string when the store holds no exhaustive sweep)."""
    rows = stored_claims(store)
    if not rows:
        return ""
    body = table(
        "configsearch-claims",
        ["task", "model", "reading", "claim", "verdict", "statistic", "value", "95% CI", "test"],
        [
            [
                r["task"],
                r["model"],
                r["reading"],
                r["claim"],
                r["verdict"],
                r.get("statistic", "-"),
                _value(r),
                _ci(r),
                r.get("test", "-"),
            ]
            for r in rows
        ],
        lambda j: j == 6,
    )
    note = (
        '<p class="note">Each claim of the paper tested on the stored exhaustive sweeps, under '
        "the robust reading (configurations with at least C_min test points) and over the full "
        "space. Values are MAE differences; an interval that excludes 0 decides the verdict.</p>"
    )
    return '<h3 id="configsearch-claims-heading">The paper\'s claims</h3>' + details(
        f"Claims ({len(rows)} rows)", note + body, open_=True
    )


def _best_so_far(store: Store, run_id: str) -> list[float]:
    """The run's best objective after each step (its `step` events, in order)."""
    trace = []
    for event in store.events(run_id):
        payload = event["payload"]
        if event["kind"] == "step" and isinstance(payload, Mapping):
            value = payload.get("best_so_far")
            if isinstance(value, int | float):
                trace.append(float(value))
    return trace


def stored_traces(store: Store) -> dict[str, dict[str, list[list[float]]]]:
    """task -> system label -> the best-so-far trace of each of its complete search runs."""
    runs = [
        r for r in store.runs(suite="configsearch", status="complete") if r.branch != SWEEP_BRANCH
    ]
    labels = system_labels(runs)
    out: dict[str, dict[str, list[list[float]]]] = {}
    for run in runs:
        trace = _best_so_far(store, run.run_id)
        if trace:
            task = str((run.agent_params or {}).get("task", run.spec_id))
            out.setdefault(task, {}).setdefault(labels[run.run_id], []).append(trace)
    return out


def traces_png(task: str, by_system: Mapping[str, list[list[float]]]) -> bytes:
    """Median best-so-far objective against steps per system, band: 25th-75th percentile over
    its seeds (a step is counted while at least half the seeds reached it)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.0, 3.2), layout="constrained")
    ax = fig.subplots()
    for i, (system, traces) in enumerate(sorted(by_system.items())):
        length = sorted(len(t) for t in traces)[len(traces) // 2]
        rows = [t for t in traces if len(t) >= length]
        values = np.array([t[:length] for t in rows])
        steps = np.arange(1, length + 1)
        lo, mid, hi = np.percentile(values, [25, 50, 75], axis=0)
        ax.plot(steps, mid, color=f"C{i}", label=f"{system} ({len(rows)} seeds)")
        ax.fill_between(steps, lo, hi, color=f"C{i}", alpha=0.2, linewidth=0)
    ax.set_xlabel("step")
    ax.set_ylabel("best objective so far (MAE)")
    ax.set_title(f"{task}: median best-so-far, band 25-75% over seeds", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return png_bytes(fig)


def traces_html(store: Store) -> str:
    """HTML: one best-so-far figure per task (empty string when no search run is stored)."""
    parts = [
        image(traces_png(task, by_system), f"best so far {task}", f"configsearch-best-{task}")
        for task, by_system in sorted(stored_traces(store).items())
    ]
    if not parts:
        return ""
    return "<h3>Best so far: searches against each other</h3>" + "".join(parts)


__all__ = ["claims_html", "stored_claims", "stored_traces", "traces_html"]
