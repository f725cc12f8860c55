"""The lab-side HTTP service of a live campaign (`campaign live serve`; `live emulate` posts
through it too). JSON over HTTP on 127.0.0.1 unless another bind is asked for; every request
carries `Authorization: Bearer TOKEN`.

- `GET /v1/campaigns/{spec_id}/awaiting` (the spec id URL-quoted): `{"awaiting": [experiment ids]}`, the experiments
  whose forecast is in and whose result the campaign waits for;
- `POST /v1/campaigns/{spec_id}/posts`: one post (`{"post": "evidence" | "outcome" |
  "deviation", "experiment_id": ..., ...}`, `live.lab`): `200 {"accepted": true}`, or one
  error status with `{"accepted": false, "error": "..."}` (400 malformed, 401 wrong token,
  404 no such campaign or experiment, 409 out of order). Every request for a campaign being
  played, refused or not, is a `lab` event of its run (a wrong token's body is not read).
"""

from __future__ import annotations

import hmac
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar
from urllib.parse import quote, unquote

from labreplay.sdk.events import JsonObject, JsonValue
from labreplay.suites.campaign.live.lab import LiveLab

MAX_BODY = 1 << 20  # bytes of one post


class LabService:
    """The service, serving the campaigns registered in `labs` (by spec id) from a thread."""

    def __init__(self, token: str, host: str = "127.0.0.1", port: int = 0) -> None:
        self.labs: dict[str, LiveLab] = {}
        service = self

        class Handler(_Handler):
            owner: ClassVar[LabService] = service

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self.token = token
        self.url = f"http://{host}:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> LabService:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(
        self, method: str, path: str, token: str | None, body: Callable[[], bytes]
    ) -> tuple[int, JsonObject]:
        """The status and JSON body of one request."""
        parts = [unquote(p) for p in path.strip("/").split("/")]
        if len(parts) != 4 or parts[:2] != ["v1", "campaigns"]:
            return 404, {"accepted": False, "error": f"no such route: {method} {path}"}
        lab = self.labs.get(parts[2])
        if lab is None:
            return 404, {"accepted": False, "error": f"no campaign {parts[2]!r} is being played"}
        if token is None or not hmac.compare_digest(token.encode(), self.token.encode()):
            lab.refuse(f"{method} {path}", "wrong or missing bearer token")
            return 401, {"accepted": False, "error": "wrong or missing bearer token"}
        if (method, parts[3]) == ("GET", "awaiting"):
            return 200, {"awaiting": list[JsonValue](lab.awaiting())}
        if (method, parts[3]) != ("POST", "posts"):
            return 404, {"accepted": False, "error": f"no such route: {method} {path}"}
        raw = body()
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


class _Handler(BaseHTTPRequestHandler):
    owner: ClassVar[LabService]

    def _serve(self, method: str) -> None:
        given = self.headers.get("Authorization", "")
        token = given.removeprefix("Bearer ") if given.startswith("Bearer ") else None
        given_length = self.headers.get("Content-Length") or "0"
        length = min(int(given_length), MAX_BODY) if given_length.isdigit() else 0
        status, answer = self.owner.answer(
            method, self.path, token, lambda: self.rfile.read(length)
        )
        data = json.dumps(answer).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def log_message(self, format: str, *args: object) -> None:
        del format, args  # the run's record is the log


__all__ = ["LabService", "send_post"]
