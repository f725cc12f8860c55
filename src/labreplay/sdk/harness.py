"""The serving harness for suite authors: the bridge between an external agent and a run, and
the MCP server a suite's `serve` command builds.

    from labreplay.sdk.harness import BridgeAgent, Channel, start_worker, ToolDef, build_server

Names are imported from the core on first use (PEP 562), so importing this module is cheap
and a name costs what importing it from its core module did.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from labreplay.sdk._lazy import lazy_attributes

if TYPE_CHECKING:
    from labreplay.harness.bridge import BridgeAgent, Channel, Request, start_worker
    from labreplay.harness.generic import SuiteRunSession, serve_suite_run
    from labreplay.harness.mcp_server import (
        SessionSlots,
        ToolDef,
        build_server,
        require_mcp,
        serve,
    )

_SOURCES: dict[str, tuple[str, ...]] = {
    "labreplay.harness.bridge": (
        "BridgeAgent",
        "Channel",
        "Request",
        "start_worker",
    ),
    "labreplay.harness.generic": (
        "SuiteRunSession",
        "serve_suite_run",
    ),
    "labreplay.harness.mcp_server": (
        "SessionSlots",
        "ToolDef",
        "build_server",
        "require_mcp",
        "serve",
    ),
}

__all__ = [
    "BridgeAgent",
    "Channel",
    "Request",
    "SessionSlots",
    "SuiteRunSession",
    "ToolDef",
    "build_server",
    "require_mcp",
    "serve",
    "serve_suite_run",
    "start_worker",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_attributes(__name__, globals(), _SOURCES)
