"""The figures boards read, re-derived for `store verify`: scores (every row: a deleted row,
an extra one and an edited detail are problems), status, summary counts, call accounting and
the matched control runs a board needs.

Each check gives problems (a stored figure the events and the spec contradict) and
unverifiable notes (a figure nothing in the store can re-derive: a search's scores, a status
that rests on a recorded harness stop, a detail its suite cannot recompute). Nothing is passed
as verified that was not recomputed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from labreplay._hashing import canonical_json
from labreplay.compile.spec import EnvironmentSpec
from labreplay.errors import LabreplayError
from labreplay.runtime.summary import CALL_FIELDS, call_accounting
from labreplay.store.sqlite import RunInfo, Store
from labreplay.suite import ContentMissing, Rederived

Rescore = Callable[
    [EnvironmentSpec, Sequence[Mapping[str, object]], RunInfo, Store], Mapping[str, float | None]
]
Rederive = Callable[[EnvironmentSpec, Sequence[Mapping[str, object]], RunInfo, Store], Rederived]
_TOLERANCE = 1e-9
STATUSES = ("running", "complete", "failed")


@dataclass
class Findings:
    problems: list[str] = field(default_factory=list)
    unverifiable: list[str] = field(default_factory=list)
    # what could not be checked because the store lacks a file the spec names (a question
    # file): a problem, unless the user allows unverifiable runs (`--allow-unverifiable`)
    missing: list[str] = field(default_factory=list)

    def extend(self, other: Findings) -> None:
        self.problems += other.problems
        self.unverifiable += other.unverifiable
        self.missing += other.missing


def _same(value: float | None, want: float | None) -> bool:
    if value is None or want is None:
        return value is None and want is None
    return math.isclose(float(value), float(want), rel_tol=_TOLERANCE, abs_tol=_TOLERANCE)


def _same_json(stored: object, fresh: object) -> bool:
    """Equal JSON values, numbers within the tolerance (a detail is stored at the canonical
    form's 12 digits; a recomputation may differ in the last one: summation order)."""
    if isinstance(stored, dict) and isinstance(fresh, dict):
        return stored.keys() == fresh.keys() and all(
            _same_json(stored[k], fresh[k]) for k in stored
        )
    if isinstance(stored, list) and isinstance(fresh, list):
        return len(stored) == len(fresh) and all(
            _same_json(a, b) for a, b in zip(stored, fresh, strict=True)
        )
    numbers = (int, float)
    if (
        isinstance(stored, numbers)
        and isinstance(fresh, numbers)
        and not isinstance(stored, bool)
        and not isinstance(fresh, bool)
    ):
        return math.isclose(stored, fresh, rel_tol=_TOLERANCE, abs_tol=1e-12)
    return bool(stored == fresh) and type(stored) is type(fresh)


def status_findings(run: RunInfo, derived: Rederived | None) -> Findings:
    out = Findings()
    if run.status not in STATUSES:
        out.problems.append(f"table runs, field status: {run.status!r} is not one of {STATUSES}")
        return out
    if run.status == "running":
        if run.summary is not None or run.finished is not None:
            out.problems.append(
                "table runs, field status: 'running' but the run has a finished record"
            )
        return out
    if derived is None:
        out.unverifiable.append(f"status {run.status!r}: its suite cannot re-derive a status")
    elif derived["status"] is None:
        cause = (run.summary or {}).get("cause")
        out.unverifiable.append(
            f"status {run.status!r} rests on the recorded cause {str(cause)[:80]!r} (a harness "
            "stop), which the events cannot confirm"
        )
    elif derived["status"] != run.status:
        out.problems.append(
            f"table runs, field status: {run.status!r}, but the events, calls and the "
            f"failed-run rule give {derived['status']!r}"
        )
    return out


def summary_findings(store: Store, run: RunInfo, derived: Rederived | None) -> Findings:
    """Summary counts re-derived by the suite, and the call accounting (the one schema of
    `labreplay.runtime.summary`, every suite alike) against the `llm_calls` rows."""
    out = Findings()
    summary = run.summary or {}
    for key, want in sorted((derived or {"summary": {}})["summary"].items()):
        if summary.get(key) != want:
            out.problems.append(
                f"table runs, field summary.{key}: {summary.get(key)!r}, the events give {want!r}"
            )
    calls = store.llm_calls(run.run_id)
    fresh = call_accounting(calls)
    present = [k for k in CALL_FIELDS if k in summary]
    # A field a run recorded must be what its calls give (a conditions run stored before the
    # one schema recorded only the share: what it recorded is checked).
    for key in present:
        if not _same(summary.get(key), fresh.get(key)):
            out.problems.append(
                f"table runs, field summary.{key}: {summary.get(key)!r}, but table "
                f"llm_calls gives {fresh.get(key)!r} (calls deleted, added or edited?)"
            )
    if calls and not present:
        message = f"{len(calls)} call(s) in table llm_calls but the run's summary accounts for none"
        if run.suite == "campaign":  # campaign has recorded them since its first version
            out.problems.append(f"table runs, field summary.llm_calls: {message}")
        else:
            out.unverifiable.append(
                f"call accounting: {message} (stored before every suite recorded it, or deleted)"
            )
    return out


def score_findings(
    store: Store,
    run: RunInfo,
    spec: EnvironmentSpec,
    events: Sequence[Mapping[str, object]],
    rescore: Rescore | None,
    derived: Rederived | None,
) -> Findings:
    """Every `scores` row of a complete run against what the events give."""
    out = Findings()
    stored = store.scores(run.run_id)
    details = store.score_details(run.run_id)
    if run.status != "complete":
        return out
    if rescore is None:
        if stored:
            out.unverifiable.append(f"scores: suite {run.suite!r} cannot recompute them")
        return out
    try:
        fresh = dict(rescore(spec, events, run, store))
    except ContentMissing as exc:
        return Findings(missing=[f"scores ({', '.join(sorted(stored))}) not checked: {exc}"])
    except (LabreplayError, ValueError, KeyError, TypeError) as exc:
        return Findings([f"table scores: cannot be recomputed from the events ({exc})"])
    if not fresh:
        if stored:
            out.unverifiable.append(
                f"scores ({', '.join(sorted(stored))}): nothing in the store recomputes them "
                "for this run"
            )
        return out
    fresh_details = derived["details"] if derived is not None else {}
    for metric in sorted(set(fresh) | set(stored) | set(fresh_details)):
        if metric in fresh:
            if metric not in stored:
                out.problems.append(
                    f"table scores, field {metric}: no row, but the events give "
                    f"{fresh[metric]!r} (deleted row?)"
                )
            elif not _same(stored[metric], fresh[metric]):
                out.problems.append(
                    f"table scores, field {metric}: stored {stored[metric]!r}, recomputed "
                    f"from the events {fresh[metric]!r}"
                )
        elif metric in fresh_details:
            if metric not in details:
                out.problems.append(
                    f"table scores, field {metric}: no detail row, but the events give one "
                    "(deleted row?)"
                )
        elif stored.get(metric) is not None:
            out.problems.append(
                f"table scores, field {metric}: {stored[metric]!r} is not a score this run's "
                "events give (added row)"
            )
        elif metric not in details:
            out.problems.append(f"table scores, field {metric}: an empty row (added row)")
    for metric in sorted(details):
        if metric in fresh_details:
            if not _same_json(details[metric], json.loads(canonical_json(fresh_details[metric]))):
                out.problems.append(
                    f"table scores, field {metric}.detail: differs from the one the events "
                    "give (edited detail)"
                )
        else:
            out.unverifiable.append(f"scores.detail {metric}: its suite cannot recompute it")
    return out


def control_findings(
    run: RunInfo,
    runs: Sequence[RunInfo],
    derived: Rederived | None,
    superseded: Sequence[Mapping[str, object]] = (),
) -> Findings:
    """The control runs a board needs beside `run` exist; a child's parent exists. A control
    removed by `store remove` is missing too until it is redone: a `superseded` row is an
    unsigned note anyone can insert, so it excuses nothing (it is only quoted)."""
    out = Findings()
    ids = {r.run_id for r in runs}
    if run.parent_run_id is not None and run.parent_run_id not in ids:
        out.problems.append(
            f"table runs, field parent_run_id: run {run.parent_run_id} is not in the store "
            "(deleted?)"
        )
    if derived is None or run.status != "complete":
        return out
    children = {r.branch for r in runs if r.parent_run_id == run.run_id}
    removed = {(s.get("spec_id"), s.get("agent"), s.get("branch")): s for s in superseded}
    for branch in derived["controls"]:
        if branch not in children:
            was = removed.get((run.spec_id, run.agent, branch))
            why = (
                f"removed by store remove ({str(was.get('reason'))[:80]}): rerun to redo it"
                if was is not None
                else "deleted, or never run: rerun with that control"
            )
            out.problems.append(
                f"table runs: no {branch!r} control run, which a board needs beside this run "
                f"({why})"
            )
    return out


_HEX = frozenset("0123456789abcdef")


def _is_hex(value: object, length: int) -> bool:
    return isinstance(value, str) and len(value) == length and set(value) <= _HEX


def superseded_findings(
    superseded: Sequence[Mapping[str, object]],
    runs: Sequence[RunInfo],
    specs: set[tuple[str, str]],
) -> list[str]:
    """Each `superseded` row (a run `store remove` removed) against the store: a status runs
    have, a run id and a chain head of the form `store remove` writes, a spec the store holds
    (specs are never removed), and, where the run was redone under the same id, the same
    suite, spec, branch and agent (the id is derived from them). A row can still be forged
    consistently (nothing keyless binds it); only a signature (`store sign`) covers the rows
    themselves."""
    problems = []
    by_id = {r.run_id: r for r in runs}
    for row in superseded:
        run_id = row.get("run_id")
        where = f"table superseded, run {str(run_id)[:24]}"
        if not _is_hex(run_id, 24):
            problems.append(f"{where}, field run_id: {run_id!r} is not a run id")
        if row.get("status") not in STATUSES:
            problems.append(
                f"{where}, field status: {row.get('status')!r} is not one of {STATUSES}"
            )
        if row.get("head_hash") is not None and not _is_hex(row.get("head_hash"), 64):
            problems.append(
                f"{where}, field head_hash: {row.get('head_hash')!r} is not a chain head"
            )
        if (row.get("suite"), row.get("spec_id")) not in specs:
            problems.append(
                f"{where}, field spec_id: no stored {row.get('suite')!r} spec "
                f"{row.get('spec_id')!r} (specs are never removed: a forged row?)"
            )
        redone = by_id.get(str(run_id))
        for column in ("suite", "spec_id", "branch", "agent") if redone is not None else ():
            if row.get(column) != getattr(redone, column):
                problems.append(
                    f"{where}, field {column}: {row.get(column)!r}, but the run redone under "
                    f"that id has {getattr(redone, column)!r} (a forged row?)"
                )
    return problems


__all__ = [
    "Findings",
    "Rederive",
    "Rescore",
    "control_findings",
    "score_findings",
    "status_findings",
    "summary_findings",
    "superseded_findings",
]
