"""The public agent contracts: one per suite, plus the optional capabilities an agent declares.

Every agent, whatever its suite, has a `name` (a short, stable label that goes into run
provenance and onto the boards) and `params()` (a JSON object describing its configuration;
recorded with every run, so it must never hold a secret such as an API key).

- campaign: `CampaignAgent` -- `reset(seed)`, `act(observation) -> action`,
  `forecast(snapshot) -> panel forecast`;
- conditions: `QuestionAgent` -- `answer(question) -> answer`;
- configsearch: `Optimizer` -- ask/tell: `suggest(history) -> configuration`,
  `observe(result)`; BO, random and exhaustive search are three implementations.

Everything that crosses a contract is plain JSON (dicts, lists, str, int, float, bool, None),
so the same agent runs in-process, in a child process (`--isolate`) or on a Dask worker.

Optional capabilities are declared by implementing a small protocol (and may be declared
explicitly by subclassing it), never discovered by probing attribute names:

- `RecordsCalls`: `drain_calls()` returns the model calls made since the last drain
  (`CallRecord`s, stored in the `llm_calls` table; a run whose every call failed is `failed`);
- `UsesResponseCache`: `bind_store(cache)` lets a model-backed agent answer calls it already
  completed from the results store, so a resumed run does not pay for them twice;
- `AnswersInBatches`: `answer_many(questions)` (conditions) answers several questions at once;
- `ModelBacked`: `model` and `endpoint` are recorded on the run row;
- `Isolated`: `isolation` says where the agent's code ran ("in-process" or "subprocess");
- `Closable`: `close()` releases what the agent holds; every run path calls it when the run
  is over (an isolated agent's child process never outlives its run);
- `PlaysEpisodes`: `begin_episode(...)` is told which episode (spec, branch, seed) it is about
  to play (a served harness's bridge labels its session and its cached replies by it);
- `ScoresSuggestions` (configsearch): `last_acquisition`, the score of the last suggestion.

Runnable example (campaign; the README's "Bring your own agent" has one per suite):

    class FirstLegalAction:
        name = "first-legal"

        def params(self):
            return {}

        def reset(self, seed):
            pass

        def act(self, observation):
            # the first permitted action type, with its schema's required fields
            ...

        def forecast(self, snapshot):
            return {"forecasts": [{"experiment_id": e["experiment_id"], "p_valid": 0.5}
                                  for e in snapshot["panel"]]}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import (
    TYPE_CHECKING,
    Any,
    Literal,
    NotRequired,
    Protocol,
    TypedDict,
    runtime_checkable,
)

if TYPE_CHECKING:
    from labreplay.runtime.event_types import JsonObject

# A JSON value as agents send and receive it.
JSONValue = str | int | float | bool | None | list["JSONValue"] | dict[str, "JSONValue"]


# --------------------------------------------------------------------------- shared
class CallRecord(TypedDict, total=False):
    """One model call, as stored in the `llm_calls` table."""

    call_index: int
    request_hash: str
    model: str
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_s: float
    finish_reason: str | None
    retries: int
    error: str | None
    cached: bool
    # What the call was for ("policy", "checkpoint", "answer"), the provider's own accounting
    # and why its reply could not be used (None when it could).
    purpose: str | None
    cached_tokens: int | None
    resolved_model: str | None
    parse_error: str | None
    max_tokens: int | None
    prompt_chars: int | None
    reply_chars: int | None
    # The request field that carried `max_tokens` when it was not "max_tokens" (a reasoning
    # model's "max_completion_tokens"); absent for the ordinary field.
    token_param: str
    # USD this call spent at the run's prices (`llm_prices`): provider-cached prompt tokens at
    # the cached rate, 0 for a response-cache hit, None when the model's price is unknown.
    cost_usd: float | None
    # Prompt tokens written to the provider's prompt cache (Anthropic), priced at its cache
    # write rate; absent where the provider reports none.
    cache_write_tokens: int


@runtime_checkable
class ResponseCache(Protocol):
    """Where LLM clients look up and keep completed responses: the results store itself (in
    the driver process) or an in-memory snapshot of it (`labreplay.execute.driver.MemoryCache`)
    on a worker, whose new entries the driver writes back."""

    def cached_response(self, key: str) -> JsonObject | None: ...

    def cache_response(self, key: str, model: str, response: JsonObject) -> None: ...


@runtime_checkable
class Described(Protocol):
    """What every agent has: a provenance name and its JSON parameters (never secrets)."""

    name: str

    def params(self) -> dict[str, Any]: ...


# --------------------------------------------------------------------------- campaign
class EvidenceItem(TypedDict, total=False):
    """One revealed evidence item or expert review (`last_result["revealed"]`, and in the
    state's `experiments[id]["revealed"]` / `["review"]`): a recorded item carries `summary`
    and `content`, an item the record lacks carries `missing` instead."""

    item_id: str  # "KIND:OWNER:INDEX", or "KIND:OWNER:missing"
    kind: str  # the evidence kind bought ("expert_review" for a review)
    summary: str  # one line a chemist would write about the item
    content: dict[str, Any]  # the item's quantities (raw arrays reduced to what is read off)
    missing: str  # why the record holds no item of this kind (typed-missing, not a failure)


class ActionResult(TypedDict):
    """How the environment took the previous action (`observation["last_result"]`)."""

    accepted: bool  # False: the action was rejected (recorded as invalid; nothing changed)
    reason: str  # "ok", or why the action was rejected
    revealed: NotRequired[EvidenceItem]  # what an accepted inspection or review revealed


class Observation(TypedDict):
    """What a campaign agent sees before each action.

    `action_schema` is the JSON Schema of the actions permitted now (a `oneOf` over action
    types, each with a `type` const); `state` is the agent-visible campaign state.
    """

    phase: str  # "select", "prior_forecast", "investigate", "update_required" or "done"
    rules: str  # the campaign rules in prose (the same every turn)
    action_schema: dict[str, Any]  # JSON Schema: a `oneOf` over the actions permitted now
    state: dict[str, Any]  # the agent-visible campaign state
    last_result: dict[str, Any] | None  # an ActionResult, or None on the first turn
    step: int  # actions taken so far in this campaign, rejected ones included


class PanelEntry(TypedDict):
    experiment_id: str  # a held-out query to forecast
    descriptors: dict[str, Any]  # what is known before the experiment: precursors, target, ...


class Snapshot(TypedDict):
    """An evaluator panel checkpoint: forecast every listed experiment (no budget, no state
    change). `state` is a hash-bound copy of the agent-visible state (`state_hash`)."""

    kind: str  # "panel_checkpoint"
    instructions: str  # what to answer, in prose
    response_schema: dict[str, Any]  # JSON Schema of the reply ({"forecasts": [...]})
    state: dict[str, Any]  # the agent-visible state, as in the observation
    state_hash: str  # sha256 of `state` (the checkpoint is bound to it)
    panel: list[dict[str, Any]]  # PanelEntry objects


@runtime_checkable
class CampaignAgent(Protocol):
    """A campaign policy (suite `campaign`).

    `act` returns one JSON object meant to satisfy `observation["action_schema"]`; the
    environment validates it and records a bad one (or an exception raised by `act`) as an
    invalid action, scored, never a crash. `forecast` answers a panel checkpoint with
    `{"forecasts": [{"experiment_id": ..., "p_valid": ..., ...}, ...]}`; a missing or bad
    forecast gets the declared fallback. `reset(seed)` starts a new campaign: an agent that is
    deterministic given its seed gives byte-identical trajectories.
    """

    name: str

    def params(self) -> dict[str, Any]: ...

    def reset(self, seed: int) -> None: ...

    def act(self, observation: Mapping[str, Any]) -> dict[str, Any]: ...

    def forecast(self, snapshot: Mapping[str, Any]) -> dict[str, Any]: ...


# --------------------------------------------------------------------------- conditions
@runtime_checkable
class QuestionAgent(Protocol):
    """A conditions agent (suite `conditions`): answers one question view at a time.

    `answer(question)` returns `{"option": i}` (multiple choice, 0-based),
    `{"choices": {slot: i}}` (fill in the blanks, 0-based per slot) or `{"text": reply}` (free
    text the suite parses). An exception or an unreadable answer is recorded as that
    question's wrong answer.
    """

    name: str

    def params(self) -> dict[str, Any]: ...

    def answer(self, question_view: dict[str, Any]) -> dict[str, Any]: ...


# --------------------------------------------------------------------------- configsearch
class Configuration(TypedDict, total=False):
    """A configsearch candidate: a data configuration, and a model when the problem searches
    (model, configuration) pairs; in a history, with its place and numeric encoding."""

    r: float  # fraction of the training data from the second source
    n: int  # training size
    s: int  # test size
    model: str  # the property model (only where the problem searches pairs: best-model)
    index: int  # its place in the problem's fixed candidate order
    features: list[float]  # numeric encoding for surrogates: axes scaled to [0, 1], one-hot models


class Trial(TypedDict, total=False):
    """One evaluated suggestion, as `observe` receives it and `history["trials"]` lists it."""

    step: int  # its 1-based step in the search
    phase: str  # "init" for the shared initial design, else the optimiser's name
    configuration: Configuration  # the suggestion as evaluated ({"r", "n", "s"} + "model")
    index: int  # as in the candidates
    features: list[float]  # as in the candidates
    objective: float  # the problem's value there (see `OptimizerHistory["direction"]`)
    maes: dict[str, float]  # the per-model errors behind it


class OptimizerHistory(TypedDict, total=False):
    """Everything an optimiser needs to propose the next configuration (plain JSON)."""

    problem: str  # "best-model", "discriminate", "closest" or "which-model"
    direction: Literal["minimize", "maximize"]  # whether the objective is minimised or maximised
    models: list[str]  # the property models compared
    # the legal candidates not evaluated yet, in the problem's fixed order (infeasible ones are
    # removed before any cost is spent)
    candidates: list[Configuration]
    n_candidates: int  # how many candidates the problem has in all
    trials: list[Trial]  # every evaluation so far, the shared initial design first
    budget: int  # the run's steps
    budget_left: int  # the suggestions still to make, this one included
    step: int  # the 1-based step being asked for
    seed: int  # the run's seed


@runtime_checkable
class Optimizer(Protocol):
    """A configsearch optimiser (suite `configsearch`): ask/tell.

    The search asks `suggest(history)` for the next configuration (one of
    `history["candidates"]`; returning the candidate dict itself is fine), evaluates it on the
    recorded references or by fitting the models, and tells the result through
    `observe(result)` (the shared initial design's trials included). Budget, initial design
    and scoring are the suite's, identical for every optimiser: BO, random search and
    exhaustive search are three implementations of this contract. A suggestion that is not an
    untried candidate, or an exception raised by `suggest`, is recorded as an invalid step
    (the step is spent, nothing is evaluated).

    Runnable example (the first untried candidate; the README has a random-forest one):

        class FirstCandidate:
            name = "first-candidate"

            def params(self):
                return {}

            def suggest(self, history):
                return history["candidates"][0]

            def observe(self, result):
                pass
    """

    name: str

    def params(self) -> dict[str, Any]: ...

    def suggest(self, history: OptimizerHistory) -> Mapping[str, Any]: ...

    def observe(self, result: Trial) -> None: ...


@runtime_checkable
class ScoresSuggestions(Protocol):
    """An optimiser that records how it scored its last suggestion (e.g. BO's acquisition
    value), stored on the step; None when it did not score one."""

    last_acquisition: float | None


# --------------------------------------------------------------------------- capabilities
@runtime_checkable
class RecordsCalls(Protocol):
    """An agent that makes model calls and hands their records over (`llm_calls`)."""

    def drain_calls(self) -> list[CallRecord]: ...


@runtime_checkable
class UsesResponseCache(Protocol):
    """A model-backed agent that can answer completed calls from the results store."""

    def bind_store(self, store: ResponseCache | None) -> None: ...


@runtime_checkable
class AnswersInBatches(Protocol):
    """A question agent that answers several questions at once (e.g. concurrent LLM calls)."""

    def answer_many(self, views: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]: ...


@runtime_checkable
class ModelBacked(Protocol):
    """An agent backed by a model server: `model` and `endpoint` go onto the run row."""

    model: str
    endpoint: str | None


@runtime_checkable
class Isolated(Protocol):
    """An agent that says where its code runs: "in-process" or "subprocess" (--isolate)."""

    isolation: str


@runtime_checkable
class Closable(Protocol):
    """An agent holding a resource (e.g. an isolated agent's child process): the run path
    calls `close()` once the run is over, so nothing it started outlives the run."""

    def close(self) -> None: ...


@runtime_checkable
class PlaysEpisodes(Protocol):
    """An agent told which episode it is about to play (the runner says it before `play`)."""

    def begin_episode(self, spec_id: str, spec_hash: str, branch: str, seed: int) -> None: ...


def begin_episode(
    agent: Described | None, spec_id: str, spec_hash: str, branch: str, seed: int
) -> None:
    """Tell an agent that declares `PlaysEpisodes` which episode it plays (else a no-op)."""
    if isinstance(agent, PlaysEpisodes):
        agent.begin_episode(spec_id, spec_hash, branch, seed)


def close_agent(agent: Described | None) -> None:
    """Release what a closable agent holds (a no-op for any other agent)."""
    if isinstance(agent, Closable):
        agent.close()


def acquisition_of(agent: Described | None) -> float | None:
    """The score an optimiser gave its last suggestion, if it declares one."""
    if isinstance(agent, ScoresSuggestions) and agent.last_acquisition is not None:
        return float(agent.last_acquisition)
    return None


def model_of(agent: Described | None) -> tuple[str | None, str | None]:
    """(model, endpoint) of a model-backed agent, (None, None) otherwise."""
    if isinstance(agent, ModelBacked):
        return agent.model, agent.endpoint
    return None, None


def isolation_of(agent: Described | None) -> str:
    """Where the agent's code ran ("in-process" unless it declares otherwise)."""
    return str(agent.isolation) if isinstance(agent, Isolated) else "in-process"


def sandbox_of(agent: Described | None) -> str:
    """The sandbox the agent's code ran in: "bwrap" for an isolated agent in bubblewrap,
    else "none" (an in-process agent, or an isolated one where no sandbox could be had)."""
    sandbox = getattr(agent, "sandbox", None)
    return sandbox if isinstance(sandbox, str) else "none"


def bind_response_cache(agent: Described | None, cache: ResponseCache | None) -> None:
    """Give a model-backed agent the response cache (a no-op for any other agent)."""
    if isinstance(agent, UsesResponseCache):
        agent.bind_store(cache)


def drain_calls(agent: Described | None) -> list[CallRecord]:
    """Model-call records an agent collected since the last drain ([] for non-LLM agents)."""
    if isinstance(agent, RecordsCalls):
        return agent.drain_calls()
    return []


# The campaign contract's historical name.
Agent = CampaignAgent

__all__ = [
    "ActionResult",
    "Agent",
    "AnswersInBatches",
    "CallRecord",
    "CampaignAgent",
    "Closable",
    "Configuration",
    "Described",
    "EvidenceItem",
    "Isolated",
    "JSONValue",
    "ModelBacked",
    "Observation",
    "Optimizer",
    "OptimizerHistory",
    "PanelEntry",
    "PlaysEpisodes",
    "QuestionAgent",
    "RecordsCalls",
    "ResponseCache",
    "ScoresSuggestions",
    "Snapshot",
    "Trial",
    "UsesResponseCache",
    "acquisition_of",
    "begin_episode",
    "bind_response_cache",
    "close_agent",
    "drain_calls",
    "isolation_of",
    "model_of",
    "sandbox_of",
]
