"""Run campaign branches against the store: adaptive, then its matched controls.

A run is keyed by (spec hash, agent, params, seed, branch). Running the same key again resumes:
the branch is recomputed deterministically (LLM agents answer completed calls from the response
cache), the recomputed events are checked against the stored prefix, and only new events are
written. A branch that completed is read back, not rerun.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict

from labreplay.errors import LabreplayError, SpecError, StoreError
from labreplay.sdk import Recorder, RunHeader, find_header, header_payload, open_run
from labreplay.sdk.agents import (
    Agent,
    AgentNonJSON,
    AgentUnavailable,
    CapReached,
    bind_response_cache,
    call_failures,
    close_agent,
    drain_calls,
    isolation_of,
    json_problem,
    model_of,
    plain_repr,
    raised_message,
    sandbox_of,
    usage_summary,
)
from labreplay.sdk.engine import (
    AGENT_UNAVAILABLE,
    MODEL_CALLS_FAILED,
    EnvironmentSpec,
    RunHealth,
    Store,
    Verdict,
    cap_kind,
    decision_failed,
    judge,
)
from labreplay.sdk.scoring import acceleration_factor, first_passage, sustained_passage
from labreplay.suites.campaign.caps import TurnCounter, agent_caps, policy_turn_caps
from labreplay.suites.campaign.controls import (
    CallMatchedNoEvidence,
    ControlWrapper,
    ScheduleMatchedRandom,
    extract_schedule,
)
from labreplay.suites.campaign.env import CampaignEnv
from labreplay.suites.campaign.events import CategoryForecast, checkpoint_payloads
from labreplay.suites.campaign.json_values import json_list, json_number, json_object
from labreplay.suites.campaign.metrics import BranchMetrics, branch_metrics
from labreplay.suites.campaign.views import AssignmentRef, spec_body

AgentFactory = Callable[[], Agent]


class PreCampaignForecast(TypedDict, total=False):
    """The forecast a branch's first checkpoint takes instead of asking its agent: the
    adaptive branch's, `recorded` verbatim (controls), or none with the `error` that
    prevented asking (every entry then takes the declared fallback)."""

    forecasts: list[dict[str, object]]
    recorded: dict[str, CategoryForecast]
    error: str


class AssignmentMetrics(TypedDict):
    """An assignment's scores: per branch its run and counts, the adaptive branch's AUC and
    gain, and the lifts and acceleration where they are estimable (METRICS.md)."""

    branches: dict[str, dict[str, object]]
    adaptive_auc: float
    held_out_gain: float
    random_replicates: NotRequired[int]
    selection_lift: NotRequired[float]
    acceleration_first: NotRequired[float | None]
    acceleration_sustained: NotRequired[float | None]
    target_met_at_t0: NotRequired[bool]
    evidence_lift: NotRequired[float]


class AssignmentSummary(AssignmentMetrics):
    """What a run returns per assignment (`run_assignment`, `execute.run_assignments`)."""

    spec_id: str
    spec_hash: str
    assignment: AssignmentRef
    partition_seed: int
    status: str  # "complete" or "failed"
    failed_call_share: float | None
    cause: str | None
    cause_kind: str | None
    usage: dict[str, dict[str, object]]  # branch -> its model calls' accounting


# (t, the previous checkpoint's forecasts, a forecast given instead of asking) -> forecasts
Checkpoint = Callable[
    [int, Mapping[str, CategoryForecast] | None, PreCampaignForecast | None],
    dict[str, CategoryForecast],
]
BRANCHES = ("adaptive", "random", "no-evidence")


def random_branches(replicates: int) -> tuple[str, ...]:
    """Branch names of K schedule-matched random replicates: `random` (replicate 1, the branch
    older stores hold), then `random-2` ... `random-K`."""
    return ("random", *(f"random-{k}" for k in range(2, replicates + 1)))


def default_replicates(agent: str) -> int:
    """3 schedule-matched random replicates for Python agents; 1 for LLM agents (`openai:`),
    where each replicate is a full campaign of model calls."""
    from labreplay.sdk.agents import is_llm_agent

    return 1 if is_llm_agent(agent) else 3


def with_replicates(controls: Sequence[str], replicates: int) -> tuple[str, ...]:
    """The control list with `random` expanded into its K replicate branches."""
    out: list[str] = []
    for c in controls:
        out.extend(random_branches(replicates) if c == "random" else (c,))
    return tuple(out)


def random_replicate(branch: str) -> int | None:
    """1 for `random`, k for `random-k` (k >= 2), None for any other branch."""
    if branch == "random":
        return 1
    head, _, k = branch.partition("-")
    return int(k) if head == "random" and k.isdigit() and int(k) >= 2 else None


@dataclass
class BranchResult:
    run_id: str
    branch: str
    events: list[dict[str, Any]]
    metrics: BranchMetrics
    head_hash: str
    # Model-call records of the branch, so a result computed without a store (on a worker)
    # can still be persisted by the driver with its call log.
    calls: Sequence[Mapping[str, object]] = field(default_factory=list)
    # Why the branch failed although its calls did not (its agent stopped answering, a cap
    # ended it: "cap reached: --max-calls 50 (...)"), or None.
    failure: str | None = None
    # The caps the branch ran under (policy turns, model spending), recorded in its summary.
    caps: dict[str, Any] = field(default_factory=dict)
    # Policy calls and checkpoints asked and failed: what the failed-run rule reads.
    health: RunHealth = field(default_factory=RunHealth)


def _header(
    spec: EnvironmentSpec,
    branch: str,
    agent_name: str,
    agent_params: Mapping[str, object],
    seed: int,
    model: str | None,
    endpoint: str | None,
    parent_run_id: str | None,
    extra_provenance: Mapping[str, object] | None,
) -> RunHeader:
    """The branch's run row: its key and provenance."""
    return RunHeader(
        spec,
        branch,
        agent_name,
        agent_params,
        seed,
        model=model,
        endpoint=endpoint,
        parent_run_id=parent_run_id,
        extra_provenance={
            "dataset_hashes": spec.body["record"]["dataset_hashes"],
            "data_verified": spec.body["record"].get("data_verified", True),
            **(extra_provenance or {}),
        },
    )


def _stored_branch(store: Store, spec: EnvironmentSpec, run_id: str, branch: str) -> BranchResult:
    events = store.events(run_id)
    metrics = branch_metrics(events, spec_body(spec.body))
    calls = store.llm_calls(run_id)  # its accounting, for the run output
    return BranchResult(run_id, branch, events, metrics, events[-1]["hash"], calls)


def guarded_act(agent: Agent, observation: Mapping[str, object]) -> object:
    """The agent's action; an exception inside `act` or a non-JSON return becomes an invalid
    action naming it (recorded and scored, never a crash). Harness errors (LabreplayError:
    an agent that stopped answering, a cap) propagate."""
    try:
        action = agent.act(observation)
    except LabreplayError:
        raise
    except AgentNonJSON as exc:
        return {"type": "invalid", "raw": exc.raw, "error": exc.message}
    except Exception as exc:
        return {"type": "invalid", "raw": "", "error": raised_message("act", exc)}
    problem = json_problem("act", action)
    if problem is not None:
        return {"type": "invalid", "raw": plain_repr(action), "error": problem}
    return action


def guarded_forecast(agent: Agent, snapshot: Mapping[str, object]) -> object:
    """The agent's panel forecast; a failure becomes an empty one naming it (every entry then
    gets the declared fallback)."""
    try:
        response = agent.forecast(snapshot)
    except LabreplayError:
        raise
    except AgentNonJSON as exc:
        return {"forecasts": [], "error": exc.message}
    except Exception as exc:
        return {"forecasts": [], "error": raised_message("forecast", exc)}
    problem = json_problem("forecast", response)
    return response if problem is None else {"forecasts": [], "error": problem}


def run_branch(
    spec: EnvironmentSpec,
    agent: Agent,
    seed: int,
    branch: str,
    store: Store | None = None,
    initial_forecast: PreCampaignForecast | None = None,
    parent_run_id: str | None = None,
    max_invalid_streak: int = 8,
    extra_provenance: Mapping[str, object] | None = None,
) -> BranchResult:
    """One branch. With a store its events are written as they happen (a branch found
    complete is read back; resume rules: `labreplay.runtime.recorder.open_run`)."""
    recorder = Recorder(spec.spec_hash, None, "")
    if store is not None:
        header = _header(
            spec,
            branch,
            agent.name,
            agent.params(),
            seed,
            *model_of(agent),
            parent_run_id,
            # "subprocess" (--isolate: it held only observations) or "in-process"; the sandbox
            {
                **(extra_provenance or {}),
                "agent_isolation": isolation_of(agent),
                "agent_sandbox": sandbox_of(agent),
            },
        )
        recorder, status = open_run(store, header, batch=64)
        if status == "complete":
            return _stored_branch(store, spec, recorder.run_id, branch)
        # LLM agents answer completed calls from the store's response cache
        bind_response_cache(agent, store)
    env = CampaignEnv(spec)
    env.reset(seed)
    recorder.attach(env.trajectory)
    _append_header(recorder, env, agent, seed, branch)
    calls: list[Mapping[str, object]] = []
    failure: str | None = None
    health = RunHealth()
    caps = {**policy_turn_caps(spec_body(spec.body)), **agent_caps(agent)}
    turns = TurnCounter(caps)

    def checkpoint(
        t: int,
        previous: Mapping[str, CategoryForecast] | None,
        given: PreCampaignForecast | None = None,
    ) -> dict[str, CategoryForecast]:
        snapshot = env.checkpoint_snapshot()
        response = given if given is not None else guarded_forecast(agent, snapshot)
        recorded = given.get("recorded") if given is not None else None
        payload = env.submit_checkpoint(response, t, previous, snapshot["state_hash"], recorded)
        calls.extend(drain_calls(agent))
        if given is None:  # the pre-campaign forecast a control starts from is not asked
            health.checkpoint(isinstance(response, Mapping) and "error" in response)
        recorder.sync()
        return dict(payload["forecasts"])

    have_s0 = False  # the pre-campaign forecast is recorded (the curve's first point)
    try:
        _reset(agent, seed)
        last = checkpoint(0, None, initial_forecast)
        have_s0 = True
        streak = 0
        while not env.done:
            turns.turn(env.open_id)  # raises CapReached past a policy-turn cap
            action = guarded_act(agent, env.observation())
            step_calls = drain_calls(agent)
            calls.extend(step_calls)
            error = action.get("error") if isinstance(action, Mapping) else None
            if isinstance(action, Mapping) and action.get("type") != "invalid":
                error = None  # a well-formed action carrying an "error" field is an action
            health.policy(decision_failed(error, step_calls), error)
            result = env.step(action)
            for departure in agent.drain_departures() if isinstance(agent, ControlWrapper) else []:
                env.record_departure(departure)  # a matched control departed: declared, counted
            streak = 0 if result.accepted else streak + 1
            recorder.sync()
            if result.checkpoint_due:
                last = checkpoint(len(env.closed_order), last)
            if streak >= max_invalid_streak and not env.done:
                # The harness, not the agent, ends a campaign stuck on invalid actions.
                env.stop_by_harness(forced_stop=f"{streak} invalid actions in a row")
    except AgentUnavailable as exc:
        # The agent stopped answering (timeout, its process died): the run is failed, with
        # the cause, and a rerun starts it afresh.
        failure = str(exc)
        health.harness_stop = f"{AGENT_UNAVAILABLE}: {failure}"
        calls.extend(drain_calls(agent))
        if not have_s0:
            _fallback_s0(checkpoint, health, failure)
        env.stop_by_harness(agent_failed=failure)
    except CapReached as reached:
        # Spent calls are accounted; the run ends failed with the cap named (resumable).
        failure = str(reached)
        health.harness_stop = f"{cap_kind(reached.cap)}: {failure}"
        calls.extend(drain_calls(agent))
        if not have_s0:
            _fallback_s0(checkpoint, health, failure)
        env.stop_by_harness(cap_reached=f"{reached.cap} ({reached.detail})")
    env.end()
    recorder.sync()
    events = env.trajectory.events
    metrics = branch_metrics(events, spec_body(spec.body))
    if store is not None:
        _finish(recorder, metrics, events, env.n_invalid, calls, failure, caps, health)
    head = env.trajectory.head
    return BranchResult(
        recorder.run_id, branch, events, metrics, head, calls, failure, caps, health
    )


def _append_header(
    recorder: Recorder, env: CampaignEnv, agent: Agent, seed: int, branch: str
) -> None:
    """The run's header event (`labreplay.runtime.header`) right after `reset`: what the runs
    row says of the run, bound into its chain (a stored run from before headers: none)."""
    payload = header_payload(
        agent=agent.name,
        agent_params=agent.params(),
        isolation=isolation_of(agent),
        sandbox=sandbox_of(agent),
        model=model_of(agent)[0],
        seed=seed,
        branch=branch,
        spec_hash=env.spec_hash,
        protocol=env.spec.protocol,
    )
    header = recorder.header_at(len(env.trajectory.events), payload)
    if header is not None:
        env.record_header(header)
        recorder.sync()


def _reset(agent: Agent, seed: int) -> None:
    """`agent.reset(seed)`; an exception there ends the branch like a dead agent (failed, with
    the cause), not the whole command with a traceback and the run left `running`."""
    try:
        agent.reset(seed)
    except (AgentUnavailable, CapReached):
        raise
    except Exception as exc:
        raise AgentUnavailable(raised_message("reset", exc)) from None


def _fallback_s0(checkpoint: Checkpoint, health: RunHealth, failure: str) -> None:
    """The harness stopped the branch before its pre-campaign forecast was recorded (a cap or
    a dead agent during that very call): record it as failed, every entry the declared
    fallback, so the curve still starts at s_0 and the failed run is stored, not a crash."""
    checkpoint(0, None, {"forecasts": [], "error": failure})
    health.checkpoint(True)


def branch_verdict(calls: Sequence[Mapping[str, object]], health: RunHealth) -> Verdict:
    """The failed-run rule (`labreplay.runtime.failure`) for one branch; a branch whose every
    model call failed (checkpoints included) measured its endpoint and is failed too."""
    every = call_failures(calls)
    if health.harness_stop is None and every["all_failed"]:
        cause = f"{MODEL_CALLS_FAILED}: every model call failed; first: {every['cause']}"
        return Verdict("failed", MODEL_CALLS_FAILED, cause)
    return judge(health)


def _finish(
    recorder: Recorder,
    metrics: Mapping[str, object],
    events: Sequence[Mapping[str, object]],
    n_invalid: int,
    calls: Sequence[Mapping[str, object]],
    failure: str | None = None,
    caps: Mapping[str, object] | None = None,
    health: RunHealth | None = None,
) -> None:
    """Scores, call log and the final mark of a finished branch: `failed` by the one
    failed-run rule (`branch_verdict`), with its cause named, else `complete`."""
    assert recorder.store is not None
    recorder.log_calls(calls)
    scalar = {
        k: (float(v) if v is not None else None)
        for k, v in metrics.items()
        if isinstance(v, int | float) or v is None
    }
    end = next((e["payload"] for e in events if e["kind"] == "end"), {})
    closed = [str(eid) for eid in json_list(json_object(end).get("closed", []))]
    recorder.flush()
    health_ = health if health is not None else RunHealth()
    verdict = branch_verdict(calls, health_)
    summary: dict[str, Any] = {
        "head_hash": events[-1]["hash"],
        "invalid_actions": n_invalid,
        "checkpoint_fallbacks": int(json_number(metrics.get("checkpoint_fallbacks") or 0)),
        "caps": dict(caps or {}),
        **health_.to_json(),
    }
    if failure is not None and failure.startswith("cap reached: "):
        summary["cap_reached"] = failure.removeprefix("cap reached: ")
    if verdict.status == "failed":
        summary["cause"] = verdict.cause
        summary["cause_kind"] = verdict.kind
    recorder.finish(
        verdict.status,
        summary,
        scalar,
        {"curve": metrics["curve"], "movements": metrics["movements"], "closed": closed},
    )


def persist_branch(
    store: Store,
    spec: EnvironmentSpec,
    result: BranchResult,
    agent_name: str,
    agent_params: Mapping[str, object],
    seed: int,
    parent_run_id: str | None = None,
    model: str | None = None,
    endpoint: str | None = None,
    extra_provenance: Mapping[str, object] | None = None,
) -> BranchResult:
    """Write a branch computed without a store (e.g. on a Dask worker) into `store`.

    Writes exactly what `run_branch(..., store=store)` would have written for the same key: the
    same run id, events, scores and summary. Idempotent: a run already complete is left as it is
    (its stored head hash must equal the result's); a partial run keeps its verified prefix and
    gets only the missing events.
    """
    found = find_header(result.events)
    # the sandbox the worker's agent ran in, as its header records it
    sandbox = {"agent_sandbox": found[1]["sandbox"]} if found is not None else {}
    header = _header(
        spec,
        result.branch,
        agent_name,
        agent_params,
        seed,
        model,
        endpoint,
        parent_run_id,
        {**(extra_provenance or {}), **sandbox},
    )
    recorder, status = open_run(store, header, batch=len(result.events) + 1)
    run_id = recorder.run_id
    if status == "complete":
        stored = store.events(run_id)
        aligned = recorder.aligned(result.events)  # a stored run from before headers has none
        if not stored or not aligned or stored[-1]["hash"] != aligned[-1]["hash"]:
            raise StoreError(
                f"run {run_id}: stored trajectory head differs from the recomputed one "
                "(non-deterministic agent or changed code); rerun with --restart"
            )
        return BranchResult(run_id, result.branch, stored, result.metrics, stored[-1]["hash"])
    recorder.take(result.events)
    end = result.events[-1]["payload"] if result.events else {}
    _finish(
        recorder,
        result.metrics,
        recorder.events,
        int(end.get("invalid_actions", result.metrics["invalid_actions"])),
        result.calls,
        result.failure,
        result.caps,
        result.health,
    )
    return BranchResult(
        run_id,
        result.branch,
        recorder.events,
        result.metrics,
        recorder.head,
        result.calls,
        result.failure,
        result.caps,
    )


def pre_campaign_forecast(events: Sequence[Mapping[str, object]]) -> PreCampaignForecast:
    forecasts = checkpoint_payloads(events)[0]["forecasts"]
    return {
        "forecasts": [{"experiment_id": k, **v} for k, v in forecasts.items()],
        "recorded": forecasts,  # recorded verbatim by the controls: shared exactly
    }


def run_assignment(
    spec: EnvironmentSpec,
    make_agent: AgentFactory,
    store: Store | None,
    seed: int,
    controls: tuple[str, ...] = ("random", "no-evidence"),
) -> AssignmentSummary:
    """Adaptive branch, then each requested control from the same pre-campaign forecast.
    With a store this goes through the shared driver (`execute.run_assignments`), like every
    other run path; without one it only computes."""
    if store is not None:
        from labreplay.suites.campaign.execute import run_assignments

        (summary,) = run_assignments([spec], make_agent, store, seed, controls)
        return summary
    results = run_assignment_branches(spec, make_agent, store, seed, controls)
    return assignment_summary(spec, results)


def assignment_summary(
    spec: EnvironmentSpec, results: Mapping[str, BranchResult]
) -> AssignmentSummary:
    health = call_failures(results["adaptive"].calls)
    verdicts = [branch_verdict(r.calls, r.health) for r in results.values()]
    failed_verdict = next((v for v in verdicts if v.status == "failed"), None)
    failed = failed_verdict is not None
    return {
        "spec_id": spec.spec_id,
        "spec_hash": spec.spec_hash,
        "assignment": spec.body["assignment"],
        "partition_seed": spec.body["seed"],
        "status": "failed" if failed else "complete",
        "failed_call_share": health["failed_call_share"],
        "cause": failed_verdict.cause if failed_verdict is not None else None,
        "cause_kind": failed_verdict.kind if failed_verdict is not None else None,
        "usage": {b: usage_summary(r.calls) for b, r in results.items() if r.calls},
        **assignment_metrics(spec, results),
    }


def run_assignment_branches(
    spec: EnvironmentSpec,
    make_agent: AgentFactory,
    store: Store | None,
    seed: int,
    controls: tuple[str, ...] = ("random", "no-evidence"),
) -> dict[str, BranchResult]:
    """The three branches of one assignment; with `store=None` nothing is written (the work
    unit of `labreplay.execute`)."""
    unknown = [c for c in controls if c not in BRANCHES[1:] and random_replicate(c) is None]
    if unknown:
        raise SpecError(f"unknown control {unknown[0]!r} (known: {', '.join(BRANCHES[1:])})")
    made: list[Agent] = []

    def fresh() -> Agent:
        made.append(make_agent())
        return made[-1]

    try:
        return _branches(spec, fresh, store, seed, controls)
    finally:  # every agent built here is released (an isolated one's child process ends)
        for agent in made:
            close_agent(agent)


def requested(controls: Sequence[str]) -> dict[str, object]:
    """The adaptive run's provenance entry naming the controls asked for beside it."""
    return {"controls": sorted(controls)}


def _branches(
    spec: EnvironmentSpec,
    make_agent: AgentFactory,
    store: Store | None,
    seed: int,
    controls: tuple[str, ...],
) -> dict[str, BranchResult]:
    # The controls asked for are recorded with the adaptive run: `store verify` then sees a
    # deleted control (a board needs them to rank the run).
    adaptive = run_branch(
        spec, make_agent(), seed, "adaptive", store, extra_provenance=requested(controls)
    )
    results = {"adaptive": adaptive}
    if branch_verdict(adaptive.calls, adaptive.health).status == "failed":
        # The agent could not act (its endpoint, its replies, a cap): controls would measure
        # nothing either, and the run is not ranked.
        return results
    initial = pre_campaign_forecast(adaptive.events)
    slots, stopped = extract_schedule(adaptive.events)
    for control in controls:
        replicate = random_replicate(control)
        if replicate is None:
            continue
        wrapper = ScheduleMatchedRandom(
            make_agent(), slots, stopped, spec.body["evaluator"], seed, replicate, spec.spec_id
        )
        results[control] = run_branch(spec, wrapper, seed, control, store, initial, adaptive.run_id)
    if "no-evidence" in controls:
        wrapper_ne = CallMatchedNoEvidence(make_agent(), slots)
        results["no-evidence"] = run_branch(
            spec, wrapper_ne, seed, "no-evidence", store, initial, adaptive.run_id
        )
    return results


def assignment_metrics(
    spec: EnvironmentSpec, results: Mapping[str, BranchResult]
) -> AssignmentMetrics:
    tau = target_tau(spec.body)
    adaptive = results["adaptive"].metrics
    out: AssignmentMetrics = {
        "branches": {
            b: {
                "run_id": r.run_id,
                "head_hash": r.head_hash,
                "adaptive_auc": r.metrics["adaptive_auc"],
                "held_out_gain": r.metrics["held_out_gain"],
                # closures, early stops, unused budget and declared departures, every branch
                **{
                    k: r.metrics.get(k)
                    for k in (
                        "experiments_closed",
                        "stopped_early",
                        "unused_experiments",
                        "unused_evidence",
                        "control_departures",
                        "departure_experiments",
                        "checkpoint_fallbacks",
                        "invalid_actions",
                        "policy_calls",
                        "forecast_calls",
                    )
                },
            }
            for b, r in results.items()
        },
        "adaptive_auc": adaptive["adaptive_auc"],
        "held_out_gain": adaptive["held_out_gain"],
    }
    replicates = [r.metrics for b, r in results.items() if random_replicate(b) is not None]
    if replicates:
        # K replicates are averaged before the lift is taken (METRICS.md).
        random_auc = sum(m["adaptive_auc"] for m in replicates) / len(replicates)
        out["random_replicates"] = len(replicates)
        out["selection_lift"] = adaptive["adaptive_auc"] - random_auc
    curve = adaptive["curve"]
    if replicates and tau is not None and curve and curve[0] < tau:
        # Estimable only where neither branch met tau at t = 0 (they share that forecast).
        first = [
            acceleration_factor(first_passage(m["curve"], tau), first_passage(curve, tau))
            for m in replicates
        ]
        sust = [
            acceleration_factor(sustained_passage(m["curve"], tau), sustained_passage(curve, tau))
            for m in replicates
        ]
        out["acceleration_first"] = _mean_or_none(first)
        out["acceleration_sustained"] = _mean_or_none(sust)
    elif tau is not None and curve:
        out["target_met_at_t0"] = True
    if "no-evidence" in results:
        out["evidence_lift"] = (
            adaptive["adaptive_auc"] - results["no-evidence"].metrics["adaptive_auc"]
        )
    return out


def _mean_or_none(values: Sequence[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def target_tau(body: Mapping[str, object]) -> float | None:
    """The declared acceleration target of a spec (older specs held a bare number)."""
    target = body["acceleration_target"]
    value = target.get("tau") if isinstance(target, Mapping) else target
    return None if value is None else json_number(value, "acceleration_target")
