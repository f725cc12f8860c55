"""A real HTTP mirror of the data directory on 127.0.0.1, for the download tests.

stdlib `http.server` in a thread. It honours `Range: bytes=START-[END]` (206 + Content-Range),
records every request it saw, and has fault modes the tests switch on per file:
- `drop_after[path] = n`: the next response for `path` announces the full length, sends `n`
  bytes and then drops the connection (used once, then the file is served normally);
- `corrupt`: paths whose served bytes have one bit flipped (same length, wrong sha256);
- `honour_range = False`: answer Range requests with the whole file and status 200;
- `misplaced_range = True`: answer Range requests with 206 but the bytes from offset 0 (a
  broken proxy), so the client must notice the Content-Range does not start where it asked.
"""

from __future__ import annotations

import re
import socket
import threading
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType


@dataclass(frozen=True)
class SeenRequest:
    path: str  # relative to the served root, POSIX separators
    range_header: str | None
    status: int


@dataclass
class MirrorState:
    root: Path
    drop_after: dict[str, int] = field(default_factory=dict)
    corrupt: set[str] = field(default_factory=set)
    honour_range: bool = True
    misplaced_range: bool = False
    seen: list[SeenRequest] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def requests_for(self, path: str) -> list[SeenRequest]:
        with self.lock:
            return [r for r in self.seen if r.path == path]


_RANGE = re.compile(r"^bytes=(\d+)-(\d*)$")


def _handler_for(state: MirrorState) -> type[BaseHTTPRequestHandler]:
    class MirrorHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # keep test output clean
            pass

        def do_GET(self) -> None:
            relative = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path).lstrip("/")
            target = (state.root / relative).resolve()
            range_header = self.headers.get("Range")
            if state.root.resolve() not in target.parents or not target.is_file():
                self._record(relative, range_header, 404)
                self.send_error(404)
                return
            body = target.read_bytes()
            if relative in state.corrupt:
                flipped = bytearray(body)
                flipped[len(flipped) // 3] ^= 0x01
                body = bytes(flipped)
            total = len(body)
            start, end, status = 0, total - 1, 200
            match = _RANGE.match(range_header or "")
            if match and state.honour_range:
                start = int(match.group(1))
                end = min(int(match.group(2)), total - 1) if match.group(2) else total - 1
                if start >= total:
                    self._record(relative, range_header, 416)
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{total}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                status = 206
                if state.misplaced_range:
                    start, end = 0, total - 1 - start
            payload = body[start : end + 1]
            self._record(relative, range_header, status)
            self.send_response(status)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("Accept-Ranges", "bytes")
            if status == 206:
                self.send_header("Content-Range", f"bytes {start}-{end}/{total}")
            self.end_headers()
            with state.lock:
                cut = state.drop_after.pop(relative, None)
            if cut is None:
                self.wfile.write(payload)
                return
            # Announce everything, send part of it, then vanish like a dropped network link.
            self.wfile.write(payload[:cut])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)

        def _record(self, relative: str, range_header: str | None, status: int) -> None:
            with state.lock:
                state.seen.append(SeenRequest(relative, range_header, status))

    return MirrorHandler


class HttpMirror:
    """`with HttpMirror(root) as mirror:` serves `root` at `mirror.url` until the block ends."""

    def __init__(self, root: Path) -> None:
        self.state = MirrorState(root=root)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self.state))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/"

    def __enter__(self) -> HttpMirror:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


def closed_port_url() -> str:
    """A URL on 127.0.0.1 whose port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/"
