"""Campaign work units: one assignment's three branches, computed without a store.

One `Unit` per assignment for the shared driver (`labreplay.execute.driver.run_units`): it
skips units whose runs are already complete in the store, sends the rest to the executor and
writes each returned branch with `persist_branch`.
The stored rows are the same as those of `run_assignment(spec, ..., store)` in-process: same run
ids, events, trajectory hashes and scores.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from labreplay.errors import SpecError
from labreplay.sdk import sha256_json
from labreplay.sdk.agents import Agent, ResponseCache, bind_response_cache, isolation_of, model_of
from labreplay.sdk.engine import (
    EnvironmentSpec,
    Executor,
    Store,
    Unit,
    run_key,
    run_units,
    spec_from_text,
)
from labreplay.suites.campaign.agents import ORACLE_NAME, OracleAgent
from labreplay.suites.campaign.runner import (
    BRANCHES,
    AgentFactory,
    AssignmentSummary,
    BranchResult,
    random_replicate,
)


def compute_assignment(
    spec_text: str,
    agent_source: str | AgentFactory,
    agent_options: Mapping[str, Any],
    seed: int,
    controls: tuple[str, ...],
    cache: ResponseCache | None = None,
) -> dict[str, BranchResult]:
    """The work unit. Runs anywhere the package is installed: the spec travels as its hashed
    file text (verified on arrival) and the agent is rebuilt from its name (a reference or
    registered name, `MODULE:ATTR`, `openai:MODEL`) and options, or comes as a factory (which
    Dask pickles). LLM agents answer completed calls from `cache` (the driver's snapshot of
    the store's cache)."""
    from labreplay.suites.campaign.api import agent_factory
    from labreplay.suites.campaign.runner import run_assignment_branches

    spec = spec_from_text(spec_text, origin="work unit")
    make = (
        agent_factory(agent_source, **agent_options)
        if isinstance(agent_source, str)
        else agent_source
    )

    def make_cached() -> Agent:
        agent = make()
        if cache is not None:
            bind_response_cache(agent, cache)
        return agent

    return run_assignment_branches(spec, make_cached, None, seed, controls)


def unit_key(
    spec: EnvironmentSpec,
    agent_name: str,
    agent_params: Mapping[str, object],
    seed: int,
    controls: Sequence[str],
) -> str:
    adaptive = run_key(spec.spec_hash, agent_name, agent_params, seed, "adaptive")
    return sha256_json(
        {"unit": "campaign-assignment", "adaptive_run": adaptive, "controls": sorted(controls)}
    )[:24]


def _complete(store: Store, run_ids: Sequence[str]) -> bool:
    found = {r.run_id: r.status for r in store.runs(suite="campaign")}
    return all(found.get(r) == "complete" for r in run_ids)


def run_assignments(
    specs: Sequence[EnvironmentSpec],
    agent: object,
    store: Store,
    seed: int = 0,
    controls: tuple[str, ...] = ("random", "no-evidence"),
    executor: Executor | None = None,
    agent_options: Mapping[str, Any] | None = None,
    progress: Callable[[], None] | None = None,
) -> list[AssignmentSummary]:
    """Run `agent` (anything `resolve_campaign_agent` takes, or its result) with its matched
    controls on every spec through the driver; returns the per-assignment summaries of
    `run_assignment`, in spec order. Resumable: finished assignments are read back from the
    store, not recomputed; in-process, each branch's events are written as they happen."""
    from labreplay.sdk.agents import ResolvedAgent
    from labreplay.suites.campaign.api import resolve_campaign_agent

    options = dict(agent_options or {})
    unknown = [c for c in controls if c not in BRANCHES[1:] and random_replicate(c) is None]
    if unknown:
        raise SpecError(f"unknown control {unknown[0]!r} (known: {', '.join(BRANCHES[1:])})")
    controls = tuple(c for c in (*BRANCHES[1:], *sorted(controls)) if c in controls)
    controls = tuple(dict.fromkeys(controls))  # known order first, replicates after, no repeats
    resolved = (
        agent
        if isinstance(agent, ResolvedAgent)
        else resolve_campaign_agent(
            agent, agent_timeout_s=options.pop("agent_timeout_s", None), **options
        )
    )
    make = resolved.make
    # name, params, model and endpoint as the runs will record them
    name, params = resolved.name, resolved.params
    model, endpoint = model_of(resolved.probe) if resolved.probe is not None else (None, None)
    # What a worker rebuilds the agent from: its name or reference, else the factory itself.
    source: str | AgentFactory = resolved.builtin or resolved.ref or make
    if resolved.ref is not None and resolved.probe is None:
        source = make  # an isolated agent: each worker starts its own child
    # How the agent runs is part of each run's id (an isolated run never reuses an in-process
    # one): a probe reports it; an isolated agent has no probe in this process.
    isolation = (
        isolation_of(resolved.probe)
        if resolved.probe is not None
        else ("subprocess" if resolved.ref is not None else "in-process")
    )
    oracle = resolved.builtin == ORACLE_NAME
    if oracle:
        controls = ()  # the ceiling: adaptive branch only, never ranked
    units: dict[str, Unit] = {}
    for spec in specs:
        if oracle:
            make = partial(OracleAgent, spec.body["evaluator"])
            source = make
        key = unit_key(spec, name, params, seed, controls)
        if key in units:
            continue  # the same spec twice: one unit
        units[key] = Unit(
            key,
            partial(compute_assignment, spec.to_file_text(), source, options, seed, controls),
            partial(_persist, spec, controls, name, params, seed, model, endpoint, isolation),
            partial(_stored, spec, make, controls, name, params, seed, isolation),
            uses_llm=model is not None,
            in_place=partial(_in_place, spec, make, controls, seed),
        )
    return run_units("campaign", list(units.values()), store, executor, progress)


def _in_place(
    spec: EnvironmentSpec,
    make: AgentFactory,
    controls: tuple[str, ...],
    seed: int,
    store: Store,
) -> AssignmentSummary:
    """The in-process unit: the three branches written to the store as they run."""
    from labreplay.suites.campaign.runner import assignment_summary, run_assignment_branches

    return assignment_summary(spec, run_assignment_branches(spec, make, store, seed, controls))


def _stored(
    spec: EnvironmentSpec,
    make: AgentFactory,
    controls: tuple[str, ...],
    name: str,
    params: Mapping[str, object],
    seed: int,
    isolation: str,
    store: Store,
) -> AssignmentSummary | None:
    """A finished assignment read back from the store (no recomputation), else None."""
    from labreplay.suites.campaign.runner import assignment_summary, run_assignment_branches

    run_ids = [
        run_key(spec.spec_hash, name, params, seed, b, isolation) for b in ("adaptive", *controls)
    ]
    if not _complete(store, run_ids):
        return None
    # run_branch returns stored complete runs as they are
    return assignment_summary(spec, run_assignment_branches(spec, make, store, seed, controls))


def _persist(
    spec: EnvironmentSpec,
    controls: tuple[str, ...],
    name: str,
    params: Mapping[str, object],
    seed: int,
    model: str | None,
    endpoint: str | None,
    isolation: str,
    store: Store,
    computed: Mapping[str, BranchResult],
) -> AssignmentSummary:
    from labreplay.suites.campaign.runner import assignment_summary, persist_branch, requested

    adaptive_id = run_key(spec.spec_hash, name, params, seed, "adaptive", isolation)
    written: dict[str, BranchResult] = {}
    # An adaptive branch whose endpoint never answered comes back alone (no controls).
    for branch in [b for b in ("adaptive", *controls) if b in computed]:
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
            extra_provenance={
                "agent_isolation": isolation,
                **(requested(controls) if branch == "adaptive" else {}),
            },
        )
    return assignment_summary(spec, written)
