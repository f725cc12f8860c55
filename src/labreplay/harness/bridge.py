"""A bridge between an ordinary in-process run and a harness that lives elsewhere.

The run (the suite's own `run`, through the core runner: its events, hash chain, controls and
scores) executes in a worker thread with a *bridge agent* as its policy. Every time the run
calls a method of the suite's agent contract, the bridge agent posts the request on a
`Channel` and blocks until a tool call (MCP) delivers the harness's reply. Because the run is
the in-process one, a harness that replies like a Python agent records exactly what that
Python agent records.

Resume: every reply is kept in the store's response cache under a key bound to the episode
(harness name, params, spec, branch, seed), the call's index and the hash of the request; a
restarted session answers its completed calls from there (like an LLM agent's cached calls),
so the runner's recomputed prefix equals the stored one and the harness continues where it
stopped.
"""

from __future__ import annotations

import json
import threading
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from labreplay._hashing import sha256_json
from labreplay.agents.base import ResponseCache

ISOLATION = "mcp"


@dataclass
class Request:
    """One call of the runner to its policy, waiting for the harness."""

    kind: str  # "act" | "forecast" | "answer"
    payload: dict[str, Any]
    context: dict[str, Any] = field(default_factory=dict)
    index: int = 0


class Channel:
    """The rendezvous of the worker (policy side) and the tool calls (harness side).

    At any moment the channel holds at most one pending `Request`; `finished` is set when the
    worker's run ends (its value is what a `done` reply may show: never an evaluator field).
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._pending: Request | None = None
        self._reply: object = None
        self._has_reply = False
        self._count = 0
        self.finished: dict[str, Any] | None = None
        self.failure: str | None = None
        self.context: dict[str, Any] = {}
        self.episodes: list[dict[str, Any]] = []  # every context set, in order

    # ------------------------------------------------------------------ worker side
    def ask(self, kind: str, payload: Mapping[str, object]) -> object:
        with self._cond:
            self._count += 1
            self._pending = Request(kind, dict(payload), dict(self.context), self._count)
            self._has_reply = False
            self._cond.notify_all()
            while not self._has_reply:
                self._cond.wait()
            reply, self._reply, self._has_reply = self._reply, None, False
            return reply

    def finish(self, summary: Mapping[str, object], failure: str | None = None) -> None:
        with self._cond:
            self._pending = None
            self.finished = dict(summary)
            self.failure = failure
            self._cond.notify_all()

    def set_context(self, **context: object) -> None:
        with self._cond:
            self.context.update(context)
            self.episodes.append(dict(self.context))

    # ------------------------------------------------------------------ harness side
    def current(self, timeout: float | None = None) -> Request | None:
        """The pending request (waiting for one), or None once the run is finished."""
        with self._cond:
            self._cond.wait_for(
                lambda: self._pending is not None or self.finished is not None, timeout
            )
            return self._pending

    def reply(self, value: object, timeout: float | None = None) -> Request | None:
        """Deliver the harness's reply to the pending request and wait for the next one."""
        with self._cond:
            self._cond.wait_for(
                lambda: self._pending is not None or self.finished is not None, timeout
            )
            answered = self._pending
            if answered is None:
                return None
            self._pending = None
            self._reply, self._has_reply = value, True
            self._cond.notify_all()
            self._cond.wait_for(
                lambda: self._pending is not None or self.finished is not None, timeout
            )
            return self._pending


def start_worker(channel: Channel, work: Callable[[], Mapping[str, object]]) -> threading.Thread:
    """Run `work` (the ordinary run path) in a daemon thread; its summary (or a one-line
    failure) ends the channel. A bug in the run is reported to the harness, never a crash of
    the server."""

    def target() -> None:
        try:
            summary = work()
        except Exception as exc:  # reported through the channel; the server keeps serving
            last = traceback.format_exception_only(type(exc), exc)[-1].strip()
            channel.finish({}, failure=last)
            return
        channel.finish(summary)

    thread = threading.Thread(target=target, name="labreplay-bridge", daemon=True)
    thread.start()
    return thread


class BridgeAgent:
    """A policy whose every decision comes from the harness through a `Channel`.

    `name` is the declared harness name; `isolation` ("mcp") goes into run provenance as
    `agent_isolation`. Each method of the suite's contract (`methods`, lifecycle aside) is
    forwarded to the harness unchanged, so a malformed reply is the suite's invalid action
    (recorded), exactly as in-process. The runner says which episode is played
    (`begin_episode`): the harness sees it as its session, and the cache keys of two episodes
    never collide.
    """

    endpoint: str | None = None  # a harness has no endpoint of ours

    def __init__(
        self,
        channel: Channel,
        name: str,
        params: Mapping[str, object],
        model: str | None = None,
        methods: tuple[str, ...] = (),
        isolation: str = ISOLATION,
    ) -> None:
        self.channel, self.isolation = channel, isolation
        self.methods = methods  # forwarded (see __getattr__)
        self.model = model  # declared by the harness; recorded on the run row
        self.name = name
        self._params = dict(params)
        self.cache: ResponseCache | None = None
        self.episode: dict[str, object] = {}
        self.calls_made = 0

    def params(self) -> dict[str, object]:
        return dict(self._params)

    def reset(self, seed: int) -> None:
        """Answered by the bridge (a new episode is announced by `begin_episode`)."""

    def bind_store(self, cache: ResponseCache | None) -> None:
        self.cache = cache

    def begin_episode(self, spec_id: str, spec_hash: str, branch: str, seed: int) -> None:
        self.episode = {"spec_hash": spec_hash, "branch": branch, "seed": seed}
        self.calls_made = 0
        self.channel.set_context(spec_id=spec_id, spec_hash=spec_hash, branch=branch)

    def _key(self, kind: str, payload: Mapping[str, object]) -> str:
        return "harness:" + sha256_json(
            {
                "harness": self.name,
                "params": self._params,
                "episode": self.episode,
                "call": self.calls_made,
                "kind": kind,
                "request": sha256_json(payload),
            }
        )

    def _call(self, kind: str, payload: Mapping[str, object]) -> object:
        key = self._key(kind, payload)
        self.calls_made += 1
        if self.cache is not None:
            hit = self.cache.cached_response(key)
            if hit is not None:
                text = hit["reply_json"]  # written below as a str
                if not isinstance(text, str | bytes | bytearray):
                    raise TypeError(f"cached reply {key}: reply_json is not JSON text")
                return json.loads(text)
        reply = self.channel.ask(kind, payload)
        if self.cache is not None:
            # as JSON text: the store's canonical JSON rounds floats, a replayed reply must not
            self.cache.cache_response(
                key, f"harness:{self.name}", {"reply_json": json.dumps(reply, allow_nan=True)}
            )
        return reply

    def __getattr__(self, name: str) -> Callable[[Mapping[str, object]], object]:
        """A method of the suite's contract (`methods`): forwarded to the harness. Only
        declared names, so the optional capabilities the core probes for (`close`,
        `drain_calls`, ...) are not mistaken for the harness's."""
        if name.startswith("_") or name not in self.__dict__.get("methods", ()):
            raise AttributeError(name)

        def forward(payload: Mapping[str, object]) -> object:
            return self._call(name, payload)

        return forward


__all__ = ["ISOLATION", "BridgeAgent", "Channel", "Request", "start_worker"]
