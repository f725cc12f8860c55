"""Standard output and error without credentials.

What the CLI prints comes from outside as much as what it stores: the model id a server
answered with (usage lines), a server's error body (a failed run's one-line cause), an agent's
exception. `scrubbed_output()` passes every text written to `sys.stdout` and `sys.stderr`
through `scrub_text` while a command runs, so no print site can forget it. (Binary writes to
`.buffer`, the MCP stdio protocol channel, pass unchanged.)
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TextIO, cast

from labreplay._provenance import scrub_text


class ScrubbingStream:
    """A text stream that writes `scrub_text(text)` to the stream it wraps."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    @property
    def wrapped(self) -> TextIO:
        return self._stream

    def write(self, text: str) -> int:
        self._stream.write(scrub_text(text) if isinstance(text, str) and text else text)
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


def scrubbing(stream: TextIO) -> TextIO:
    """`stream` wrapped (once) so that nothing written to it holds a credential."""
    if isinstance(stream, ScrubbingStream):
        return stream
    return cast(TextIO, ScrubbingStream(stream))  # duck-typed: a TextIO to every writer


@contextmanager
def scrubbed_output() -> Iterator[None]:
    """Scrub `sys.stdout` and `sys.stderr` while the block runs, then restore them."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = scrubbing(out), scrubbing(err)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err


__all__ = ["ScrubbingStream", "scrubbed_output", "scrubbing"]
