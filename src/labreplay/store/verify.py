"""`labreplay store verify`: re-check every stored run against its spec, its chain and its rows.

For each run, reading only:
- its spec must be stored and match the hash the run is bound to;
- its events must form an unbroken chain (seq, links, hashes) under that spec hash;
- the chain must end where the run recorded it ended when it finished (event count and head
  hash): a chain whose last events were deleted, or whose last event was forged and re-hashed,
  still links up, but no longer matches that record;
- the `runs` columns that enter boards must be the ones the run was opened with: the run id is
  derived from spec hash, agent, agent parameters, seed, branch and isolation, so an edited
  `agent` (or any of those) no longer gives the row's id; `spec_hash` must equal the one in
  the run's provenance; a `complete` run must have its finished record;
- every stored score must equal the score recomputed from the events and the stored (sealed)
  evaluator, where the run's suite can recompute it (`Suite.rescore`).
Each problem names the run, the table and the field.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from labreplay.compile.spec import EnvironmentSpec, spec_from_stored
from labreplay.errors import LabreplayError, SpecError, StoreError
from labreplay.runtime.trajectory import Trajectory
from labreplay.store.sqlite import RunInfo, Store, run_isolation, run_key

Rescore = Callable[
    [EnvironmentSpec, Sequence[Mapping[str, Any]], RunInfo, Store], Mapping[str, Any]
]
_TOLERANCE = 1e-9


@dataclass(frozen=True)
class VerifyReport:
    runs: int
    events: int
    problems: list[str]
    # runs removed by `labreplay store remove` (what each was and why), said, not a problem
    superseded: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _rescorers() -> dict[str, Rescore]:
    """Suite name -> its `rescore`, for the suites that can recompute stored scores."""
    from labreplay.suite import Rescores, load_suites

    return {suite.name: suite.rescore for suite in load_suites() if isinstance(suite, Rescores)}


def _chain_problems(run: RunInfo, events: Sequence[Mapping[str, Any]]) -> list[str]:
    head = events[-1]["hash"] if events else None
    recorded = run.chain
    if recorded is None and run.summary is not None and "head_hash" in run.summary:
        recorded = {"head_hash": run.summary["head_hash"]}  # stores from before `chain`
    if recorded is None:
        if run.status == "complete":
            return ["table runs, field status: 'complete' but the run has no finished record"]
        return []
    problems = []
    if "events" in recorded and recorded["events"] != len(events):
        problems.append(
            f"table events: {len(events)} events, but the run finished with "
            f"{recorded['events']} (truncated or extended chain)"
        )
    if recorded.get("head_hash") != head:
        problems.append(
            f"table events: chain head {str(head)[:16]}... is not the head the run finished "
            f"with, {str(recorded.get('head_hash'))[:16]}... (forged or re-hashed events)"
        )
    return problems


def _row_problems(run: RunInfo) -> list[str]:
    problems = []
    expected = run_key(
        run.spec_hash,
        run.agent,
        run.agent_params,
        run.seed,
        run.branch,
        run_isolation(run.provenance),
    )
    if expected != run.run_id:
        problems.append(
            "table runs, fields agent/agent_params/seed/branch/spec_hash/isolation: they do "
            f"not give the run id (agent {run.agent!r}, branch {run.branch!r}; edited row?)"
        )
    recorded_spec = run.provenance.get("spec_hash")
    if recorded_spec is not None and recorded_spec != run.spec_hash:
        problems.append(
            f"table runs, field spec_hash: {run.spec_hash[:16]}... but the run was opened "
            f"under {str(recorded_spec)[:16]}..."
        )
    return problems


def _score_problems(
    store: Store,
    run: RunInfo,
    spec: EnvironmentSpec,
    events: Sequence[Mapping[str, Any]],
    rescore: Rescore | None,
) -> list[str]:
    stored = store.scores(run.run_id)
    if rescore is None or not stored or run.status != "complete":
        return []
    try:
        fresh = dict(rescore(spec, events, run, store))
    except (LabreplayError, ValueError, KeyError, TypeError) as exc:
        return [f"table scores: cannot be recomputed from the events ({exc})"]
    problems = []
    for metric, value in sorted(stored.items()):
        if metric not in fresh:
            continue
        want = fresh[metric]
        if value is None and want is None:
            continue
        same = (
            value is not None
            and want is not None
            and math.isclose(float(value), float(want), rel_tol=_TOLERANCE, abs_tol=_TOLERANCE)
        )
        if not same:
            problems.append(
                f"table scores, field {metric}: stored {value!r}, recomputed from the events "
                f"{want!r}"
            )
    return problems


def verify_store(store: Store) -> VerifyReport:
    problems: list[str] = []
    n_events = 0
    rescorers = _rescorers()
    runs = store.runs()
    for run in runs:
        where = f"run {run.run_id} ({run.suite}, {run.spec_id}, {run.branch})"
        try:
            spec = spec_from_stored(
                store.get_spec(run.spec_hash), run.spec_hash, f"store {store.path}"
            )
        except (SpecError, StoreError, ValueError, KeyError) as exc:
            problems.append(f"{where}: table specs, spec {run.spec_hash[:16]}...: {exc}")
            continue
        events = store.events(run.run_id)
        n_events += len(events)
        try:
            Trajectory.verify(events, run.spec_hash)
        except StoreError as exc:
            problems.append(f"{where}: table events: {exc}")
            continue
        found = _row_problems(run) + _chain_problems(run, events)
        found += _score_problems(store, run, spec, events, rescorers.get(run.suite))
        problems.extend(f"{where}: {p}" for p in found)
    return VerifyReport(len(runs), n_events, problems, store.superseded())


__all__ = ["VerifyReport", "verify_store"]
