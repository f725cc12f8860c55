"""The MCP stdio transport with a guard: a bad message gets a JSON-RPC error, not silence.

The SDK's stdio transport drops a line it cannot parse (no reply: the harness waits forever)
and reads a line of any length. Here the SDK's `stdio_server` is given the streams: stdin is
read by line of at most MAX_LINE_BYTES, and a line that is over it, not JSON, or nested deeper
than MAX_DEPTH is answered on stdout with a JSON-RPC error (`-32700` parse error, or `-32600`
invalid request for an oversize one; the id when it can be read, else null). As the SDK does,
fd 0 and fd 1 are moved aside while serving (a handler or a child that prints writes to stderr,
one that reads gets EOF) and put back at the end.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import BinaryIO

MAX_LINE_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 64
PARSE_ERROR, INVALID_REQUEST = -32700, -32600


class LineWriter:
    """A text sink that writes each `write()` whole to a descriptor, one writer at a time."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        data = text.encode("utf-8")
        with self._lock:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]
        return len(text)

    def flush(self) -> None:
        return None


def _too_deep(text: bytes) -> bool:
    """Whether the brackets of a JSON text nest deeper than MAX_DEPTH (strings skipped)."""
    depth, in_string, escaped = 0, False, False
    for byte in text:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):
            depth += 1
            if depth > MAX_DEPTH:
                return True
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return False


def problem(line: bytes) -> tuple[int, str, object] | None:
    """(code, message, id) of the JSON-RPC error a received line gets, or None if it may pass."""
    if len(line) > MAX_LINE_BYTES:
        return INVALID_REQUEST, f"message over {MAX_LINE_BYTES} bytes", None
    # the byte scan only when there are enough brackets to be too deep at all
    if line.count(b"[") + line.count(b"{") > MAX_DEPTH and _too_deep(line):
        return PARSE_ERROR, f"message nested deeper than {MAX_DEPTH} levels", None
    try:
        message = json.loads(line)
    except (ValueError, RecursionError) as exc:
        return PARSE_ERROR, f"not JSON: {' '.join(str(exc).split())[:200]}", None
    if not isinstance(message, dict):
        return INVALID_REQUEST, "a message must be a JSON object", None
    return None


def error_line(code: int, message: str, ident: object) -> str:
    error = {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}
    return json.dumps(error) + "\n"


class GuardedLines:
    """The lines of `source` that may pass, as the SDK's stdin stream (async iteration);
    the others are answered on `out` with a JSON-RPC error."""

    def __init__(self, source: BinaryIO, out: LineWriter) -> None:
        self._source, self._out = source, out

    def _next(self) -> str | None:
        while True:
            line = self._source.readline(MAX_LINE_BYTES + 1)
            if not line:
                return None
            if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
                size = len(line)
                while line and not line.endswith(b"\n"):  # read the rest, keep none of it
                    line = self._source.readline(1 << 20)
                    size += len(line)
                self._out.write(
                    error_line(
                        INVALID_REQUEST, f"message of {size} bytes, over {MAX_LINE_BYTES}", None
                    )
                )
                continue
            if not line.strip():
                continue
            found = problem(line)
            if found is None:
                return line.decode("utf-8", errors="replace")
            self._out.write(error_line(*found))

    async def __aiter__(self) -> AsyncIterator[str]:
        import anyio

        while True:
            line = await anyio.to_thread.run_sync(self._next, abandon_on_cancel=True)
            if line is None:
                return
            yield line


@contextmanager
def guarded_stdio() -> Iterator[tuple[GuardedLines, LineWriter]]:
    """Private copies of fd 0 and fd 1 for the protocol; fd 0 -> /dev/null, fd 1 -> stderr."""
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)
    os.close(null)
    out = LineWriter(wire_out)
    source = os.fdopen(wire_in, "rb", buffering=1 << 16)
    try:
        yield GuardedLines(source, out), out
    finally:
        os.dup2(wire_out, 1)
        os.close(wire_out)
        source.close()
