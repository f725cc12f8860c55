"""One recorder for every suite's runs: open, append, resume, flush, log model calls, finish.

A `Recorder` owns one run's `Trajectory` (canonical JSON, hash-chained to the spec hash). With a
store it writes events in batches (one transaction per batch) and the model calls behind them;
without one (on an executor's worker) it keeps everything in memory; the runner then adopts
the events into a store-backed recorder (`take`), so only the runner ever writes the store.

Resuming a run starts from its stored events, verified against the spec hash first. Two modes:
- replay (default): the run is recomputed from the start (deterministically; LLM agents answer
  from the response cache) and each recomputed event must equal the stored one at its seq;
  only events past the stored prefix are written;
- continue (`resume()`): the verified prefix becomes the trajectory's start, and new events
  chain onto it (work already done is read back from `stored`, not recomputed).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from labreplay._hashing import canonical_json
from labreplay.compile.spec import EnvironmentSpec
from labreplay.errors import StoreError
from labreplay.runtime.event_types import JsonValue
from labreplay.runtime.header import HEADER_KIND, HeaderPayload, as_first_written, find_header
from labreplay.runtime.summary import call_accounting
from labreplay.runtime.trajectory import Trajectory
from labreplay.store.sqlite import RunOpening, Store

DEFAULT_BATCH = 500


class Recorder:
    def __init__(
        self,
        spec_hash: str,
        store: Store | None = None,
        run_id: str = "",
        *,
        batch: int = DEFAULT_BATCH,
        trajectory: Trajectory | None = None,
    ) -> None:
        if batch < 1:
            raise ValueError(f"batch must be at least 1, got {batch}")
        self.spec_hash, self.store, self.run_id, self.batch = spec_hash, store, run_id, batch
        self.trajectory = trajectory if trajectory is not None else Trajectory(spec_hash)
        self.stored: list[dict[str, Any]] = store.events(run_id) if store and run_id else []
        if self.stored:
            try:
                Trajectory.verify(self.stored, spec_hash)
            except StoreError as exc:
                raise StoreError(f"run {run_id}: stored prefix does not verify: {exc}") from exc
        self._synced = 0
        self._pending: list[dict[str, Any]] = []
        self.calls: list[dict[str, object]] = []  # every call logged (in memory, for the runner)
        self._calls_pending: list[dict[str, object]] = []
        self._next_call = 0
        self.existed = False

    def attach(self, trajectory: Trajectory) -> None:
        """Record `trajectory` (an environment's own, appended to by it) from its start."""
        self.trajectory = trajectory
        self._synced = 0

    # ------------------------------------------------------------------ appending
    def resume(self) -> list[dict[str, Any]]:
        """Continue mode: later appends chain onto the verified stored prefix, and model calls
        are numbered after the stored ones. Returns the stored events."""
        self.trajectory.extend_verified(self.stored)
        self._synced = len(self.stored)
        if self.store is not None and self.run_id:
            self._next_call = len(self.store.llm_calls(self.run_id))
        return self.stored

    def header_at(self, seq: int, payload: HeaderPayload) -> Mapping[str, object] | None:
        """The header event to append at `seq` (`labreplay.runtime.header`), or None when the
        stored prefix already reaches past `seq` without one: a run stored before headers
        resumes without one (a replayed header would differ from the stored event there).
        Resuming a run that has one keeps the version that opened it, so an upgrade alone
        does not change the chain."""
        if len(self.stored) <= seq:
            return payload
        stored = self.stored[seq]
        if stored["kind"] != HEADER_KIND:
            return None
        was = stored["payload"]
        header = as_first_written(payload, was)
        # this run's header as the chain would store it (canonical, scrubbed)
        fresh = Trajectory(self.spec_hash).append(HEADER_KIND, header)["payload"]
        changed = sorted(
            k
            for k in fresh.keys() | was.keys()
            if k != "labreplay_version"
            and canonical_json(was.get(k)) != canonical_json(fresh.get(k))
        )
        if changed:
            key = changed[0]
            raise StoreError(
                f"run {self.run_id}: it was opened with {key} {was.get(key)!r}, this run has "
                f"{fresh.get(key)!r} (the sandbox or the agent changed); rerun with --restart "
                "to start it afresh"
            )
        version = was.get("labreplay_version", payload["labreplay_version"])
        return {**header, "labreplay_version": str(version)}

    def aligned(self, events: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """`events` recorded elsewhere (a worker, which cannot see the store), re-chained to
        match the stored prefix's header: none when the stored run has none, the stored
        header's version when it has one. Unchanged when nothing differs."""
        found = find_header(events)
        if found is None or len(self.stored) <= found[0]:
            return [dict(e) for e in events]
        seq, payload = found
        stored = self.stored[seq]
        if stored["kind"] == HEADER_KIND:
            was = stored["payload"]
            version = was.get("labreplay_version")
            header = {**as_first_written(payload, was), "labreplay_version": version}
            if header == payload:
                return [dict(e) for e in events]
            kept: list[tuple[str, Mapping[str, object]]] = [
                (e["kind"], header if i == seq else e["payload"]) for i, e in enumerate(events)
            ]
        else:
            kept = [(e["kind"], e["payload"]) for i, e in enumerate(events) if i != seq]
        chain = Trajectory(self.spec_hash)
        for kind, body in kept:
            chain.append(kind, body)
        return chain.events

    def append(self, kind: str, payload: Mapping[str, object]) -> dict[str, Any]:
        event = self.trajectory.append(kind, payload)
        self.sync()
        return event

    def sync(self) -> None:
        """Take the events appended to the trajectory since the last sync (an environment may
        append to `trajectory` itself): check replayed ones, queue new ones, flush full batches."""
        events = self.trajectory.events
        known = len(self.stored)
        for event in events[self._synced :]:
            seq = event["seq"]
            if seq < known:
                if self.stored[seq]["hash"] != event["hash"]:
                    raise StoreError(
                        f"run {self.run_id}: recomputed event {seq} differs from the stored "
                        "one (non-deterministic agent or changed code); rerun with --restart"
                    )
            else:
                self._pending.append(event)
        self._synced = len(events)
        if len(self._pending) >= self.batch:
            self.flush()

    def take(self, events: Sequence[Mapping[str, object]]) -> None:
        """Adopt events recorded elsewhere (a worker's in-memory recorder) under the same spec:
        the chain is verified, aligned to the stored prefix's header (`aligned`), then synced
        like locally appended events."""
        if self.trajectory.events:
            raise StoreError(f"run {self.run_id}: take() needs an empty trajectory")
        Trajectory.verify(events, self.spec_hash)
        self.trajectory.events = self.aligned(events)
        self.sync()

    def log_calls(self, calls: Iterable[Mapping[str, object]]) -> None:
        """Number model calls in order across the run and queue them with the next flush."""
        for call in calls:
            row = {**call, "call_index": self._next_call}
            self._next_call += 1
            self.calls.append(row)
            self._calls_pending.append(row)

    def flush(self) -> None:
        if self.store is None:
            self._pending, self._calls_pending = [], []
            return
        if self._pending:
            texts = self.trajectory.texts
            self.store.append_events(
                self.run_id, self._pending, [texts.pop(e["seq"], None) for e in self._pending]
            )
            self._pending = []
        if self._calls_pending:
            self.store.record_llm_calls(self.run_id, self._calls_pending)
            self._calls_pending = []

    # ------------------------------------------------------------------ finishing
    @property
    def events(self) -> list[dict[str, Any]]:
        return self.trajectory.events

    @property
    def head(self) -> str:
        return self.trajectory.head

    def finish(
        self,
        status: str,
        summary: Mapping[str, object],
        scores: Mapping[str, float | None] | None = None,
        details: Mapping[str, object] | None = None,
    ) -> dict[str, object]:
        """Flush what is left, then scores and the run's final status (the `complete` mark is
        written last, so a run killed before it resumes). The summary gets the run's call
        accounting (`labreplay.runtime.summary`: every suite the same fields, derived here,
        never by a suite); returns the summary as recorded."""
        self.sync()
        self.flush()
        if self.store is None:
            return dict(summary)
        recorded: dict[str, object] = {**summary, **call_accounting(self._calls_as_logged())}
        if scores is not None or details is not None:
            self.store.put_scores(self.run_id, scores or {}, details)
        self.store.finish_run(self.run_id, status, recorded)
        return recorded

    def _calls_as_logged(self) -> list[Mapping[str, object]]:
        """The run's calls: every stored row (earlier sessions' included), each call logged in
        this session as it was logged (with the request fields the table does not keep)."""
        assert self.store is not None
        logged = {c["call_index"]: c for c in self.calls}
        return [logged.get(row["call_index"], row) for row in self.store.llm_calls(self.run_id)]


@dataclass(frozen=True)
class RunHeader:
    """Everything that identifies and describes a run row (its id is derived from it)."""

    spec: EnvironmentSpec
    branch: str
    agent: str
    agent_params: Mapping[str, Any]
    seed: int
    model: str | None = None
    endpoint: str | None = None
    parent_run_id: str | None = None
    extra_provenance: Mapping[str, Any] = field(default_factory=dict)


def _extra_provenance(header: RunHeader) -> dict[str, JsonValue]:
    """What a run row's provenance records of the run (beside the process's versions)."""
    return {"spec_hash": header.spec.spec_hash, **header.extra_provenance}


def open_recorder(store: Store, header: RunHeader, *, batch: int = DEFAULT_BATCH) -> Recorder:
    """Store the spec (file form, so it re-verifies), open or find the run, and return its
    recorder (`existed` tells a resume)."""
    spec = header.spec
    store.put_spec(spec.suite, spec.protocol, spec.spec_id, spec.spec_hash, spec.to_file_text())
    run_id, existed = store.open_run(
        suite=spec.suite,
        spec_hash=spec.spec_hash,
        spec_id=spec.spec_id,
        branch=header.branch,
        agent=header.agent,
        agent_params=header.agent_params,
        seed=header.seed,
        model=header.model,
        endpoint=header.endpoint,
        parent_run_id=header.parent_run_id,
        extra_provenance=_extra_provenance(header),
    )
    recorder = Recorder(spec.spec_hash, store, run_id, batch=batch)
    recorder.existed = existed
    return recorder


def open_run(
    store: Store, header: RunHeader, *, batch: int = DEFAULT_BATCH
) -> tuple[Recorder, str]:
    """Open a run for recording, the one place every suite's resume rules live.

    Returns (recorder, status). "complete": the run finished earlier; read it back from the
    store, do not record it again. "running": record it; a run found partial resumes (replay
    or `resume()`), and a run found `failed` (e.g. every model call failed, or its agent
    stopped answering) was reset first, so it starts afresh with a fresh recorder.
    """
    recorder = open_recorder(store, header, batch=batch)
    status = store.run(recorder.run_id).status if recorder.existed else "running"
    if status == "failed":
        opening = RunOpening(header.model, header.endpoint, _extra_provenance(header))
        store.reset_run(recorder.run_id, opening)
        recorder = Recorder(header.spec.spec_hash, store, recorder.run_id, batch=batch)
        status = "running"
    return recorder, "complete" if status == "complete" else "running"


__all__ = ["DEFAULT_BATCH", "Recorder", "RunHeader", "open_recorder", "open_run"]
