"""The two event sinks the runner hands a suite's `play`: one that records as it goes (the
episode plays here) and one that keeps everything in memory (the episode plays on another
executor; the runner records what comes back). Neither gives a suite the store."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from labreplay.runtime.recorder import Recorder
    from labreplay.sdk.episodes import Event


class RecordingSink:
    """Writes through the runner's recorder (batched, so a killed run resumes)."""

    def __init__(
        self, recorder: Recorder, stored: Sequence[Event], progress: Callable[[int], None] | None
    ) -> None:
        self._recorder = recorder
        self._stored = stored
        self._progress = progress

    @property
    def stored(self) -> Sequence[Event]:
        return self._stored

    def emit(self, kind: str, payload: Mapping[str, object]) -> None:
        self._recorder.append(kind, payload)

    def calls(self, records: Iterable[Mapping[str, object]]) -> None:
        self._recorder.log_calls(records)
        self._recorder.flush()  # the calls of a batch beside its events, before the next

    def advance(self, done: int = 1) -> None:
        self._recorder.flush()
        if self._progress is not None:
            self._progress(done)


class MemorySink:
    """Keeps an episode's new events and calls for the runner (picklable with its contents)."""

    def __init__(self, stored: Sequence[Event]) -> None:
        self._stored = list(stored)
        self.events: list[tuple[str, dict[str, object]]] = []
        self.call_records: list[dict[str, object]] = []
        self.done = 0

    @property
    def stored(self) -> Sequence[Event]:
        return self._stored

    def emit(self, kind: str, payload: Mapping[str, object]) -> None:
        self.events.append((kind, dict(payload)))

    def calls(self, records: Iterable[Mapping[str, object]]) -> None:
        self.call_records.extend(dict(r) for r in records)

    def advance(self, done: int = 1) -> None:
        self.done += done


__all__ = ["MemorySink", "RecordingSink"]
