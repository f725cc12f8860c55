"""Campaign work units: one assignment's three branches, computed without a store.

The driver builds one unit per assignment, skips units whose runs are already complete in the
store, sends the rest to the executor and writes each returned branch with `persist_branch`.
The stored rows are the same as those of `run_assignment(spec, ..., store)` in-process: same run
ids, events, trajectory hashes and scores.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from labreplay._hashing import sha256_json
from labreplay.compile.spec import EnvironmentSpec, spec_from_text
from labreplay.execute.base import Executor, InProcessExecutor, WorkUnit
from labreplay.store.sqlite import Store, run_key
from labreplay.suites.campaign.runner import BranchResult

BRANCH_ORDER = ("adaptive", "random", "no-evidence")


def compute_assignment(
    spec_text: str,
    agent_name: str,
    agent_options: Mapping[str, Any],
    seed: int,
    controls: tuple[str, ...],
) -> dict[str, BranchResult]:
    """The work unit. Runs anywhere the package is installed: the spec travels as its hashed
    file text (verified on arrival) and the agent is rebuilt from its name and options."""
    from labreplay.suites.campaign.api import agent_factory
    from labreplay.suites.campaign.runner import run_assignment_branches

    spec = spec_from_text(spec_text, origin="work unit")
    return run_assignment_branches(
        spec, agent_factory(agent_name, **agent_options), None, seed, controls
    )


def unit_key(
    spec: EnvironmentSpec,
    agent_name: str,
    agent_params: Mapping[str, Any],
    seed: int,
    controls: Sequence[str],
) -> str:
    adaptive = run_key(spec.spec_hash, agent_name, agent_params, seed, "adaptive")
    return sha256_json(
        {"unit": "campaign-assignment", "adaptive_run": adaptive, "controls": sorted(controls)}
    )[:24]


def _complete(store: Store, run_ids: Sequence[str]) -> bool:
    found = {r.run_id: r.status for r in store.runs(where="suite='campaign'")}
    return all(found.get(r) == "complete" for r in run_ids)


def run_assignments(
    specs: Sequence[EnvironmentSpec],
    agent_name: str,
    store: Store,
    seed: int = 0,
    controls: tuple[str, ...] = ("random", "no-evidence"),
    executor: Executor | None = None,
    agent_options: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Run `agent_name` with its matched controls on every spec; returns the per-assignment
    summaries of `run_assignment`, in spec order. Resumable: finished assignments are read
    back from the store, not recomputed."""
    from labreplay.suites.campaign.api import agent_factory
    from labreplay.suites.campaign.runner import (
        assignment_summary,
        persist_branch,
        run_assignment_branches,
    )

    options = dict(agent_options or {})
    controls = tuple(c for c in BRANCH_ORDER[1:] if c in controls)
    make = agent_factory(agent_name, **options)
    probe = make()  # name, params, model and endpoint as the runs will record them
    name, params = probe.name, probe.params()
    model, endpoint = getattr(probe, "model", None), getattr(probe, "endpoint", None)
    summaries: dict[str, dict[str, Any]] = {}
    units: list[WorkUnit] = []
    spec_of_unit: dict[str, EnvironmentSpec] = {}
    for spec in specs:
        branches = ("adaptive", *controls)
        run_ids = [run_key(spec.spec_hash, name, params, seed, b) for b in branches]
        key = unit_key(spec, name, params, seed, controls)
        if key in spec_of_unit:
            continue  # the same spec twice: one unit
        spec_of_unit[key] = spec
        if _complete(store, run_ids):
            # Read back (no recomputation): run_branch returns stored complete runs as they are.
            summaries[key] = assignment_summary(
                spec, run_assignment_branches(spec, make, store, seed, controls)
            )
            continue
        units.append(
            WorkUnit(
                key, compute_assignment, (spec.to_file_text(), agent_name, options, seed, controls)
            )
        )
    runner = executor if executor is not None else InProcessExecutor()
    for key, computed in runner.run(units):
        spec = spec_of_unit[key]
        adaptive_id = run_key(spec.spec_hash, name, params, seed, "adaptive")
        written: dict[str, BranchResult] = {}
        for branch in ("adaptive", *controls):
            written[branch] = persist_branch(
                store,
                spec,
                computed[branch],
                name,
                params,
                seed,
                parent_run_id=None if branch == "adaptive" else adaptive_id,
                model=model,
                endpoint=endpoint,
            )
        summaries[key] = assignment_summary(spec, written)
    return [summaries[k] for k in spec_of_unit]
