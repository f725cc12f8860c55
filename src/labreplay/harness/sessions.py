"""One served campaign per MCP session, in slots a reconnecting harness takes back.

Over streamable HTTP several harnesses may connect at once. Each MCP session is served by its
own handler (its own campaign: its own worker, channel and runs), so a session can neither see
nor act on another's state. Handlers live in numbered slots: a new session takes the lowest
slot whose owner session has ended, continuing that slot's campaign where it stopped (a harness
that disconnects and reconnects resumes), or opens a new slot. The factory decides what a slot
is (the campaign server plays slot 1 as `--agent-name` and slot k as `NAME-k`, so concurrent
sessions never write the same runs).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Mapping
from typing import Any

Handler = Callable[[str, Mapping[str, Any] | None], Mapping[str, Any]]


class SessionSlots:
    """The handler of each live MCP session, built by `factory(slot)` (slots from 1)."""

    def __init__(self, factory: Callable[[int], Handler]) -> None:
        self._factory = factory
        self._handlers: dict[int, Handler] = {}
        self._owners: dict[int, str] = {}  # slot -> the MCP session id that holds it
        self._lock = threading.Lock()

    def handler_for(self, session_id: str, live: Collection[str]) -> Handler:
        """The handler of the session `session_id` (claiming a slot at its first call);
        `live` holds the ids of the sessions still open (a slot whose owner is not among them
        is free)."""
        with self._lock:
            for slot, owner in self._owners.items():
                if owner == session_id:
                    return self._handlers[slot]
            free = [s for s in sorted(self._handlers) if self._owners.get(s) not in live]
            slot = free[0] if free else len(self._handlers) + 1
            if slot not in self._handlers:
                self._handlers[slot] = self._factory(slot)
            self._owners[slot] = session_id
            return self._handlers[slot]
