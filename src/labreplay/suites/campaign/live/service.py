"""The lab-side HTTP service of a live campaign (`campaign live serve`; `live emulate` posts
through it too). JSON over HTTP on 127.0.0.1 unless another bind is asked for (HTTPS
with a certificate given). The protocol is the versioned
OpenAPI document `openapi.json` beside this module, served at `GET /openapi.json`: every other
route needs `Authorization: Bearer TOKEN`, and every refusal is one status with `{"accepted":
false, "error": "..."}`. Every request for a campaign being played, refused or not, is a `lab`
event of its run (a wrong token's body is not read; a body cut short is recorded as it came).
"""

from __future__ import annotations

import hmac
import json
import ssl
import sys
import threading
from collections.abc import Callable
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import ClassVar, cast
from urllib.parse import quote, unquote, urlsplit

from labreplay.sdk.events import JsonObject, JsonValue
from labreplay.suites.campaign.live.lab import LiveLab

MAX_BODY = 1 << 20  # bytes of one post


@cache
def protocol() -> JsonObject:
    """The lab side's OpenAPI document (`info.version` is the protocol's version)."""
    text = resources.files(__package__).joinpath("openapi.json").read_text(encoding="utf-8")
    return cast("JsonObject", json.loads(text))


class LabService:
    """The service, serving the campaigns registered in `labs` (by spec id) from a thread."""

    def __init__(
        self,
        token: str,
        host: str = "127.0.0.1",
        port: int = 0,
        tls: tuple[Path, Path] | None = None,
    ) -> None:
        """`tls`: (certificate, key) PEM files to serve HTTPS with (ssl.SSLError when they
        do not load: a bad file, a key of another certificate)."""
        self.labs: dict[str, LiveLab] = {}
        service = self

        class Handler(_Handler):
            owner: ClassVar[LabService] = service

        context = None
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
        self._server = _Server((host, port), Handler)
        if context is not None:  # every connection is TLS: a plain-HTTP client gets no answer
            # The handshake in the connection's own thread, not in the accept loop (where one
            # client that never speaks would hold every other lab's connection).
            self._server.socket = context.wrap_socket(
                self._server.socket, server_side=True, do_handshake_on_connect=False
            )
        self.token = token
        scheme = "http" if tls is None else "https"
        self.url = f"{scheme}://{host}:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> LabService:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(
        self, method: str, path: str, token: str | None, body: Callable[[], bytes], length: int
    ) -> tuple[int, JsonObject]:
        """The status and JSON body of one request (`length`: its declared body's)."""
        route = urlsplit(path).path
        if (method, route) == ("GET", "/openapi.json"):
            return 200, protocol()
        parts = [unquote(p) for p in route.strip("/").split("/")]
        lab = self.labs.get(parts[2]) if len(parts) == 4 else None
        if parts[:2] != ["v1", "campaigns"] or len(parts) not in (2, 4):
            return 404, {"accepted": False, "error": f"no such route: {method} {route}"}
        if token is None or not hmac.compare_digest(token.encode(), self.token.encode()):
            if lab is not None:
                lab.refuse(f"{method} {route}", "wrong or missing bearer token")
            return 401, {"accepted": False, "error": "wrong or missing bearer token"}
        if (method, len(parts)) == ("GET", 2):
            return 200, {"campaigns": list[JsonValue](self.labs)}
        if lab is None and len(parts) == 4:
            return 404, {"accepted": False, "error": f"no campaign {parts[2]!r} is being played"}
        if lab is not None and (method, parts[3]) == ("GET", "awaiting"):
            awaiting: JsonObject = {"awaiting": list[JsonValue](lab.awaiting())}
            if lab.selections == "lab":  # the lab's own agent selects: is its next one awaited?
                awaiting["awaiting_selection"] = lab.wanting
            return 200, awaiting
        if lab is None or (method, parts[3]) != ("POST", "posts"):
            return 404, {"accepted": False, "error": f"no such route: {method} {route}"}
        raw = body()
        if len(raw) < length or length > MAX_BODY:  # a lab that disconnected mid-post
            error = f"the body was cut short ({len(raw)} of {length} bytes; at most {MAX_BODY})"
            lab.refuse(raw.decode("utf-8", "replace"), error)
            return 400, {"accepted": False, "error": error}
        try:
            payload: object = json.loads(raw)
        except ValueError:
            payload = raw.decode("utf-8", "replace")  # recorded as it came, refused
        answer = lab.post(payload)
        status = answer.pop("status", 200)
        return int(status) if isinstance(status, int) else 400, answer


def send_post(url: str, token: str, spec_id: str, post: object) -> tuple[int, object]:
    """One post to a service (the lab's side, as `live emulate` plays it): status, answer."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        f"{url}/v1/campaigns/{quote(spec_id, safe='')}/posts",
        data=json.dumps(post).encode("utf-8"),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return int(response.status), json.loads(response.read())
    except urllib.error.HTTPError as refused:
        return int(refused.code), json.loads(refused.read())


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        """A connection that broke off or failed its TLS handshake concerns that client only:
        no traceback on the service's stderr (anything else is reported as usual)."""
        if not isinstance(sys.exc_info()[1], ssl.SSLError | ConnectionError | TimeoutError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


class _Handler(BaseHTTPRequestHandler):
    owner: ClassVar[LabService]

    def _serve(self, method: str) -> None:
        given = self.headers.get("Authorization", "")
        token = given.removeprefix("Bearer ") if given.startswith("Bearer ") else None
        given_length = self.headers.get("Content-Length") or "0"
        length = int(given_length) if given_length.isdigit() else 0
        status, answer = self.owner.answer(
            method, self.path, token, lambda: self.rfile.read(min(length, MAX_BODY)), length
        )
        data = json.dumps(answer).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the lab went away: what it sent is recorded, it asks again
            self.close_connection = True

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def log_message(self, format: str, *args: object) -> None:
        del format, args  # the run's record is the log


__all__ = ["LabService", "send_post"]
