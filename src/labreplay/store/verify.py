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
- its `suite` and `spec_id` must be its spec's;
- those columns, its `model` and the sandbox its provenance claims must equal the run's
  `header` event (`labreplay.runtime.header`): the run id is a public function, so a forger
  can recompute it after editing a row, but not the chain without re-hashing it (which the
  finished record catches, and against a forger who rewrites every table, only a signature).
  A run stored before headers is listed as unverifiable;
- every figure a board reads must be what the events, the spec and the call log give
  (`labreplay.store.figures`): each score row (none deleted, none added), each score detail
  (curves), the status, the summary counts and the call accounting
  (`labreplay.runtime.summary`); and the control runs a board needs beside a run must exist.
  What no suite can re-derive is listed as unverifiable; a run whose spec names a file the
  store lacks (a conditions question file) fails, unless `allow_unverifiable`;
- each `superseded` row must be consistent with the store (`figures.superseded_findings`).
Each problem names the run, the table and the field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from labreplay.compile.spec import EnvironmentSpec, spec_from_stored
from labreplay.errors import LabreplayError, SpecError, StoreError
from labreplay.runtime.header import find_header, header_problems, row_isolation
from labreplay.runtime.trajectory import Trajectory
from labreplay.store.figures import (
    Findings,
    Rederive,
    Rescore,
    control_findings,
    score_findings,
    status_findings,
    summary_findings,
    superseded_findings,
)
from labreplay.store.sqlite import RunInfo, Store, run_isolation, run_key

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from labreplay.runtime.event_types import JsonValue


@dataclass(frozen=True)
class VerifyReport:
    runs: int
    events: int
    problems: list[str]
    # runs removed by `labreplay store remove` (what each was and why), said, not a problem
    superseded: list[dict[str, Any]] = field(default_factory=list)
    # figures nothing in the store re-derives (a search's scores, a status resting on a
    # recorded harness stop): not problems, but boards must not rank on them as verified
    unverifiable: list[str] = field(default_factory=list)
    # run id -> its unverifiable notes (what a board marks)
    unverifiable_runs: dict[str, list[str]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems


def _chain_problems(run: RunInfo, events: Sequence[Mapping[str, object]]) -> list[str]:
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


def _row_problems(run: RunInfo, spec: EnvironmentSpec) -> list[str]:
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
    for column, want in (("suite", spec.suite), ("spec_id", spec.spec_id)):
        if getattr(run, column) != want:
            problems.append(
                f"table runs, field {column}: {getattr(run, column)!r}, but the run's spec "
                f"{run.spec_hash[:16]}... says {want!r}"
            )
    recorded_spec = run.provenance.get("spec_hash")
    if recorded_spec is not None and recorded_spec != run.spec_hash:
        problems.append(
            f"table runs, field spec_hash: {run.spec_hash[:16]}... but the run was opened "
            f"under {str(recorded_spec)[:16]}..."
        )
    return problems


def _header_findings(
    run: RunInfo, spec: EnvironmentSpec, events: Sequence[Mapping[str, object]]
) -> Findings:
    """The runs row against the header event of its chain."""
    found = find_header(events)
    if found is None:
        if not events:
            return Findings()
        return Findings(
            unverifiable=[
                "no header event (a run stored before headers): its agent, parameters, "
                "isolation, seed and branch rest on the runs row alone"
            ]
        )
    header = found[1]
    row: dict[str, JsonValue] = {
        "agent": run.agent,
        "agent_params": run.agent_params,
        "isolation": row_isolation(run.agent_params, run.provenance),
        "seed": run.seed,
        "branch": run.branch,
        "spec_hash": run.spec_hash,
        "model": run.model,
        "sandbox": run.provenance.get("agent_sandbox"),
    }
    out = Findings(header_problems(header, row, spec.protocol))
    if "model" not in header and run.model is not None:
        out.unverifiable.append(
            f"model {run.model!r}: a header written before headers named the model, so it "
            "rests on the runs row alone"
        )
    return out


def verify_store(store: Store, *, allow_unverifiable: bool = False) -> VerifyReport:
    """Every run of `store` checked (module docstring). A run whose figures cannot be checked
    because the store lacks a file its spec names (a conditions question file) is a problem,
    unless `allow_unverifiable`: then it is listed as unverifiable."""
    problems: list[str] = []
    unverifiable: dict[str, list[str]] = {}
    n_events = 0
    from labreplay.suite import Rederives, Rescores, load_suites

    suites = load_suites()  # the suites that can recompute stored scores, details and status
    rescorers = {s.name: s.rescore for s in suites if isinstance(s, Rescores)}
    rederivers = {s.name: s.rederive for s in suites if isinstance(s, Rederives)}
    superseded = store.superseded()
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
        found = Findings(_row_problems(run, spec) + _chain_problems(run, events))
        found.extend(_header_findings(run, spec, events))
        found.extend(_figures(store, run, runs, spec, events, rescorers, rederivers, superseded))
        if allow_unverifiable:
            found.unverifiable += found.missing
        else:
            found.problems += [f"{m} (--allow-unverifiable accepts it)" for m in found.missing]
        problems.extend(f"{where}: {p}" for p in found.problems)
        if found.unverifiable:
            unverifiable[run.run_id] = found.unverifiable
    problems += superseded_findings(superseded, runs, store.spec_names())
    notes = [f"run {r}: {n}" for r, found in unverifiable.items() for n in found]
    return VerifyReport(len(runs), n_events, problems, superseded, notes, unverifiable)


def _figures(
    store: Store,
    run: RunInfo,
    runs: Sequence[RunInfo],
    spec: EnvironmentSpec,
    events: Sequence[Mapping[str, object]],
    rescorers: Mapping[str, Rescore],
    rederivers: Mapping[str, Rederive],
    superseded: Sequence[Mapping[str, object]],
) -> Findings:
    out = Findings()
    rederive = rederivers.get(run.suite)
    derived = None
    if rederive is not None and run.status != "running":
        try:
            derived = rederive(spec, events, run, store)
        except (LabreplayError, ValueError, KeyError, TypeError) as exc:
            return Findings([f"cannot be re-derived from the events ({exc})"])
    out.extend(status_findings(run, derived))
    if run.status != "running":
        out.extend(summary_findings(store, run, derived))
    out.extend(score_findings(store, run, spec, events, rescorers.get(run.suite), derived))
    out.extend(control_findings(run, runs, derived, superseded))
    return out


class UnverifiedStoreError(StoreError):
    """A board asked to rank only what verifies was given a store that does not (exit 1, as
    `store verify`)."""

    exit_code = 1


def require_verified(
    store: Store,
    public_key: Ed25519PublicKey | None = None,
    *,
    allow_unverifiable: bool = False,
) -> VerifyReport:
    """`store verify` (and, with a public key, every signature) before a board ranks: any
    problem refuses the whole board in one line; the unverifiable notes come back for the
    board to mark."""
    report = verify_store(store, allow_unverifiable=allow_unverifiable)
    if public_key is not None:
        from labreplay.store.signing import verify_signatures

        report.problems.extend(verify_signatures(store, public_key))
    if report.problems:
        raise UnverifiedStoreError(
            f"store {store.path}: store verify finds {len(report.problems)} problem(s), so "
            f"nothing is ranked; first: {report.problems[0]}"
        )
    return report


__all__ = ["UnverifiedStoreError", "VerifyReport", "require_verified", "verify_store"]
