"""The episode runner: the one owner of every run, on every path and executor.

For each spec, the runner plays the episodes its suite declares (`labreplay.sdk.episodes`) in
order: it builds a fresh agent for each, derives the run's identity (spec, branch, agent and its
parameters, isolation, seed), reads a finished run back instead of playing it again, opens or
resumes the run, hands the suite the header event to place, binds the response cache, calls the
suite's `play` into a sink, applies the one failure boundary (the agent stopped answering, a
run cap was reached), scores the events with the suite's pure `score`, judges the run by the one
failed-run rule and finishes it with the one run summary. An episode derived from another
(`parent`: a matched control) reads its parent's events and is not played when its parent
failed. Suites never see the store.

Where a spec's episodes play is the runner's decision: here, writing as they go (in-process: a
killed run resumes from its last written batch), or on an executor's worker (threads, Dask)
into memory sinks whose events and calls the runner records when they come back, in order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypedDict

from labreplay._files import read_file
from labreplay._hashing import canonical_form, sha256_bytes
from labreplay.agents.base import call_failures
from labreplay.agents.contracts import (
    begin_episode,
    bind_response_cache,
    close_agent,
    drain_calls,
    isolation_of,
    model_of,
    sandbox_of,
)
from labreplay.engine.episodes import AgentT
from labreplay.engine.sink import MemorySink, RecordingSink
from labreplay.errors import RunFailedError, SpecError
from labreplay.execute.driver import Unit, run_units
from labreplay.runtime.failure import (
    AGENT_UNAVAILABLE,
    MODEL_CALLS_FAILED,
    RunHealth,
    Verdict,
    cap_kind,
    judge,
)
from labreplay.runtime.header import header_payload
from labreplay.runtime.recorder import Recorder, RunHeader, open_run
from labreplay.store.sqlite import run_key

if TYPE_CHECKING:
    from labreplay.agents.contracts import Described, ResponseCache
    from labreplay.agents.resolve import ResolvedAgent
    from labreplay.compile.spec import EnvironmentSpec
    from labreplay.engine.episodes import Episode, EpisodeSuite
    from labreplay.execute.base import Executor
    from labreplay.runtime.event_types import HeaderPayload, JsonObject, JsonValue
    from labreplay.store.sqlite import Store


BATCH = 64  # events written per transaction: a killed run loses at most this many


class Stopped(TypedDict):
    """Why the harness stopped an episode: a run cap, or an agent that stopped answering."""

    cause: str
    cap: str | None


class Played(TypedDict):
    """One episode played on a worker, as it comes back to the runner."""

    branch: str
    events: list[dict[str, Any]]  # the chain as played (after the stored prefix: continue)
    calls: list[dict[str, object]]
    stopped: Stopped | None
    header: HeaderPayload  # the header as the worker's agent gave it
    endpoint: str | None  # the endpoint its row names
    health: RunHealth  # what the play counted (`EventSink.health`)
    facts: dict[str, object]


@dataclass(frozen=True)
class Job(Generic[AgentT]):
    """Everything a spec's episodes need to play anywhere (picklable)."""

    suite: EpisodeSuite[AgentT]
    spec: EnvironmentSpec
    agent: ResolvedAgent
    seed: int
    options: Mapping[str, object]


def episodes_of(job: Job[AgentT]) -> list[Episode]:
    """The spec's episodes as the suite declares them, with the run seed."""
    return [replace(e, seed=job.seed) for e in job.suite.episodes(job.spec, job.options)]


def run_suite(
    suite: EpisodeSuite[AgentT],
    specs: Sequence[EnvironmentSpec],
    agent: ResolvedAgent,
    store: Store,
    *,
    seed: int | Sequence[int],
    options: Mapping[str, object],
    executor: Executor | None = None,
    progress: Callable[[int], None] | None = None,
    spec_done: Callable[[], None] | None = None,
) -> list[dict[str, object]]:
    """Play every episode of every spec with `agent` and record it in `store`; one summary per
    episode played or read back, in order (each with its `status`: a failed run is stored and
    returned; `raise_failed` turns one into the command's error). Several seeds: the spec's
    episodes under each (one unit of work per spec and seed, in that order). `progress(n)`: n
    more units of an episode's work recorded; `spec_done()`: a spec's episodes all finished
    (under one seed)."""
    from labreplay.execute.base import InProcessExecutor

    here = executor is None or isinstance(executor, InProcessExecutor)
    seeds = [seed] if isinstance(seed, int) else list(seed)
    units: list[Unit[list[Played], list[dict[str, object]]]] = []
    for spec in specs:
        _keep_attachments(store, spec)
        for one in seeds:
            job = Job(suite, spec, agent, one, dict(options))
            units.append(
                Unit(
                    f"{spec.spec_hash}:{len(units)}",
                    # a worker cannot read the store: it gets what its episodes continue from
                    partial(_play_remote, job, {} if here else _stored_prefixes(job, store)),
                    partial(_persist, job),
                    stored=_nothing if here else partial(_finished, job),
                    uses_llm=True,
                    in_place=partial(_play_here, job, progress),
                )
            )
    done = run_units(suite.name, units, store, executor, spec_done)
    return [summary for per_spec in done for summary in per_spec]


def _keep_attachments(store: Store, spec: EnvironmentSpec) -> None:
    """The files a spec content-addresses (a conditions question file) travel with its runs,
    so the store alone is enough to recompute every score (`store verify`)."""
    for sha256, where in spec.attached_files.items():
        data = read_file(Path(where), f"{spec.suite} attachment")
        if sha256_bytes(data) == sha256:
            store.put_content(f"{spec.suite}-attachment", data)


def _verified(spec: EnvironmentSpec, where: str) -> None:
    """A spec whose body no longer gives its hash (changed after it was hashed) refuses to run,
    here and on a worker it was sent to."""
    if sha256_bytes(spec.canonical_text().encode("utf-8")) != spec.spec_hash:
        raise SpecError(
            f"spec {spec.spec_id}: content does not match its spec hash {spec.spec_hash[:16]}... "
            f"({where}); refusing to run"
        )


# ---------------------------------------------------------------------------- identity
def _agent_name(agent: Described) -> str:
    return str(getattr(agent, "name", type(agent).__name__))


def _params(agent: Described, episode: Episode) -> dict[str, Any]:
    params_of = getattr(agent, "params", None)
    params: dict[str, Any] = dict(params_of()) if callable(params_of) else {}
    return {**params, **episode.identity}


def _model_endpoint(
    agent: Described, params: Mapping[str, JsonValue]
) -> tuple[str | None, str | None]:
    """The model and endpoint a run's row names (its header binds the model): a model-backed
    agent's own, else its `model` and `endpoint` (or `base_url`) parameters."""
    model, endpoint = model_of(agent)
    if model is None:
        model = _text(params.get("model"))
    if endpoint is None:
        endpoint = _text(params.get("endpoint") or params.get("base_url"))
    return model, endpoint


def _run_header(
    job: Job[AgentT], episode: Episode, agent: Described, parent_run_id: str | None
) -> RunHeader:
    params = _params(agent, episode)
    model, endpoint = _model_endpoint(agent, params)
    return RunHeader(
        job.spec,
        episode.branch,
        _agent_name(agent),
        params,
        job.seed,
        model=model,
        endpoint=endpoint,
        parent_run_id=parent_run_id,
        # where the agent's code ran is part of the run's identity (`run_key`)
        extra_provenance={
            **episode.provenance,
            "agent_isolation": isolation_of(agent),
            "agent_sandbox": sandbox_of(agent),
        },
    )


def _header_event(job: Job[AgentT], episode: Episode, agent: Described) -> HeaderPayload:
    params = _params(agent, episode)
    return header_payload(
        agent=_agent_name(agent),
        agent_params=params,
        isolation=isolation_of(agent),
        sandbox=sandbox_of(agent),
        model=_model_endpoint(agent, params)[0],
        seed=job.seed,
        branch=episode.branch,
        spec_hash=job.spec.spec_hash,
        protocol=job.spec.protocol,
    )


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _stored_prefixes(job: Job[AgentT], store: Store) -> dict[str, list[dict[str, Any]]]:
    """branch -> the events a continued episode already has (read only; for a worker)."""
    if job.suite.resume != "continue":
        return {}
    out: dict[str, list[dict[str, Any]]] = {}
    probe = job.suite.agent_for(job.spec, job.agent, job.seed, job.options, None)
    try:
        for episode in episodes_of(job):
            params = _params(probe, episode)
            run_id = run_key(
                job.spec.spec_hash, _agent_name(probe), params, job.seed, episode.branch,
                isolation_of(probe),
            )  # fmt: skip
            runs = store.runs(run_id=run_id)
            if runs and runs[0].status == "running":
                out[episode.branch] = store.events(run_id)
    finally:
        close_agent(probe)
    return out


def _nothing(store: Store) -> None:
    return None


def _finished(job: Job[AgentT], store: Store) -> list[dict[str, object]] | None:
    """A spec whose every episode is complete, read back (not sent to a worker again)."""
    agent = job.suite.agent_for(job.spec, job.agent, job.seed, job.options, None)
    try:
        results: list[dict[str, object]] = []
        runs: dict[str, str] = {}
        for episode in episodes_of(job):
            parent = runs.get(episode.parent) if episode.parent else None
            run_id = run_key(
                job.spec.spec_hash, _agent_name(agent), _params(agent, episode), job.seed,
                episode.branch, isolation_of(agent),
            )  # fmt: skip
            found = store.runs(run_id=run_id)
            if episode.parent is not None and parent is None:
                continue
            if not found or found[0].status != "complete":
                return None
            runs[episode.branch] = run_id
            results.append(_read_back(store, run_id))
        return results
    finally:
        close_agent(agent)


# ---------------------------------------------------------------------------- playing here
def _play_here(
    job: Job[AgentT], progress: Callable[[int], None] | None, store: Store
) -> list[dict[str, object]]:
    _verified(job.spec, "in-process")
    results: list[dict[str, object]] = []
    runs: dict[str, tuple[str, Recorder | None, str]] = {}  # branch -> (run id, rec, status)
    for episode in episodes_of(job):
        parent = runs.get(episode.parent) if episode.parent is not None else None
        if parent is not None and parent[2] != "complete":
            continue  # a derived episode measures nothing beside a failed parent
        agent = job.suite.agent_for(job.spec, job.agent, job.seed, job.options, None)
        try:
            recorder, status = open_run(
                store, _run_header(job, episode, agent, parent[0] if parent else None), batch=BATCH
            )
            if status == "complete":
                runs[episode.branch] = (recorder.run_id, None, "complete")
                results.append(_read_back(store, recorder.run_id))
                continue
            bind_response_cache(agent, store)
            stored = recorder.resume() if job.suite.resume == "continue" else recorder.stored
            header = _header_event(job, episode, agent)
            sink = RecordingSink(recorder, stored, header, _parent_events(store, parent), progress)
            stopped = _play(job, episode, agent, sink)
            summary, status = _finish(
                job, episode, recorder, store, stopped, sink.health, sink.facts
            )
            runs[episode.branch] = (recorder.run_id, recorder, status)
            results.append(summary)
        finally:  # an isolated agent's child process never outlives its episode
            close_agent(agent)
    return results


def _parent_events(
    store: Store, parent: tuple[str, Recorder | None, str] | None
) -> list[dict[str, Any]]:
    if parent is None:
        return []
    return parent[1].events if parent[1] is not None else store.events(parent[0])


def _stop_of(exc: BaseException) -> Stopped | None:
    """The failure boundary: what stops an episode as data, not as a crash."""
    from labreplay.agents.isolated import AgentUnavailable
    from labreplay.agents.llm_caps import CapReached

    if isinstance(exc, CapReached):
        cap = f"{exc.cap} ({exc.detail})"
        return {"cause": f"cap reached: {cap}", "cap": cap}
    if isinstance(exc, AgentUnavailable):
        return {"cause": str(exc), "cap": None}
    return None


def _play(
    job: Job[AgentT], episode: Episode, agent: AgentT, sink: RecordingSink | MemorySink
) -> Stopped | None:
    stopped: Stopped | None = None
    begin_episode(agent, job.spec.spec_id, job.spec.spec_hash, episode.branch, episode.seed)
    try:
        job.suite.play(job.spec, episode, agent, sink)
    except Exception as exc:
        stopped = _stop_of(exc)
        if stopped is None:
            raise
    finally:
        sink.calls(drain_calls(agent))
    sink.advance(0)
    return stopped


# ---------------------------------------------------------------------------- on a worker
def _play_remote(
    job: Job[AgentT], stored: Mapping[str, list[dict[str, Any]]], cache: ResponseCache | None
) -> list[Played]:
    """A spec's episodes on an executor's worker, everything kept in memory for the runner.
    Parents are judged as the runner will judge them (a failed one has no children)."""
    _verified(job.spec, "work unit")
    played: list[Played] = []
    events_of: dict[str, list[dict[str, Any]]] = {}
    for episode in episodes_of(job):
        if episode.parent is not None and episode.parent not in events_of:
            continue
        agent = job.suite.agent_for(job.spec, job.agent, job.seed, job.options, cache)
        try:
            bind_response_cache(agent, cache)
            header = _header_event(job, episode, agent)
            prefix = stored.get(episode.branch, [])
            parent = events_of.get(episode.parent, []) if episode.parent else []
            sink = MemorySink(job.spec.spec_hash, prefix, header, parent)
            stopped = _play(job, episode, agent, sink)
        finally:
            close_agent(agent)
        events = sink.trajectory.events
        played.append(
            {
                "branch": episode.branch,
                "events": events[len(prefix) :],
                "calls": sink.call_records,
                "stopped": stopped,
                "header": header,
                "endpoint": _model_endpoint(agent, _params(agent, episode))[1],
                "health": sink.health,
                "facts": sink.facts,
            }
        )
        if stopped is None and _verdict_of(job, episode, sink) == "complete":
            events_of[episode.branch] = events
    return played


class Detached(TypedDict):
    """An episode played without a store (`play_detached`)."""

    branch: str
    events: list[dict[str, Any]]
    calls: list[dict[str, object]]
    status: str
    cause: str | None
    cause_kind: str | None


def play_detached(
    suite: EpisodeSuite[AgentT],
    spec: EnvironmentSpec,
    agent: ResolvedAgent,
    *,
    seed: int,
    options: Mapping[str, object],
) -> list[Detached]:
    """A spec's episodes played in memory and judged by the same rules, nothing written
    (checks, dry runs, tests)."""
    job = Job(suite, spec, agent, seed, dict(options))
    out: list[Detached] = []
    for played in _play_remote(job, {}, None):
        episode = next(e for e in episodes_of(job) if e.branch == played["branch"])
        stopped = played["stopped"]
        if stopped is not None:
            kind = cap_kind(stopped["cap"]) if stopped["cap"] else AGENT_UNAVAILABLE
            verdict = Verdict("failed", kind, stopped["cause"])
        else:
            scored = suite.score(spec, episode, played["events"], played["calls"], seed)
            health = scored["health"] if scored["health"] is not None else played["health"]
            verdict = run_verdict(health, played["calls"])
        out.append(
            {
                "branch": played["branch"],
                "events": played["events"],
                "calls": played["calls"],
                "status": verdict.status,
                "cause": verdict.cause,
                "cause_kind": verdict.kind,
            }
        )
    return out


def _verdict_of(job: Job[AgentT], episode: Episode, sink: MemorySink) -> str:
    calls = sink.call_records
    scored = job.suite.score(job.spec, episode, sink.trajectory.events, calls, job.seed)
    health = scored["health"] if scored["health"] is not None else sink.health
    return run_verdict(health, calls).status


class _AsPlayed:
    """The worker's agent as the header it recorded names it (the runner's identity)."""

    def __init__(self, header: HeaderPayload, endpoint: str | None) -> None:
        self.name = header["agent"]
        self._params = dict(header["agent_params"])
        self.isolation = header["isolation"]
        self.sandbox = header["sandbox"]
        self.model = header.get("model")
        self.endpoint = endpoint

    def params(self) -> JsonObject:
        return dict(self._params)


def _persist(job: Job[AgentT], store: Store, played: Sequence[Played]) -> list[dict[str, object]]:
    results: list[dict[str, object]] = []
    by_branch = {p["branch"]: p for p in played}
    runs: dict[str, str] = {}
    for episode in episodes_of(job):
        result = by_branch.get(episode.branch)
        if result is None:
            continue
        agent = _AsPlayed(result["header"], result["endpoint"])
        parent = runs.get(episode.parent) if episode.parent else None
        recorder, status = open_run(store, _run_header(job, episode, agent, parent), batch=BATCH)
        if status == "complete":
            results.append(_read_back(store, recorder.run_id))
            runs[episode.branch] = recorder.run_id
            continue
        if job.suite.resume == "continue":
            recorder.resume()
            for event in result["events"]:
                recorder.append(str(event["kind"]), event["payload"])
        else:
            recorder.take(result["events"])
        recorder.log_calls(result["calls"])
        summary, status = _finish(
            job, episode, recorder, store, result["stopped"], result["health"], result["facts"]
        )
        if status == "complete":
            runs[episode.branch] = recorder.run_id
        results.append(summary)
    return results


# ---------------------------------------------------------------------------- finishing
def _read_back(store: Store, run_id: str) -> dict[str, object]:
    info = store.run(run_id)
    return {
        "run_id": run_id,
        "branch": info.branch,
        "status": info.status,
        "resumed": False,
        "cached": True,
        **(info.summary or {}),
    }


def _finish(
    job: Job[AgentT],
    episode: Episode,
    recorder: Recorder,
    store: Store,
    stopped: Stopped | None,
    played: RunHealth,
    facts: Mapping[str, object],
) -> tuple[dict[str, object], str]:
    recorder.flush()  # the call log complete in the store, including earlier sessions'
    calls = store.llm_calls(recorder.run_id)
    summary: dict[str, object] = {}
    scores: dict[str, float | None] | None = None
    details: dict[str, object] | None = None
    if stopped is not None:
        summary = {"cause": stopped["cause"]}
        if stopped["cap"] is not None:
            summary["cap_reached"] = stopped["cap"]
        kind = cap_kind(stopped["cap"]) if stopped["cap"] else AGENT_UNAVAILABLE
        verdict = Verdict("failed", kind, stopped["cause"])
    else:
        scored = job.suite.score(job.spec, episode, recorder.events, calls, job.seed)
        health = scored["health"] if scored["health"] is not None else played
        verdict = run_verdict(health, calls)
        summary = {**scored["summary"], **facts, **health.to_json()}
        scores, details = scored["scores"], scored["details"]
        if verdict.status == "failed":
            summary["cause"] = verdict.cause
    if verdict.kind is not None:
        summary["cause_kind"] = verdict.kind
    # the recorder adds the call accounting every suite's summary has (`runtime.summary`)
    recorded = recorder.finish(verdict.status, summary, scores, details)
    # the numbers as stored (canonical), so a run read back returns what this one returned
    stored, _ = canonical_form(recorded)
    return {
        "run_id": recorder.run_id,
        "branch": episode.branch,
        "status": verdict.status,
        "resumed": recorder.existed,
        "cached": False,
        **stored,
    }, verdict.status


def raise_failed(results: Sequence[Mapping[str, object]]) -> None:
    """A failed run is stored first, then said: the command exits 1."""
    for result in results:
        if result.get("status") != "failed" or result.get("cached"):
            continue
        run_id, cause = result["run_id"], result.get("cause")
        if result.get("cap_reached") is not None:
            raise RunFailedError(
                f"run {run_id}: {cause}; {result.get('llm_calls', 0)} calls accounted (stored "
                "as failed, not ranked; rerun with a higher cap to resume)"
            )
        if result.get("cause_kind") == AGENT_UNAVAILABLE and "policy_calls" not in result:
            raise RunFailedError(f"run {run_id}: {cause} (stored as failed, not ranked)")
        raise RunFailedError(
            f"run {run_id}: the agent could not act (stored as failed, not ranked; rerun the "
            f"same command to resume): {cause}"
        )


def run_verdict(health: RunHealth, calls: Sequence[Mapping[str, object]]) -> Verdict:
    """The verdict on a finished run: failed when every model call failed (it measured its
    endpoint, not the agent), else the one failed-run rule over its health."""
    every = call_failures(calls)
    if health.harness_stop is None and every["all_failed"]:
        cause = f"{MODEL_CALLS_FAILED}: every model call failed; first: {every['cause']}"
        return Verdict("failed", MODEL_CALLS_FAILED, cause)
    return judge(health)


__all__ = [
    "Detached",
    "Job",
    "Played",
    "Stopped",
    "play_detached",
    "raise_failed",
    "run_suite",
    "run_verdict",
]
