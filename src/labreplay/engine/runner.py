"""The episode runner: the one owner of every run, on every path and executor.

For each spec and each episode a suite declares (`labreplay.sdk.episodes`), the runner builds
the agent once, derives the run's identity (spec, branch, agent and its parameters, isolation,
seed), reads a finished run back instead of playing it again, opens or resumes the run, writes
the header event, binds the response cache, calls the suite's `play` into a sink, applies the
one failure boundary (the agent stopped answering, a run cap was reached), derives the run's
health and scores through the suite's pure `score`, judges it by the one failed-run rule and
finishes it with the one run summary. Suites never see the store.

Where an episode plays is the runner's decision: here, writing as it goes (in-process: a killed
run resumes from its last written batch), or on an executor's worker (threads, Dask) into a
memory sink whose events and calls the runner records when they come back, in episode order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from labreplay._hashing import canonical_form, sha256_bytes
from labreplay.agents.base import call_failures
from labreplay.agents.contracts import (
    UsesResponseCache,
    bind_response_cache,
    close_agent,
    drain_calls,
    isolation_of,
    sandbox_of,
)
from labreplay.agents.llm_usage import usage_summary
from labreplay.engine.sink import MemorySink, RecordingSink
from labreplay.errors import RunFailedError
from labreplay.execute.driver import Unit, run_units
from labreplay.runtime.failure import MODEL_CALLS_FAILED, RunHealth, Verdict, cap_kind, judge
from labreplay.runtime.header import HEADER_KIND, header_payload
from labreplay.runtime.recorder import Recorder, RunHeader, open_run

if TYPE_CHECKING:
    from labreplay.agents.contracts import ResponseCache
    from labreplay.agents.resolve import ResolvedAgent
    from labreplay.compile.spec import EnvironmentSpec
    from labreplay.execute.base import Executor
    from labreplay.sdk.episodes import Episode, EpisodeSuite
    from labreplay.store.sqlite import Store


class Stopped(TypedDict):
    """Why the harness stopped an episode: a run cap, or an agent that stopped answering."""

    cause: str
    cap: str | None


class Played(TypedDict):
    """What an episode played on a worker sends back."""

    events: list[tuple[str, dict[str, object]]]
    calls: list[dict[str, object]]
    stopped: Stopped | None


@dataclass(frozen=True)
class _Open:
    """One episode opened here: its spec, declaration, recorder and stored prefix."""

    spec: EnvironmentSpec
    episode: Episode
    recorder: Recorder
    stored: list[dict[str, Any]]


def run_suite(
    suite: EpisodeSuite[Any],
    specs: Sequence[EnvironmentSpec],
    agent: ResolvedAgent,
    store: Store,
    *,
    seed: int,
    options: Mapping[str, object],
    executor: Executor | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[dict[str, object]]:
    """Play every episode of every spec with `agent` and record it in `store`; one summary per
    episode, in order. Raises RunFailedError (after storing it) when a run failed."""
    results: list[dict[str, object]] = []
    for spec in specs:
        probe = suite.agent_for(spec, agent, seed, options, None)
        try:
            results += _run_spec(
                suite, spec, agent, probe, store, seed, options, executor, progress
            )
        finally:  # an isolated agent's child process never outlives its run
            close_agent(probe)
    return results


def _run_spec(
    suite: EpisodeSuite[Any],
    spec: EnvironmentSpec,
    agent: ResolvedAgent,
    probe: object,
    store: Store,
    seed: int,
    options: Mapping[str, object],
    executor: Executor | None,
    progress: Callable[[int], None] | None,
) -> list[dict[str, object]]:
    _keep_attachments(store, spec)
    finished: dict[int, dict[str, object]] = {}
    units: list[Unit] = []
    opened: list[_Open] = []
    for index, episode in enumerate(suite.episodes(spec, options)):
        recorder, status = _open(store, spec, episode, probe, seed)
        if status == "complete":
            finished[index] = _read_back(store, recorder.run_id)
            continue
        stored = recorder.resume() if suite.resume == "continue" else recorder.stored
        run = _Open(spec, episode, recorder, stored)
        opened.append(run)
        bound = recorder.header_at(0, _header(spec, episode, probe, seed))
        if suite.resume == "continue" and bound is not None and not stored:
            recorder.append(HEADER_KIND, bound)
        units.append(
            Unit(
                recorder.run_id,
                partial(
                    _play_remote,
                    suite,
                    spec,
                    episode,
                    agent,
                    probe,
                    seed,
                    dict(options),
                    recorder.events,
                ),
                partial(_persist, suite, run, seed),
                uses_llm=isinstance(probe, UsesResponseCache),
                in_place=partial(_play_here, suite, run, probe, seed, progress),
            )
        )
    played = iter(run_units(suite.name, units, store, executor))
    return [
        finished[i] if i in finished else next(played) for i in range(len(finished) + len(units))
    ]


def _keep_attachments(store: Store, spec: EnvironmentSpec) -> None:
    """The files a spec content-addresses (a conditions question file) travel with its runs,
    so the store alone is enough to recompute every score (`store verify`)."""
    for sha256, where in spec.attached_files.items():
        data = Path(where).read_bytes()
        if sha256_bytes(data) == sha256:
            store.put_content(f"{spec.suite}-attachment", data)


def _header(spec: EnvironmentSpec, episode: Episode, agent: object, seed: int) -> Any:
    return header_payload(
        agent=str(getattr(agent, "name", type(agent).__name__)),
        agent_params=_params(agent, episode),
        isolation=isolation_of(agent),
        sandbox=sandbox_of(agent),
        seed=seed,
        branch=episode.branch,
        spec_hash=spec.spec_hash,
        protocol=spec.protocol,
    )


def _params(agent: object, episode: Episode) -> dict[str, Any]:
    """The agent's parameters as the run row keys them: an isolated run never reuses an
    in-process one, and an episode's own identity facts (a subset) make it its own run."""
    params_of = getattr(agent, "params", None)
    params: dict[str, Any] = dict(params_of()) if callable(params_of) else {}
    if isolation_of(agent) != "in-process":
        params["isolation"] = isolation_of(agent)
    return {**params, **episode.identity}


def _open(
    store: Store, spec: EnvironmentSpec, episode: Episode, agent: object, seed: int
) -> tuple[Recorder, str]:
    params = _params(agent, episode)
    header = RunHeader(
        spec,
        episode.branch,
        str(getattr(agent, "name", type(agent).__name__)),
        params,
        seed,
        model=_text(params.get("model")),
        endpoint=_text(params.get("endpoint") or params.get("base_url")),
        extra_provenance={**episode.provenance, "agent_sandbox": sandbox_of(agent)},
    )
    return open_run(store, header)


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _read_back(store: Store, run_id: str) -> dict[str, object]:
    info = store.run(run_id)
    return {"run_id": run_id, "resumed": False, "cached": True, **(info.summary or {})}


# ---------------------------------------------------------------------------- playing
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


def _play_here(
    suite: EpisodeSuite[Any],
    run: _Open,
    agent: object,
    seed: int,
    progress: Callable[[int], None] | None,
    store: Store,
) -> dict[str, object]:
    bind_response_cache(agent, store)
    sink = RecordingSink(run.recorder, run.stored, progress)
    stopped: Stopped | None = None
    try:
        suite.play(run.spec, run.episode, agent, sink)
    except Exception as exc:
        stopped = _stop_of(exc)
        if stopped is None:
            raise
    finally:
        sink.calls(drain_calls(agent))
    return _finish(suite, run, store, seed, stopped)


def _play_remote(
    suite: EpisodeSuite[Any],
    spec: EnvironmentSpec,
    episode: Episode,
    resolved: ResolvedAgent,
    probe: object,
    seed: int,
    options: dict[str, object],
    stored: list[dict[str, Any]],
    cache: ResponseCache | None,
) -> Played:
    """An episode on an executor's worker: the agent built there (the checked one on threads),
    everything kept in memory for the runner."""
    # rebuilt where it plays from its name or import path; otherwise (an object, a factory,
    # an isolated agent's one child process) the checked agent itself
    rebuild = (resolved.builtin is not None or resolved.ref is not None) and (
        isolation_of(probe) == "in-process"
    )
    agent = suite.agent_for(spec, resolved, seed, options, cache) if rebuild else probe
    bind_response_cache(agent, cache)
    sink = MemorySink(stored)
    stopped: Stopped | None = None
    try:
        suite.play(spec, episode, agent, sink)
    except Exception as exc:
        stopped = _stop_of(exc)
        if stopped is None:
            raise
    sink.calls(drain_calls(agent))
    return {"events": sink.events, "calls": sink.call_records, "stopped": stopped}


def _persist(suite: EpisodeSuite[Any], run: _Open, seed: int, store: Store, played: Played) -> Any:
    for kind, payload in played["events"]:
        run.recorder.append(kind, payload)
    run.recorder.log_calls(played["calls"])
    return _finish(suite, run, store, seed, played["stopped"])


# ---------------------------------------------------------------------------- finishing
def _finish(
    suite: EpisodeSuite[Any], run: _Open, store: Store, seed: int, stopped: Stopped | None
) -> dict[str, object]:
    recorder = run.recorder
    recorder.flush()  # the call log complete in the store, including earlier sessions'
    calls = store.llm_calls(recorder.run_id)
    if stopped is not None:
        summary: dict[str, object] = {"cause": stopped["cause"], "usage": usage_summary(calls)}
        if stopped["cap"] is not None:
            summary = {**summary, "cap_reached": stopped["cap"]}
            summary["cause_kind"] = cap_kind(stopped["cap"])
        recorder.finish("failed", {**summary, **_call_fields(calls)})
        raise RunFailedError(
            f"run {recorder.run_id}: {stopped['cause']}; {len(calls)} calls accounted (stored as "
            "failed, not ranked; rerun with a higher cap to resume)"
            if stopped["cap"] is not None
            else f"run {recorder.run_id}: {stopped['cause']} (stored as failed, not ranked)"
        )
    events = recorder.events
    scored = suite.score(run.spec, run.episode, events, calls, seed)
    verdict = run_verdict(scored["health"], calls)
    summary = {**scored["summary"], **scored["health"].to_json(), **_call_fields(calls)}
    if calls:
        summary["usage"] = usage_summary(calls)
    if verdict.status == "failed":
        summary = {**summary, "cause": verdict.cause, "cause_kind": verdict.kind}
    recorder.finish(verdict.status, summary, scored["scores"], scored["details"])
    if verdict.status == "failed":
        raise RunFailedError(
            f"run {recorder.run_id}: the agent could not act (stored as failed, not ranked; "
            f"rerun the same command to resume): {verdict.cause}"
        )
    # the numbers as stored (canonical), so a run read back returns what this one returned
    stored, _ = canonical_form(summary)
    return {"run_id": recorder.run_id, "resumed": recorder.existed, "cached": False, **stored}


def run_verdict(health: RunHealth, calls: Sequence[Mapping[str, object]]) -> Verdict:
    """The verdict on a finished run: failed when every model call failed (it measured its
    endpoint, not the agent), else the one failed-run rule over its health."""
    every = call_failures(calls)
    if every["all_failed"]:
        cause = f"{MODEL_CALLS_FAILED}: every model call failed; first: {every['cause']}"
        return Verdict("failed", MODEL_CALLS_FAILED, cause)
    return judge(health)


def _call_fields(calls: Sequence[Mapping[str, object]]) -> dict[str, object]:
    """The model-call fields of every run summary (what `store verify` recounts)."""
    if not calls:
        return {}
    health = call_failures(calls)
    return {
        "llm_calls": health["llm_calls"],
        "failed_calls": health["failed_calls"],
        "failed_call_share": health["failed_call_share"],
    }


__all__ = ["Played", "Stopped", "run_suite", "run_verdict"]
