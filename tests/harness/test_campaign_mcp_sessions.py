"""`campaign serve --transport http` with two harnesses at once and a hostile client.

Was: every HTTP session shared one campaign (a second session saw the first's state and its
`stop` ended the first's branch); a 50 MB message got no JSON-RPC reply. Real server on
127.0.0.1, official `mcp` SDK client.
"""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import free_port

from labreplay.store.sqlite import Store

from .clients import serve_args

pytest.importorskip("mcp")
httpx = pytest.importorskip("httpx")


@pytest.fixture
def server(
    spec_dir: Path, served_env: dict[str, str], tmp_path: Path
) -> Iterator[tuple[str, Path, subprocess.Popen[bytes]]]:
    store, port = tmp_path / "mcp.sqlite", free_port()
    args = serve_args("campaign", "--specs", str(spec_dir), "--store", str(store), "--only")
    args += ["short-1", "--agent-name", "harness", "--transport", "http", "--port", str(port)]
    proc = subprocess.Popen(
        [sys.executable, *args], env=served_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and proc.poll() is None:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.2)
    try:
        yield f"http://127.0.0.1:{port}/mcp", store, proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)


async def _call(session: Any, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    return dict(json.loads(result.content[0].text))


async def _two_sessions(url: str) -> dict[str, dict[str, Any]]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    seen: dict[str, dict[str, Any]] = {}
    async with streamable_http_client(url) as (ra, wa), ClientSession(ra, wa) as first:
        await first.initialize()
        seen["first"] = await _call(first, "observe", {})
        async with streamable_http_client(url) as (rb, wb), ClientSession(rb, wb) as second:
            await second.initialize()
            seen["second"] = await _call(second, "observe", {})
            # the second session answers its checkpoint, then stops its own campaign
            forecasts = {"forecasts": []}
            await _call(second, "act", {"reply": forecasts})
            seen["second_stop"] = await _call(second, "stop", {})
        seen["first_again"] = await _call(first, "observe", {})
    return seen


def test_each_http_session_plays_its_own_campaign(
    server: tuple[str, Path, subprocess.Popen[bytes]],
) -> None:
    url, store, proc = server
    seen = asyncio.run(_two_sessions(url))
    # the second session starts fresh (not at the first's state) ...
    assert seen["second"] == seen["first"]
    assert seen["second_stop"].get("accepted") is not False, seen["second_stop"]
    # ... and its stop did not touch the first's campaign
    assert seen["first_again"] == seen["first"]
    proc.send_signal(signal.SIGTERM)  # a clean shutdown: no traceback
    _, err = proc.communicate(timeout=60)
    assert b"Traceback" not in err, err.decode()[-2000:]
    with Store(store, readonly=True) as db:
        agents = {r.agent for r in db.runs()}
    assert agents == {"harness", "harness-2"}


def test_malformed_oversize_and_deep_messages_get_json_rpc_errors(
    server: tuple[str, Path, subprocess.Popen[bytes]],
) -> None:
    url, _, proc = server
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "hostile", "version": "0"},
        },
    }
    opened = httpx.post(url, headers=headers, json=init, timeout=60)
    assert opened.status_code == 200
    headers["mcp-session-id"] = opened.headers["mcp-session-id"]
    deep = '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": ' + "[" * 50_000
    bodies = {
        "malformed": b"{not json",
        "deep": (deep + "]" * 50_000 + "}").encode(),
        "oversize": b'{"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"x": "'
        + b"a" * 50_000_000
        + b'"}}',
    }
    for name, body in bodies.items():
        reply = httpx.post(url, headers=headers, content=body, timeout=60)
        assert 400 <= reply.status_code < 500, (name, reply.status_code)
        error = reply.json()
        assert error["jsonrpc"] == "2.0" and error["error"]["code"] < 0, (name, error)
    # the server goes on serving
    assert httpx.post(url, headers=headers, json=init, timeout=60).status_code == 200
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert b"Traceback" not in err, err.decode()[-2000:]


def test_stdio_answers_bad_lines_with_json_rpc_errors(
    spec_dir: Path, served_env: dict[str, str], tmp_path: Path
) -> None:
    """Was: a malformed or 50k-deep line got no reply at all (the harness waited), and a
    50 MB line was read whole."""
    import select

    args = serve_args("campaign", "--specs", str(spec_dir), "--store", str(tmp_path / "s.sqlite"))
    proc = subprocess.Popen(
        [sys.executable, *args, "--only", "short-1"],
        env=served_env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None

    def ask(body: bytes) -> dict[str, Any]:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(body + b"\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], 90)
        assert ready, f"no reply to {body[:60]!r}"
        return dict(json.loads(proc.stdout.readline()))

    try:
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "hostile", "version": "0"},
            },
        }
        assert "result" in ask(json.dumps(init).encode())
        deep = b'{"jsonrpc": "2.0", "id": 5, "method": "ping", "params": ' + b"[" * 50_000
        huge = b'{"jsonrpc": "2.0", "id": 6, "method": "ping", "params": {"x": "'
        for body, code in [
            (b"{not json", -32700),
            (deep + b"]" * 50_000 + b"}", -32700),
            (huge + b"a" * 50_000_000 + b'"}}', -32600),
        ]:
            reply = ask(body)
            assert reply["id"] is None and reply["error"]["code"] == code, reply
        assert ask(b'{"jsonrpc": "2.0", "id": 7, "method": "ping"}') == {
            "jsonrpc": "2.0",
            "id": 7,
            "result": {},
        }
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert b"Traceback" not in err, err.decode()[-2000:]
