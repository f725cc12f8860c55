"""Running campaign assignments: the adaptive branch and its matched controls, played and
recorded by the core runner (`labreplay.sdk.engine.run_suite`: resume, failed runs, caps and
the store live there); this module names the episodes and reads the results back.

A run is keyed by (spec hash, agent, params, isolation, seed, branch). Running the same key
again resumes: the branch is replayed from the start (LLM agents answer completed calls from
the response cache), the replayed events are checked against the stored prefix, and only new
events are written. A branch that completed is read back, not played again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from labreplay.errors import SpecError
from labreplay.sdk.agents import Agent, ResolvedAgent, close_agent
from labreplay.sdk.engine import EnvironmentSpec, Executor, Store, play_detached, run_suite
from labreplay.suites.campaign.branches import (
    BRANCHES,
    AssignmentSummary,
    BranchResult,
    assignment_summary,
    random_replicate,
)
from labreplay.suites.campaign.episodes import MAX_INVALID_STREAK, CampaignEpisodes
from labreplay.suites.campaign.metrics import branch_metrics
from labreplay.suites.campaign.options import CONTROLS
from labreplay.suites.campaign.resolve import AgentFactory
from labreplay.suites.campaign.views import spec_body


def known_controls(controls: Sequence[str]) -> tuple[str, ...]:
    """The controls in their order (known ones first, replicates after, no repeats); an
    unknown one is refused naming the known ones."""
    unknown = [c for c in controls if c not in BRANCHES[1:] and random_replicate(c) is None]
    if unknown:
        raise SpecError(f"unknown control {unknown[0]!r} (known: {', '.join(BRANCHES[1:])})")
    ordered = tuple(c for c in (*BRANCHES[1:], *sorted(controls)) if c in controls)
    return tuple(dict.fromkeys(ordered))


@contextmanager
def _resolved(agent: object, options: dict[str, Any]) -> Iterator[ResolvedAgent]:
    """`agent` resolved for the runner (which builds a fresh agent per episode); the probe a
    resolution built to check the contract is released afterwards (an isolated agent's probe
    is a child process)."""
    from labreplay.suites.campaign.resolve import resolve_campaign_agent

    if isinstance(agent, ResolvedAgent):
        yield agent
        return
    timeout = options.pop("agent_timeout_s", None)
    resolved = resolve_campaign_agent(agent, agent_timeout_s=timeout, **options)
    try:
        yield resolved
    finally:
        close_agent(resolved.probe)


def run_campaign(
    specs: Sequence[EnvironmentSpec],
    agent: object,
    store: Store,
    *,
    seed: int = 0,
    executor: Executor | None = None,
    **options: object,
) -> list[AssignmentSummary]:
    """`labreplay.run("campaign", ...)` and `campaign run`: options are those of
    `CampaignRunOptions` and `LlmOptions`; one summary per assignment."""
    from labreplay.sdk import first_in_seeded_order
    from labreplay.suites.campaign.options import parse_run_options
    from labreplay.suites.campaign.resolve import resolve_campaign_agent

    run_options, llm = parse_run_options({k: v for k, v in options.items() if k != "seed"})
    label = agent.label if isinstance(agent, ResolvedAgent) else agent
    controls = run_options.control_branches(label)
    chosen = first_in_seeded_order(list(specs), run_options.limit, seed, "campaign")
    agent_kwargs = llm.builder_kwargs()
    if isinstance(agent, ResolvedAgent):
        return run_assignments(
            chosen, agent, store, seed, controls, executor, agent_kwargs, run_options.progress
        )
    resolved = resolve_campaign_agent(
        agent, run_options.isolate, run_options.agent_timeout_s, **agent_kwargs
    )
    try:
        return run_assignments(
            chosen, resolved, store, seed, controls, executor, agent_kwargs, run_options.progress
        )
    finally:  # the probe the resolution built to check the contract
        close_agent(resolved.probe)


def run_assignments(
    specs: Sequence[EnvironmentSpec],
    agent: object,
    store: Store,
    seed: int = 0,
    controls: Sequence[str] = CONTROLS,
    executor: Executor | None = None,
    agent_options: Mapping[str, Any] | None = None,
    progress: Callable[[], None] | None = None,
    max_invalid_streak: int = MAX_INVALID_STREAK,
) -> list[AssignmentSummary]:
    """Run `agent` (anything `resolve_campaign_agent` takes, or its result) with its matched
    controls on every spec; the per-assignment summaries, in spec order. Resumable: finished
    branches are read back from the store, not played again."""
    options = dict(agent_options or {})
    chosen = known_controls(controls)
    with _resolved(agent, options) as resolved:
        return _run_resolved(specs, resolved, store, seed, chosen, executor, options, progress,
                             max_invalid_streak)  # fmt: skip


def _run_resolved(
    specs: Sequence[EnvironmentSpec],
    resolved: ResolvedAgent,
    store: Store,
    seed: int,
    chosen: tuple[str, ...],
    executor: Executor | None,
    options: dict[str, Any],
    progress: Callable[[], None] | None,
    max_invalid_streak: int,
) -> list[AssignmentSummary]:
    from labreplay.suites.campaign.agents import ORACLE_NAME

    if resolved.builtin == ORACLE_NAME:
        chosen = ()  # the ceiling: adaptive branch only, never ranked
    unique = list({s.spec_hash: s for s in specs}.values())  # the same spec twice: once
    results = run_suite(
        CampaignEpisodes(max_invalid_streak),
        unique,
        resolved,
        store,
        seed=seed,
        options={"controls": chosen, "llm": options},
        executor=executor,
        spec_done=progress,
    )
    by_spec: dict[str, dict[str, BranchResult]] = {}
    specs_by_hash = {s.spec_hash: s for s in unique}
    for result in results:
        run = store.run(str(result["run_id"]))
        spec = specs_by_hash[run.spec_hash]
        by_spec.setdefault(spec.spec_hash, {})[run.branch] = stored_branch(store, spec, result)
    return [assignment_summary(s, by_spec[s.spec_hash]) for s in specs]


def stored_branch(
    store: Store, spec: EnvironmentSpec, result: Mapping[str, object]
) -> BranchResult:
    """A branch as the store holds it (read only)."""
    run_id = str(result["run_id"])
    events = store.events(run_id)
    return BranchResult(
        run_id,
        str(result["branch"]),
        events,
        branch_metrics(events, spec_body(spec.body)),
        events[-1]["hash"],
        store.llm_calls(run_id),
        str(result["status"]),
        _text(result.get("cause")),
        _text(result.get("cause_kind")),
    )


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def run_assignment_branches(
    spec: EnvironmentSpec,
    make_agent: object,
    store: Store | None,
    seed: int,
    controls: Sequence[str] = CONTROLS,
) -> dict[str, BranchResult]:
    """The branches of one assignment; with `store=None` they are played in memory and
    nothing is written."""
    if store is not None:
        run_assignments([spec], make_agent, store, seed, controls)
        found = {r.branch: r for r in store.runs(spec_hash=spec.spec_hash)}
        return {
            b: stored_branch(store, spec, {"run_id": found[b].run_id, "branch": b,
                                           "status": found[b].status,
                                           **(found[b].summary or {})})
            for b in ("adaptive", *known_controls(controls)) if b in found
        }  # fmt: skip
    with _resolved(make_agent, {}) as resolved:
        played = play_detached(
            CampaignEpisodes(),
            spec,
            resolved,
            seed=seed,
            options={"controls": known_controls(controls)},
        )
    return {
        p["branch"]: BranchResult(
            "",
            p["branch"],
            p["events"],
            branch_metrics(p["events"], spec_body(spec.body)),
            p["events"][-1]["hash"],
            p["calls"],
            p["status"],
            p["cause"],
            p["cause_kind"],
        )
        for p in played
    }


def run_assignment(
    spec: EnvironmentSpec,
    make_agent: object,
    store: Store | None,
    seed: int,
    controls: Sequence[str] = CONTROLS,
) -> AssignmentSummary:
    """Adaptive branch, then each requested control from the same pre-campaign forecast;
    with a store through the runner, without one only computed."""
    if store is not None:
        (summary,) = run_assignments([spec], make_agent, store, seed, controls)
        return summary
    return assignment_summary(spec, run_assignment_branches(spec, make_agent, None, seed, controls))


def run_branch(
    spec: EnvironmentSpec,
    agent: Agent,
    seed: int,
    branch: str = "adaptive",
    store: Store | None = None,
    max_invalid_streak: int = MAX_INVALID_STREAK,
) -> BranchResult:
    """One branch played by `agent` as given (a control's agent comes wrapped). With a store
    it is the adaptive branch of a run with no controls, through the runner."""
    if store is not None:
        if branch != "adaptive":
            raise SpecError(f"run_branch with a store plays the adaptive branch, not {branch!r}")
        run_assignments([spec], agent, store, seed, (), max_invalid_streak=max_invalid_streak)
        (run,) = [
            r for r in store.runs(spec_hash=spec.spec_hash, branch="adaptive")
            if r.agent == agent.name
        ]  # fmt: skip
        summary = {"run_id": run.run_id, "branch": branch, "status": run.status}
        return stored_branch(store, spec, {**(run.summary or {}), **summary})
    played = play_detached(
        CampaignEpisodes(max_invalid_streak),
        spec,
        ResolvedAgent(agent.name, lambda: agent, agent.name, agent.params(), probe=agent),
        seed=seed,
        options={"controls": (), "branch": branch},
    )
    (one,) = played
    return BranchResult(
        "",
        branch,
        one["events"],
        branch_metrics(one["events"], spec_body(spec.body)),
        one["events"][-1]["hash"],
        one["calls"],
        one["status"],
        one["cause"],
        one["cause_kind"],
    )


__all__ = [
    "CONTROLS",
    "AgentFactory",
    "known_controls",
    "run_assignment",
    "run_assignment_branches",
    "run_assignments",
    "run_branch",
    "run_campaign",
    "stored_branch",
]
