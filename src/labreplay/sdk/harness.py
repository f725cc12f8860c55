"""The serving harness for suite authors: a suite's `serve` command is one call.

    from labreplay.sdk.harness import serve_suite_run

`serve_suite_run(suite, specs, store, agent_name, seed, **run_options)` serves the run that
`labreplay.run` plays (same options class, same defaults) to a harness over MCP, with the tools
`next_call` / `reply`; a suite may give its own tools as a view (`HarnessView`: `ServedRun`'s
pending call, `answer`, `done`; `Request`, `ToolDef`).

Names are imported from the core on first use (PEP 562), so importing this module is cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from labreplay._lazy import lazy_attributes

if TYPE_CHECKING:
    from labreplay.harness.bridge import Request
    from labreplay.harness.generic import HarnessView, ServedRun, serve_suite_run
    from labreplay.harness.mcp_server import ToolDef

_SOURCES: dict[str, tuple[str, ...]] = {
    "labreplay.harness.bridge": ("Request",),
    "labreplay.harness.generic": ("HarnessView", "ServedRun", "serve_suite_run"),
    "labreplay.harness.mcp_server": ("ToolDef",),
}

__all__ = ["HarnessView", "Request", "ServedRun", "ToolDef", "serve_suite_run"]

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_attributes(__name__, globals(), _SOURCES)
