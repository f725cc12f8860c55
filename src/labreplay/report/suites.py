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

import hashlib
import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TypedDict

from labreplay.scoring.stats import BOOTSTRAP_SEED, paired_bootstrap_ci
from labreplay.store.sqlite import RunInfo, Store
from labreplay.suite import ReportSection

UNIT_KEYS = ("question_id", "unit_id", "config_id")
TRACE_KEYS = ("trace", "best_so_far", "curve")


# A suite's reading of one event payload as a point (three coordinates, objective), or None.
Point = tuple[float, float, float, float]
PointOf = Callable[[Mapping[str, object]], Point | None]


class RunRow(TypedDict):
    """One run in a generic section's list of runs."""

    run_id: str
    system: str
    spec_id: str
    branch: str
    seed: int
    status: str
    scores: dict[str, float | None]


class SystemMeans(TypedDict):
    """One system's line of the leaderboard: its runs, seeds and mean scores."""

    runs: int
    seeds: list[int]
    means: dict[str, float]


class PairDiff(TypedDict):
    """The paired bootstrap interval of two systems' per-unit score difference."""

    a: str
    b: str
    units: int
    diff: float
    lo: float
    hi: float
    separable: bool


class SuiteSectionData(TypedDict):
    """What `suite_section` reads from the store and `suite_html` draws."""

    suite: str
    runs: list[RunRow]
    metrics: list[str]
    means: dict[str, SystemMeans]
    pairwise: list[PairDiff]
    per_key: dict[str, dict[str, float]]  # system (kind) -> key -> mean accuracy
    traces: dict[str, list[float]]
    points: dict[str, list[Point]]
    axes: tuple[str, str, str]


# A parameter value longer than this is shown by a short hash of its canonical JSON.
LABEL_VALUE_CHARS = 24


def _param_text(value: object) -> str:
    """A parameter value as label text: scalars as themselves (floats to 4 significant digits),
    lists of scalars joined by commas, anything longer or nested as `#` + 8 hex of its hash."""
    if isinstance(value, float):
        text = format(value, ".4g")
    elif isinstance(value, str | int | bool) or value is None:
        text = str(value)
    elif isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
        text = ",".join(_param_text(v) for v in value)
    else:
        text = LABEL_VALUE_CHARS * "x" + "x"
    if len(text) > LABEL_VALUE_CHARS:
        canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
        text = "#" + hashlib.sha256(canonical.encode()).hexdigest()[:8]
    return text


def system_of(run: RunInfo, keys: Iterable[str] | None = None) -> str:
    """A readable system label: the agent name and `key=value` for the parameters in `keys`
    (default: all of them), never a JSON blob."""
    params = run.agent_params or {}
    chosen = sorted(params) if keys is None else [k for k in sorted(keys) if k in params]
    return " ".join([run.agent, *(f"{k}={_param_text(params[k])}" for k in chosen)])


def system_labels(runs: Iterable[RunInfo]) -> dict[str, str]:
    """run_id -> label: the agent name plus only the parameters that differ between runs of
    the same agent (so that two configurations of one agent stay apart, and one stays short)."""
    by_agent: dict[str, list[RunInfo]] = defaultdict(list)
    for run in runs:
        by_agent[run.agent].append(run)
    labels: dict[str, str] = {}
    for group in by_agent.values():
        keys = sorted({k for r in group for k in (r.agent_params or {})})
        varying = [
            k
            for k in keys
            if len(
                {
                    json.dumps((r.agent_params or {}).get(k), sort_keys=True, default=str)
                    for r in group
                }
            )
            > 1
        ]
        for run in group:
            labels[run.run_id] = system_of(run, varying)
    return labels


def _walk(value: object, path: str = "") -> Iterator[tuple[str, object]]:
    if isinstance(value, Mapping):
        for k in sorted(value):
            sub = f"{path}.{k}" if path else str(k)
            yield sub, value[k]
            yield from _walk(value[k], sub)


def _number(x: object) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None


def suite_section(
    store: Store,
    suite: str,
    point_of: PointOf | None = None,
    axes: tuple[str, str, str] = ("x", "y", "z"),
) -> SuiteSectionData:
    """The generic section's data. `point_of` (the suite's) reads an event payload as a point
    of the "evaluated points" figure, whose coordinates are named by `axes`."""
    runs = store.runs(suite=suite)
    rows: list[RunRow] = []
    units: dict[str, dict[str, float]] = defaultdict(dict)
    per_key_runs: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    traces: dict[str, list[float]] = {}
    points: dict[str, list[Point]] = defaultdict(list)
    labels = system_labels(runs)
    for run in runs:
        system = labels[run.run_id]
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
                kind = leaf.removeprefix("per_key_accuracy").strip("_") or "all"
                for key, v in numeric.items():  # summarised: mean over runs and score paths
                    per_key_runs[f"{system} ({kind})"][key].append(float(v))
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
        "per_key": {
            label: {k: sum(v) / len(v) for k, v in sorted(keys.items())}
            for label, keys in sorted(per_key_runs.items())
        },
        "traces": traces,
        "points": dict(points),
        "axes": axes,
    }


def _means(rows: list[RunRow]) -> dict[str, SystemMeans]:
    """Per system: runs, seeds and the mean of each scalar score over its runs."""
    grouped: dict[str, list[RunRow]] = defaultdict(list)
    for row in rows:
        grouped[row["system"]].append(row)
    out: dict[str, SystemMeans] = {}
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


def _pairwise(units: Mapping[str, Mapping[str, float]]) -> list[PairDiff]:
    """Paired bootstrap 95% interval of the mean per-unit score difference, shared units only."""
    systems = sorted(units)
    out: list[PairDiff] = []
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
    labels: Mapping[str, str] | None = None,
) -> ReportSection | None:
    """The generic report section of `suite` (None if the store holds none of its runs);
    `point_of` and `axes` as in `suite_section`; `labels` (the suite's declared table of
    metric key -> column header, with units) names the leaderboard's columns."""
    from labreplay.report.html import suite_html

    if not store.runs(suite=suite):
        return None
    section = suite_section(store, suite, point_of, axes)
    return ReportSection(suite, suite_html(section, labels))
