"""Fixtures for the LLM agent tests.

`llm_base_url` is the OpenAI-compatible server started by `scripts/llm_server.sh start` (CI does
this in .ci/run and exports LABREPLAY_LLM_BASE_URL). Without it the `llm` tests skip locally,
but under CI (CI=true) they fail: CI must never pass by not running them.

`recording_proxy` sits between a client and that server and keeps every request body, so a test
can scan exactly what was sent to the model (the canary check of the firewall).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest


def _state_url_file() -> Path:
    state = os.environ.get("LABREPLAY_LLM_STATE_DIR")
    # Same default as scripts/llm_server.sh: <venv>/llm-server, and the tests run in that venv.
    return (Path(state) if state else Path(sys.prefix) / "llm-server") / "base_url"


def _answers(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(base_url.rstrip("/") + "/models", timeout=5) as reply:
            return "data" in json.load(reply)
    except (OSError, ValueError):
        return False


@pytest.fixture(scope="session")
def llm_base_url() -> str:
    url = os.environ.get("LABREPLAY_LLM_BASE_URL", "").strip()
    source = "LABREPLAY_LLM_BASE_URL"
    if not url and _state_url_file().is_file():
        url = _state_url_file().read_text(encoding="utf-8").strip()
        source = str(_state_url_file())
    if url and _answers(url):
        return url
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(
            f"CI=true but no LLM server answers (from {source}: {url or 'unset'}); "
            ".ci/run must run scripts/llm_server.sh start before the tests"
        )
    pytest.skip(
        "no local LLM server: run `scripts/llm_server.sh start` and export "
        "LABREPLAY_LLM_BASE_URL=$(cat .venv/llm-server/base_url) to run the llm tests"
    )


class _Proxy:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.bodies: list[dict[str, Any]] = []
        self.lock = threading.Lock()


def _proxy_handler(proxy: _Proxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else None
            if raw:
                with proxy.lock:
                    proxy.bodies.append(json.loads(raw))
            # self.path is e.g. /v1/chat/completions; the upstream URL already ends in /v1.
            target = proxy.upstream.rsplit("/v1", 1)[0] + self.path
            request = urllib.request.Request(target, data=raw, method=self.command)
            request.add_header("Content-Type", "application/json")
            try:
                with urllib.request.urlopen(request, timeout=600) as reply:
                    status, body = reply.status, reply.read()
            except urllib.error.HTTPError as exc:
                status, body = exc.code, exc.read()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            self._forward()

        def do_GET(self) -> None:
            self._forward()

    return Handler


@pytest.fixture
def recording_proxy(llm_base_url: str) -> Iterator[tuple[str, _Proxy]]:
    """(proxy base URL, proxy) forwarding to the real local model server."""
    proxy = _Proxy(llm_base_url)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _proxy_handler(proxy))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", proxy
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
