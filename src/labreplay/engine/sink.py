"""The two event sinks the runner hands a suite's `play`: one that records as it goes (the
episode plays here) and one that keeps everything in memory (the episode plays on another
executor; the runner records what comes back). Neither gives a suite the store."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from labreplay.runtime.failure import RunHealth
from labreplay.runtime.trajectory import Trajectory

if TYPE_CHECKING:
    from labreplay.engine.episodes import Event
    from labreplay.runtime.event_types import HeaderPayload
    from labreplay.runtime.recorder import Recorder


class _Sink:
    """What both sinks hold: the run's stored events, its header, its parent's events, and
    the health and facts `play` notes."""

    def __init__(self, stored: Sequence[Event], header: HeaderPayload, parent: Sequence[Event]):
        self._stored = stored
        self._header = header
        self._parent = parent
        self.health = RunHealth()
        self.facts: dict[str, object] = {}

    @property
    def stored(self) -> Sequence[Event]:
        return self._stored

    @property
    def parent(self) -> Sequence[Event]:
        return self._parent


class RecordingSink(_Sink):
    """Writes through the runner's recorder (in batches, so a killed run resumes)."""

    def __init__(
        self,
        recorder: Recorder,
        stored: Sequence[Event],
        header: HeaderPayload,
        parent: Sequence[Event],
        progress: Callable[[int], None] | None,
    ) -> None:
        super().__init__(stored, header, parent)
        self._recorder = recorder
        self._progress = progress
        self._continued = len(recorder.trajectory.events) > 0  # a resumed (continued) run

    @property
    def trajectory(self) -> Trajectory:
        return self._recorder.trajectory

    def header(self) -> Mapping[str, object] | None:
        seq = len(self._recorder.trajectory.events)
        if self._continued:  # already placed: only checked against this run
            found = next((i for i, e in enumerate(self._stored) if e["kind"] == "header"), None)
            if found is not None:
                self._recorder.header_at(found, self._header)
            return None
        return self._recorder.header_at(seq, self._header)

    def emit(self, kind: str, payload: Mapping[str, object]) -> None:
        self._recorder.append(kind, payload)

    def follow(self, trajectory: Trajectory) -> None:
        self._recorder.attach(trajectory)

    def calls(self, records: Iterable[Mapping[str, object]]) -> None:
        self._recorder.log_calls(records)

    def advance(self, done: int = 1) -> None:
        self._recorder.sync()
        if done:
            self._recorder.flush()
            if self._progress is not None:
                self._progress(done)


class MemorySink(_Sink):
    """Keeps an episode's chain and calls for the runner (picklable with its contents)."""

    def __init__(
        self,
        spec_hash: str,
        stored: Sequence[Event],
        header: HeaderPayload,
        parent: Sequence[Event],
    ) -> None:
        super().__init__(list(stored), header, list(parent))
        self.trajectory = Trajectory(spec_hash)
        if stored:
            self.trajectory.extend_verified(stored)
        self.call_records: list[dict[str, object]] = []

    def header(self) -> Mapping[str, object] | None:
        return None if self._stored else self._header

    def emit(self, kind: str, payload: Mapping[str, object]) -> None:
        self.trajectory.append(kind, payload)

    def follow(self, trajectory: Trajectory) -> None:
        self.trajectory = trajectory

    def calls(self, records: Iterable[Mapping[str, object]]) -> None:
        self.call_records.extend(dict(r) for r in records)

    def advance(self, done: int = 1) -> None:
        del done  # progress is counted where the results arrive


__all__ = ["MemorySink", "RecordingSink"]
