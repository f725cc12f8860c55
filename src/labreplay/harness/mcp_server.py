"""Serve a suite's tools over the Model Context Protocol (official `mcp` SDK, low-level server).

The low-level server is used on purpose: it passes tool arguments through unvalidated, so a
malformed call reaches the suite's own validation and is recorded as an invalid action (data)
instead of being bounced by the transport. Tool handlers run in a thread (they block on the
bridge's channel), every result is JSON (text content plus structured content), and a handler
that raises is answered with an error result: the server never crashes on a harness's call.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from labreplay.errors import LabreplayError

INSTALL_HINT = "pip install 'labreplay[mcp]'"


@dataclass(frozen=True)
class ToolDef:
    name: str
    description: str
    input_schema: Mapping[str, Any]


Handler = Callable[[str, Mapping[str, Any] | None], Mapping[str, Any]]


def require_mcp() -> None:
    try:
        import mcp  # noqa: F401
    except ImportError as exc:
        raise LabreplayError(f"serving over MCP needs the `mcp` package: {INSTALL_HINT}") from exc


def build_server(name: str, instructions: str, tools: Sequence[ToolDef], handle: Handler) -> Any:
    """A low-level `mcp` server exposing `tools`; `handle(tool, arguments)` returns the JSON
    result of one call (run in a worker thread)."""
    require_mcp()
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server

    from labreplay import __version__

    listed = [
        types.Tool(name=t.name, description=t.description, input_schema=dict(t.input_schema))
        for t in tools
    ]

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: Any, params: Any) -> Any:
        arguments = params.arguments
        try:
            result = await anyio.to_thread.run_sync(handle, params.name, arguments)
            is_error = bool(result.get("error")) and "expected" not in result
        except Exception as exc:  # a bug of ours: reported, the session goes on
            result, is_error = {"error": f"{type(exc).__name__}: {exc}"}, True
        text = json.dumps(result, separators=(",", ":"), allow_nan=False)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content=dict(result),
            is_error=is_error,
        )

    return Server(
        name,
        version=__version__,
        instructions=instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def serve(server: Any, transport: str, host: str = "127.0.0.1", port: int = 8765) -> None:
    """Run `server` over stdio (one harness process) or streamable HTTP at
    http://HOST:PORT/mcp (a harness may disconnect and reconnect to the same session)."""
    import anyio

    if transport == "stdio":
        from mcp.server.stdio import stdio_server

        async def run_stdio() -> None:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(run_stdio)
        return
    if transport == "http":
        import uvicorn

        app = server.streamable_http_app(host=host)
        uvicorn.run(app, host=host, port=port, log_level="warning")
        return
    raise LabreplayError(f"--transport must be stdio or http, got {transport!r}")


__all__ = ["INSTALL_HINT", "ToolDef", "build_server", "require_mcp", "serve"]
