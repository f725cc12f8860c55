"""The episode protocol: what a suite declares so that the core runner plays and records it.

A suite never opens, resumes, judges or finishes a run. It says which episodes a spec has
(`episodes`), builds its agent where the episode plays (`agent_for`), plays one episode into an
`EventSink` (`play`), and scores a finished episode from its events alone (`score`, pure; the
runner and `store verify` call the same function). The runner (`labreplay.engine.runner`) owns
everything else on every path and executor: the run key, skipping a finished run, resume, the
header event, the response cache, the failure boundary, the failed-run rule and the store.

Nothing here writes a store: an `EventSink` has no store behind it that a suite can reach.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol, TypedDict, TypeVar, runtime_checkable

if TYPE_CHECKING:
    from labreplay.agents.contracts import Described, ResponseCache
    from labreplay.agents.resolve import ResolvedAgent
    from labreplay.compile.spec import EnvironmentSpec
    from labreplay.runtime.failure import RunHealth
    from labreplay.runtime.trajectory import Trajectory

# every agent has a name and its parameters (`labreplay.agents.contracts.Described`)
AgentT = TypeVar("AgentT", bound="Described")

Event = Mapping[str, object]


@dataclass(frozen=True)
class Episode:
    """One run of a spec: its branch, the branch it is derived from (`parent`: a matched
    control reads its parent's events and is not played beside a failed parent), the facts
    that make it its own run beyond spec, agent and seed (`identity`, hashed into the run id),
    what the runs row records besides the agent (`provenance`), and which of the spec's units
    it plays (`scope`; None: all of them). `seed` is the run seed (the runner sets it)."""

    branch: str = "main"
    parent: str | None = None
    seed: int = 0
    identity: Mapping[str, object] = field(default_factory=dict)
    provenance: Mapping[str, object] = field(default_factory=dict)
    scope: tuple[str, ...] | None = None


class EventSink(Protocol):
    """Where an episode's events and model calls go.

    `stored`: what an earlier session recorded of this episode (a suite that continues runs,
    `resume = "continue"`, skips the work those events did); `parent`: the parent episode's
    events; `header()`: the header event to place at the current position of the chain (None:
    none belongs there, e.g. a continued run has it already); `emit` appends an event, or
    `follow` records a `Trajectory` the suite's environment appends to; `advance(n)` says that
    `n` more units of work are done and records what is new. A suite whose run health is not
    written in its events counts it into `health` as it plays (a replayed run plays whole), and
    `facts` holds what the play observed that the run summary records (e.g. its caps)."""

    health: RunHealth
    facts: dict[str, object]

    @property
    def stored(self) -> Sequence[Event]: ...

    @property
    def parent(self) -> Sequence[Event]: ...

    def header(self) -> Mapping[str, object] | None: ...

    def emit(self, kind: str, payload: Mapping[str, object]) -> None: ...

    def follow(self, trajectory: Trajectory) -> None: ...

    def calls(self, records: Iterable[Mapping[str, object]]) -> None: ...

    def advance(self, done: int = 1) -> None: ...


class Scored(TypedDict):
    """A finished episode's scores, read from its events and model calls alone."""

    scores: dict[str, float | None]  # the `scores` rows (None: no such question / value)
    details: dict[str, object]  # metric -> the detail stored beside it
    summary: dict[str, object]  # the suite's fields of the run summary
    # what the failed-run rule reads; None: what the play counted into the sink
    health: RunHealth | None


@runtime_checkable
class EpisodeSuite(Protocol[AgentT]):
    """A suite as the runner plays it."""

    name: str
    # "continue": a resumed episode keeps its stored events and `play` skips the work they did;
    # "replay": it is recomputed from the start and must reproduce them (a changed one fails)
    resume: Literal["continue", "replay"]

    def episodes(
        self, spec: EnvironmentSpec, options: Mapping[str, object]
    ) -> Sequence[Episode]: ...

    def agent_for(
        self,
        spec: EnvironmentSpec,
        agent: ResolvedAgent,
        seed: int,
        options: Mapping[str, object],
        cache: ResponseCache | None,
    ) -> AgentT:
        """The agent that plays `spec`, built where the episode plays (picklable inputs)."""
        ...

    def play(
        self, spec: EnvironmentSpec, episode: Episode, agent: AgentT, sink: EventSink
    ) -> None: ...

    def score(
        self,
        spec: EnvironmentSpec,
        episode: Episode,
        events: Sequence[Event],
        calls: Sequence[Mapping[str, object]],
        seed: int,
    ) -> Scored: ...


__all__ = ["Episode", "EpisodeSuite", "Event", "EventSink", "Scored"]
