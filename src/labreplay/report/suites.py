"""Report data for the other suites (conditions, configsearch, any later one), read generically
from the store: runs, their scalar scores, per-unit results found in events, per-key accuracy
and search traces found in score details. No suite module is imported.

What is recognised, by shape rather than by suite:
- per-unit results: events whose payload has a unit id (`question_id`, `unit_id`, `config_id`)
  and a `result` mapping with a numeric `score` (None counts as 0: an invalid answer scores 0);
  systems are compared on the units they share with paired bootstrap intervals;
- per-key accuracy: any mapping named `per_key_accuracy*` inside a run's score details;
- search traces: numeric lists named `trace`, `best_so_far` or `curve` in score details.
A suite that evaluates points (configsearch's configurations) passes its own `point_of`, which
reads an event payload as (three coordinates, objective); they are drawn as a 3-D scatter.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from labreplay.scoring.stats import BOOTSTRAP_SEED, paired_bootstrap_ci
from labreplay.store.sqlite import RunInfo, Store
from labreplay.suite import ReportSection

UNIT_KEYS = ("question_id", "unit_id", "config_id")
OBJECTIVE_KEYS = ("mae", "objective", "value")
TRACE_KEYS = ("trace", "best_so_far", "curve")


# A suite's reading of one event payload as a point (three coordinates, objective), or None.
PointOf = Callable[[Mapping[str, Any]], tuple[float, float, float, float] | None]


def system_of(run: RunInfo) -> str:
    return (
        run.agent
        if not run.agent_params
        else f"{run.agent} {json.dumps(run.agent_params, sort_keys=True)}"
    )


def _walk(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, Mapping):
        for k in sorted(value):
            sub = f"{path}.{k}" if path else str(k)
            yield sub, value[k]
            yield from _walk(value[k], sub)


def _number(x: Any) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None


def suite_section(
    store: Store,
    suite: str,
    point_of: PointOf | None = None,
    axes: tuple[str, str, str] = ("x", "y", "z"),
) -> dict[str, Any]:
    """The generic section's data. `point_of` (the suite's) reads an event payload as a point
    of the "evaluated points" figure, whose coordinates are named by `axes`."""
    runs = store.runs(suite=suite)
    rows: list[dict[str, Any]] = []
    units: dict[str, dict[str, float]] = defaultdict(dict)
    per_key: dict[str, dict[str, float]] = {}
    traces: dict[str, list[float]] = {}
    points: dict[str, list[tuple[float, float, float, float]]] = defaultdict(list)
    for run in runs:
        system = system_of(run)
        scores = store.scores(run.run_id)
        rows.append(
            {
                "run_id": run.run_id,
                "system": system,
                "spec_id": run.spec_id,
                "branch": run.branch,
                "seed": run.seed,
                "status": run.status,
                "scores": {k: v for k, v in sorted(scores.items())},
            }
        )
        for path, value in _walk(store.score_details(run.run_id)):
            leaf = path.rsplit(".", 1)[-1]
            if leaf.startswith("per_key_accuracy") and isinstance(value, Mapping):
                numeric = {str(k): v for k, v in value.items() if _number(v) is not None}
                if numeric:
                    per_key[f"{system} | {run.spec_id} | {path}"] = numeric
            elif leaf in TRACE_KEYS and isinstance(value, list) and value:
                numbers = [_number(v) for v in value]
                if all(v is not None for v in numbers):
                    traces[f"{system} | {run.spec_id} | {leaf}"] = [float(v or 0) for v in numbers]
        for event in store.events(run.run_id):
            payload = event["payload"]
            if not isinstance(payload, Mapping):
                continue
            unit = next((payload[k] for k in UNIT_KEYS if k in payload), None)
            result = payload.get("result")
            if unit is not None and isinstance(result, Mapping) and "score" in result:
                value = _number(result["score"])
                units[system][f"{run.spec_hash}:{unit}"] = value if value is not None else 0.0
            point = point_of(payload) if point_of is not None else None
            if point is not None:
                points[system].append(point)
    return {
        "suite": suite,
        "runs": rows,
        "metrics": sorted({m for r in rows for m in r["scores"]}),
        "means": _means(rows),
        "pairwise": _pairwise(units),
        "per_key": per_key,
        "traces": traces,
        "points": dict(points),
        "axes": axes,
    }


def _means(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per system: runs, seeds and the mean of each scalar score over its runs."""
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        grouped[row["system"]].append(row)
    out: dict[str, dict[str, Any]] = {}
    for system, group in sorted(grouped.items()):
        metrics: dict[str, list[float]] = defaultdict(list)
        for row in group:
            for m, v in row["scores"].items():
                if v is not None:
                    metrics[m].append(float(v))
        out[system] = {
            "runs": len(group),
            "seeds": sorted({r["seed"] for r in group}),
            "means": {m: sum(v) / len(v) for m, v in sorted(metrics.items())},
        }
    return out


def _pairwise(units: Mapping[str, Mapping[str, float]]) -> list[dict[str, Any]]:
    """Paired bootstrap 95% interval of the mean per-unit score difference, shared units only."""
    systems = sorted(units)
    out = []
    for i, a in enumerate(systems):
        for b in systems[i + 1 :]:
            shared = sorted(set(units[a]) & set(units[b]))
            if not shared:
                continue
            diff = [units[a][u] - units[b][u] for u in shared]
            mean, lo, hi = paired_bootstrap_ci(diff, BOOTSTRAP_SEED, purpose=f"pair:{a}:{b}")
            out.append(
                {
                    "a": a,
                    "b": b,
                    "units": len(shared),
                    "diff": mean,
                    "lo": lo,
                    "hi": hi,
                    "separable": bool(lo > 0 or hi < 0),
                }
            )
    return out


def generic_section(
    store: Store,
    suite: str,
    point_of: PointOf | None = None,
    axes: tuple[str, str, str] = ("x", "y", "z"),
) -> ReportSection | None:
    """The generic report section of `suite` (None if the store holds none of its runs);
    `point_of` and `axes` as in `suite_section`."""
    from labreplay.report.html import suite_html

    if not store.runs(suite=suite):
        return None
    return ReportSection(suite, suite_html(suite_section(store, suite, point_of, axes)))
