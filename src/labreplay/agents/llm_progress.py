"""A progress line for LLM runs on stderr (never stdout: `--json` stays clean), so a slow
endpoint is visibly slow instead of silent; at most every 10 s on a terminal, 30 s in a log.
"""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from labreplay.agents.contracts import CallRecord


class CallProgress:
    def __init__(
        self, label: str, every_s: float | None = None, stream: TextIO | None = None
    ) -> None:
        self.label = label
        if every_s is None:
            every_s = 10.0 if (stream or sys.stderr).isatty() else 30.0
        self.every_s = every_s
        self.stream = stream
        self.calls = 0
        self.retries = 0
        self.failed = 0
        self.last_error = ""
        self._started = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ from the clients
    def call(self, record: CallRecord) -> None:
        with self._lock:
            self.calls += 1
            self.failed += int(bool(record.get("error")))
        self._ensure_thread()

    def retry(self, error: str) -> None:
        with self._lock:
            self.retries += 1
            self.last_error = error
        self._ensure_thread()

    def started(self) -> None:
        """A request was sent: start the clock line if it is not running."""
        self._ensure_thread()

    # ------------------------------------------------------------------ the line
    def line(self) -> str:
        with self._lock:
            elapsed = time.monotonic() - self._started
            last = f"; last retry: {self.last_error[:80]}" if self.last_error else ""
            return (
                f"{self.label}: {self.calls} calls done ({self.failed} failed), "
                f"{self.retries} retries, {elapsed:.0f} s elapsed{last}"
            )

    def _ensure_thread(self) -> None:
        if self._thread is None and not self._stop.is_set():
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._loop, daemon=True)
                    self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            stream = self.stream or sys.stderr
            print(self.line(), file=stream, flush=True)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1)

    def __enter__(self) -> CallProgress:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
