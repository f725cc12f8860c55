"""The campaign suite as the runner plays it: per spec, the adaptive branch, then each matched
control (`parent`: the adaptive branch, whose schedule and pre-campaign forecast it reads).

`play` drives one branch of the campaign environment (the environment keeps its own chain,
which the sink follows; a resumed branch is replayed from the start and must reproduce its
stored events) and counts its health as it plays; `score` is the pure function of the events
that the runner and `store verify` share.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Literal

from labreplay.errors import LabreplayError
from labreplay.sdk.agents import (
    Agent,
    AgentNonJSON,
    AgentUnavailable,
    CapReached,
    Observation,
    ResolvedAgent,
    ResponseCache,
    Snapshot,
    drain_calls,
    json_problem,
    plain_repr,
    raised_message,
)
from labreplay.sdk.engine import (
    AGENT_UNAVAILABLE,
    EnvironmentSpec,
    cap_kind,
    decision_failed,
)
from labreplay.sdk.episodes import Episode, Event, EventSink, Scored
from labreplay.sdk.events import JsonValue
from labreplay.suites.campaign.branches import PreCampaignForecast, random_replicate
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
from labreplay.suites.campaign.metrics import branch_metrics
from labreplay.suites.campaign.views import spec_body

MAX_INVALID_STREAK = 8  # the harness ends a campaign stuck on this many invalid actions


def guarded_act(agent: Agent, observation: Observation) -> JsonValue:
    """The agent's action; an exception inside `act` or a non-JSON return becomes an invalid
    action naming it (recorded and scored, never a crash); any other JSON value is the
    environment's to check. Harness errors (LabreplayError: an agent that stopped answering,
    a cap) propagate."""
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


def guarded_forecast(agent: Agent, snapshot: Snapshot) -> JsonValue:
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


def pre_campaign_forecast(events: Sequence[Mapping[str, object]]) -> PreCampaignForecast:
    forecasts = checkpoint_payloads(events)[0]["forecasts"]
    return {
        "forecasts": [{"experiment_id": k, **v} for k, v in forecasts.items()],
        "recorded": forecasts,  # recorded verbatim by the controls: shared exactly
    }


def control_agent(
    spec: EnvironmentSpec, branch: str, agent: Agent, parent: Sequence[Event], seed: int
) -> Agent:
    """The agent of a matched control: the fresh agent wrapped to follow the adaptive branch's
    schedule (`random`, `random-k`) or its calls without evidence (`no-evidence`)."""
    slots, stopped = extract_schedule(parent)
    replicate = random_replicate(branch)
    if replicate is not None:
        return ScheduleMatchedRandom(
            agent, slots, stopped, spec.body["evaluator"], seed, replicate, spec.spec_id
        )
    return CallMatchedNoEvidence(agent, slots)


class _Branch:
    """One branch being played: the environment, its health and the checkpoint rule."""

    def __init__(
        self,
        spec: EnvironmentSpec,
        agent: Agent,
        sink: EventSink,
        seed: int,
        make_env: Callable[[EnvironmentSpec], CampaignEnv],
    ) -> None:
        self.env = make_env(spec)
        self.env.reset(seed)
        self.agent, self.sink, self.health = agent, sink, sink.health
        sink.follow(self.env.trajectory)
        header = sink.header()
        if header is not None:  # right after `reset`: what the runs row says, in the chain
            self.env.record_header(header)
        sink.advance(0)

    def checkpoint(
        self,
        t: int,
        previous: Mapping[str, CategoryForecast] | None,
        given: PreCampaignForecast | None = None,
    ) -> dict[str, CategoryForecast]:
        snapshot = self.env.checkpoint_snapshot()
        response = given if given is not None else guarded_forecast(self.agent, snapshot)
        recorded = given.get("recorded") if given is not None else None
        payload = self.env.submit_checkpoint(
            response, t, previous, snapshot["state_hash"], recorded
        )
        self.sink.calls(drain_calls(self.agent))
        if given is None:  # the pre-campaign forecast a control starts from is not asked
            self.health.checkpoint(isinstance(response, Mapping) and "error" in response)
        self.sink.advance(0)
        return dict(payload["forecasts"])

    def fallback_s0(self, failure: str) -> None:
        """The harness stopped the branch before its pre-campaign forecast was recorded:
        record it as failed, every entry the declared fallback, so the curve starts at s_0."""
        self.checkpoint(0, None, {"forecasts": [], "error": failure})
        self.health.checkpoint(True)


def play_branch(
    spec: EnvironmentSpec,
    agent: Agent,
    sink: EventSink,
    seed: int,
    initial: PreCampaignForecast | None = None,
    max_invalid_streak: int = MAX_INVALID_STREAK,
    make_env: Callable[[EnvironmentSpec], CampaignEnv] = CampaignEnv,
) -> None:
    """One branch of the campaign, recorded through `sink` (its caps and any cap reached go
    to `sink.facts`, its policy calls and checkpoints to `sink.health`); `make_env`: where its
    experiments come from (a live source: `live.lab.LiveEnv`)."""
    branch = _Branch(spec, agent, sink, seed, make_env)
    env, health = branch.env, branch.health
    caps = {**policy_turn_caps(spec_body(spec.body)), **agent_caps(agent)}
    sink.facts["caps"] = caps
    turns = TurnCounter(caps)
    have_s0 = False  # the pre-campaign forecast is recorded (the curve's first point)
    try:
        _reset(agent, seed)
        last = branch.checkpoint(0, None, initial)
        have_s0 = True
        streak = 0
        while not env.done:
            env.before_act()
            if env.done:
                break
            turns.turn(env.open_id)  # raises CapReached past a policy-turn cap
            action = guarded_act(agent, env.observation())
            step_calls = drain_calls(agent)
            sink.calls(step_calls)
            error = action.get("error") if isinstance(action, Mapping) else None
            if isinstance(action, Mapping) and action.get("type") != "invalid":
                error = None  # a well-formed action carrying an "error" field is an action
            health.policy(decision_failed(error, step_calls), error)
            result = env.step(action)
            for departure in agent.drain_departures() if isinstance(agent, ControlWrapper) else []:
                env.record_departure(departure)  # a matched control departed: declared, counted
            streak = 0 if result.accepted else streak + 1
            sink.advance(0)
            if result.checkpoint_due:
                last = branch.checkpoint(len(env.closed_order), last)
            if streak >= max_invalid_streak and not env.done:
                # The harness, not the agent, ends a campaign stuck on invalid actions.
                env.stop_by_harness(forced_stop=f"{streak} invalid actions in a row")
    except AgentUnavailable as exc:
        # The agent stopped answering (timeout, its process died): failed, with the cause.
        health.harness_stop = f"{AGENT_UNAVAILABLE}: {exc}"
        sink.calls(drain_calls(agent))
        if not have_s0:
            branch.fallback_s0(str(exc))
        env.stop_by_harness(agent_failed=str(exc))
    except CapReached as reached:
        # Spent calls are accounted; the run ends failed with the cap named (resumable).
        health.harness_stop = f"{cap_kind(reached.cap)}: {reached}"
        sink.facts["cap_reached"] = f"{reached.cap} ({reached.detail})"
        sink.calls(drain_calls(agent))
        if not have_s0:
            branch.fallback_s0(str(reached))
        env.stop_by_harness(cap_reached=f"{reached.cap} ({reached.detail})")
    env.end()
    sink.advance(0)


def _reset(agent: Agent, seed: int) -> None:
    """`agent.reset(seed)`; an exception there ends the branch like a dead agent (failed, with
    the cause), not the whole command with a traceback and the run left `running`."""
    try:
        agent.reset(seed)
    except (AgentUnavailable, CapReached):
        raise
    except Exception as exc:
        raise AgentUnavailable(raised_message("reset", exc)) from None


def score_branch(spec: EnvironmentSpec, events: Sequence[Event]) -> Scored:
    """A branch's scores, details and summary counts from its events alone."""
    metrics = branch_metrics(events, spec_body(spec.body))
    end = next((json_object(e["payload"]) for e in events if e["kind"] == "end"), {})
    scalar = {
        k: (float(v) if v is not None else None)
        for k, v in metrics.items()
        if isinstance(v, int | float) or v is None
    }
    return {
        "scores": scalar,
        "details": {
            "curve": metrics["curve"],
            "movements": metrics["movements"],
            "closed": [str(eid) for eid in json_list(end.get("closed", []))],
        },
        "summary": {
            "head_hash": str(events[-1]["hash"]),
            "invalid_actions": int(
                json_number(end.get("invalid_actions", metrics["invalid_actions"]))
            ),
            "checkpoint_fallbacks": int(json_number(metrics.get("checkpoint_fallbacks") or 0)),
        },
        "health": None,  # counted as the branch played
    }


class CampaignEpisodes:
    """`labreplay.sdk.episodes.EpisodeSuite` for campaign specs."""

    name = "campaign"
    resume: Literal["continue", "replay"] = "replay"

    def __init__(self, max_invalid_streak: int = MAX_INVALID_STREAK) -> None:
        self.max_invalid_streak = max_invalid_streak

    def episodes(self, spec: EnvironmentSpec, options: Mapping[str, object]) -> list[Episode]:
        given = options.get("controls")
        controls = [str(c) for c in given] if isinstance(given, list | tuple) else []
        record = spec.body["record"]
        data = {
            "dataset_hashes": record["dataset_hashes"],
            "data_verified": record.get("data_verified", True),
        }
        # the controls asked for are recorded with the adaptive run: `store verify` then
        # sees a deleted control (a board needs them to rank the run)
        # (a lone branch under another name plays its agent as given: `run_branch`)
        first = str(options.get("branch", "adaptive"))
        adaptive = Episode(first, provenance={**data, "controls": sorted(controls)})
        # the random replicates first, then the no-evidence control (the order of every path)
        ordered = sorted(controls, key=lambda c: random_replicate(c) is None)
        return [adaptive, *(Episode(c, parent=first, provenance=data) for c in ordered)]

    def agent_for(
        self,
        spec: EnvironmentSpec,
        agent: ResolvedAgent,
        seed: int,
        options: Mapping[str, object],
        cache: ResponseCache | None,
    ) -> Agent:
        from labreplay.suites.campaign.agents import ORACLE_NAME, OracleAgent

        if agent.builtin == ORACLE_NAME:
            return OracleAgent(spec.body["evaluator"])
        made: Agent = agent.make()
        return made

    def play(self, spec: EnvironmentSpec, episode: Episode, agent: Agent, sink: EventSink) -> None:
        streak = self.max_invalid_streak
        if episode.parent is None:
            play_branch(spec, agent, sink, episode.seed, None, streak)
            return
        wrapped = control_agent(spec, episode.branch, agent, sink.parent, episode.seed)
        initial = pre_campaign_forecast(sink.parent)
        play_branch(spec, wrapped, sink, episode.seed, initial, streak)

    def score(
        self,
        spec: EnvironmentSpec,
        episode: Episode,
        events: Sequence[Event],
        calls: Sequence[Mapping[str, object]],
        seed: int,
    ) -> Scored:
        return score_branch(spec, events)


EPISODES = CampaignEpisodes()

__all__ = [
    "EPISODES",
    "CampaignEpisodes",
    "guarded_act",
    "guarded_forecast",
    "play_branch",
    "pre_campaign_forecast",
    "score_branch",
]
