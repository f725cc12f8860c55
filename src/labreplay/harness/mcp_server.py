"""Serve a suite's tools over the Model Context Protocol (official `mcp` SDK, low-level server).

The low-level server is used on purpose: it passes tool arguments through unvalidated, so a
malformed call reaches the suite's own validation and is recorded as an invalid action (data)
instead of being bounced by the transport. Tool handlers run in a thread (they block on the
bridge's channel), every result is JSON (text content plus structured content), and a handler
that raises is answered with an error result: the server never crashes on a harness's call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from labreplay.errors import LabreplayError
from labreplay.harness.sessions import Handler, SessionSlots

if TYPE_CHECKING:  # (the `mcp` extra: imported where it is used)
    import mcp_types
    from starlette.types import ASGIApp, Receive, Scope, Send

INSTALL_HINT = "pip install 'labreplay[mcp]'"
MAX_HTTP_BODY_BYTES = 4 * 1024 * 1024  # one JSON-RPC message over HTTP


@dataclass(frozen=True)
class ToolDef:
    name: str
    description: str
    input_schema: Mapping[str, Any]


def require_mcp() -> None:
    try:
        import mcp  # noqa: F401
    except ImportError as exc:
        raise LabreplayError(f"serving over MCP needs the `mcp` package: {INSTALL_HINT}") from exc


def build_server(
    name: str, instructions: str, tools: Sequence[ToolDef], handle: Handler | SessionSlots
) -> Any:
    """A low-level `mcp` server exposing `tools`; `handle(tool, arguments)` returns the JSON
    result of one call (run in a worker thread). With `SessionSlots`, each MCP session has its
    own handler (`labreplay.harness.sessions`)."""
    require_mcp()
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server

    from labreplay import __version__

    listed = [
        types.Tool(name=t.name, description=t.description, input_schema=dict(t.input_schema))
        for t in tools
    ]

    async def list_tools(
        ctx: object, params: mcp_types.PaginatedRequestParams | None
    ) -> mcp_types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(
        ctx: object, params: mcp_types.CallToolRequestParams
    ) -> mcp_types.CallToolResult:
        arguments = params.arguments
        try:
            handler = (
                handle.handler_for(*_session_of(ctx, server))
                if isinstance(handle, SessionSlots)
                else handle
            )
            result = await anyio.to_thread.run_sync(handler, params.name, arguments)
            is_error = bool(result.get("error")) and "expected" not in result
        except Exception as exc:  # a bug of ours: reported, the session goes on
            result, is_error = {"error": f"{type(exc).__name__}: {exc}"}, True
        text = json.dumps(result, separators=(",", ":"), allow_nan=False)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content=dict(result),
            is_error=is_error,
        )

    server = Server(
        name,
        version=__version__,
        instructions=instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    return server


def _oversize_as_json_rpc(app: ASGIApp) -> ASGIApp:
    """`app`, except that a POST whose declared length is over MAX_HTTP_BODY_BYTES is answered
    413 with a JSON-RPC error (the SDK's own limit, which also covers a body without a
    length, answers in plain text), before its body is read. Malformed and too-deep bodies
    get the SDK's JSON-RPC parse error."""

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") == "http" and scope.get("method") == "POST":
            length = dict(scope.get("headers") or ()).get(b"content-length", b"")
            if length.isdigit() and int(length) > MAX_HTTP_BODY_BYTES:
                message = (
                    f"request of {int(length)} bytes, over the {MAX_HTTP_BODY_BYTES}-byte limit"
                )
                body = json.dumps(
                    {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}
                ).encode()
                headers = [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ]
                await send({"type": "http.response.start", "status": 413, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return guarded


def _session_of(ctx: object, server: object) -> tuple[str, frozenset[str]]:
    """The MCP session id of a request (its `mcp-session-id` header; "" over stdio, a single
    session) and the ids of the sessions the HTTP transport still holds open."""
    request = getattr(ctx, "request", None)
    headers = getattr(request, "headers", None)
    session_id = str(headers.get("mcp-session-id", "")) if headers is not None else ""
    # the SDK's session manager keeps its open sessions by id (not a public API: without it,
    # no slot is ever freed and a reconnecting harness gets a fresh campaign)
    manager = getattr(server, "_session_manager", None)
    live = frozenset(getattr(manager, "_server_instances", None) or ())
    return session_id, live | {""}


def serve(server: Any, transport: str, host: str = "127.0.0.1", port: int = 8765) -> None:
    """Run `server` over stdio (one harness process) or streamable HTTP at
    http://HOST:PORT/mcp (a harness may disconnect and reconnect to the same session)."""
    import anyio

    if transport == "stdio":
        from mcp.server.stdio import stdio_server

        from labreplay.harness.stdio_guard import guarded_stdio

        async def run_stdio() -> None:
            # a malformed, oversize or too deep line is answered with a JSON-RPC error
            with guarded_stdio() as (lines, out):
                async with stdio_server(stdin=lines, stdout=anyio.wrap_file(out)) as (read, write):  # type: ignore[arg-type]
                    await server.run(read, write, server.create_initialization_options())

        anyio.run(run_stdio)
        return
    if transport == "http":
        import uvicorn

        app = server.streamable_http_app(host=host, max_request_body_size=MAX_HTTP_BODY_BYTES)
        uvicorn.run(_oversize_as_json_rpc(app), host=host, port=port, log_level="warning")
        return
    raise LabreplayError(f"--transport must be stdio or http, got {transport!r}")


__all__ = ["INSTALL_HINT", "SessionSlots", "ToolDef", "build_server", "require_mcp", "serve"]
