"""The option groups every suite's run shares, declared once (`labreplay.option_fields`).

`IsolationOptions` is the base of each suite's run options (isolate, agent timeout, sandbox:
both doors); `ExecutorOptions` and `OutputOptions` are the command line's own (the API takes
an `Executor` object and returns values instead of printing).
"""

from __future__ import annotations

import sys
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from labreplay import validate
from labreplay.option_fields import Checked, Ints, OneOf, Rule, flag, seconds

if TYPE_CHECKING:
    from labreplay.execute.base import Executor

EXECUTORS = ("in-process", "threads", "dask")


@dataclass(frozen=True, kw_only=True)
class IsolationOptions(Checked):
    """How a Python agent is held: in this process, or in a (sandboxed) child."""

    isolate: bool = flag(
        False,
        "Run the (Python) agent in a child process that receives only what crosses its "
        "contract as JSON, with an allow-listed environment (no keys, no LABREPLAY_*; "
        "LABREPLAY_AGENT_ENV=NAME,... passes variables on).",
    )
    agent_timeout_s: float | None = flag(
        None,
        "With --isolate: seconds the agent has per call before the run is failed (60).",
        name="--agent-timeout",
        check=seconds(),
    )
    require_sandbox: bool = flag(
        False,
        "With --isolate: refuse to run (exit 2) unless the agent's child runs in the "
        "bubblewrap sandbox (its own file system view, /proc and pids; docs/isolation.md).",
    )

    def check(self) -> None:
        if self.agent_timeout_s is not None and not self.isolate:
            raise validate.OptionError(
                "agent_timeout_s (--agent-timeout) needs isolate (--isolate): an in-process "
                "agent cannot be stopped mid-call"
            )
        if self.require_sandbox:
            from labreplay.agents.sandbox import sandbox_status

            if not self.isolate:
                raise validate.OptionError(
                    "--require-sandbox: needs --isolate (the sandbox holds its child)"
                )
            status = sandbox_status()
            if not status.available:
                raise validate.OptionError(
                    f"--require-sandbox: no sandbox on this machine ({status.reason})"
                )

    def say_without_sandbox(self) -> None:
        """An --isolate run without the sandbox says so in one line on stderr and goes on."""
        if not self.isolate:
            return
        from labreplay.agents.sandbox import sandbox_status

        status = sandbox_status()
        if not status.available:
            sys.stderr.write(
                f"labreplay: note: --isolate without a sandbox ({status.reason}): the agent's "
                "child runs as your user and can read what you can (docs/isolation.md)\n"
            )

    def check_executor(self, executor: str) -> None:
        """One child per agent, served from this process: isolation runs in-process."""
        if self.isolate and executor != "in-process":
            raise validate.OptionError(
                "--isolate runs with --executor in-process (one child per agent)"
            )


@dataclass(frozen=True, kw_only=True)
class ExecutorOptions(Checked):
    """Where the units of a command run (one driver writes the store in every mode)."""

    executor: str = flag(
        "in-process",
        "in-process | threads | dask (one driver writes the store in every mode).",
        check=OneOf(EXECUTORS),
        api=False,
    )
    scheduler: str | None = flag(
        None,
        "Dask scheduler address (default: a LocalCluster on this machine).",
        check=Rule(validate.scheduler_address, "not a scheduler"),
        api=False,
    )
    workers: int | None = flag(
        None,
        "Threads, or LocalCluster worker processes (default: per core).",
        check=Ints(1, 1024),
        api=False,
    )

    def open(self) -> AbstractContextManager[Executor]:
        """The executor, opened (an unreachable scheduler is refused before any store)."""
        from labreplay.execute.driver import open_executor

        return open_executor(self.executor, self.scheduler, self.workers)


@dataclass(frozen=True, kw_only=True)
class OutputOptions(Checked):
    """What the command prints: tables or JSON on stdout, progress on stderr."""

    json_out: bool = flag(
        False, "Print machine-readable JSON instead of tables.", name="--json", api=False
    )
    quiet: bool = flag(
        False,
        "No progress lines on stderr (they are off anyway when stderr is not a terminal).",
        api=False,
    )


@dataclass(frozen=True, kw_only=True)
class StoreOptions(Checked):
    """The results store a command writes or reads (the API takes a path or a `Store`)."""

    store: Path = flag(help="Results store (SQLite file).", api=False)


@dataclass(frozen=True, kw_only=True)
class DataDirOptions(Checked):
    """Where the recorded data are (`data verify`, `data fetch`: no compile)."""

    data_dir: Path | None = flag(
        None,
        "Data directory (default: $LABREPLAY_DATA_DIR, then the user cache).",
        api=False,
        show_default=False,
    )


@dataclass(frozen=True, kw_only=True)
class DataOptions(DataDirOptions):
    """Where the recorded data are read from, and whether a modified copy may be compiled."""

    allow_modified_data: bool = flag(
        False,
        "Compile from files whose sha256 differs from the manifest; the specs record the "
        "real hashes and are marked 'unverified data' on every board.",
    )


@dataclass(frozen=True, kw_only=True)
class ServeOptions(Checked):
    """How a suite's run is served over MCP, and to whom it is credited."""

    agent_name: str = flag(
        "mcp-harness",
        "Declared name of the model-harness system (the run's agent; keep it to resume).",
        check=Rule(validate.display_name, ""),
        api=False,
    )
    model: str | None = flag(None, "Declared model (provenance only).", api=False)
    transport: str = flag("stdio", "stdio | http", check=OneOf(("stdio", "http")), api=False)
    port: int = flag(
        8765, "Port of the http transport (127.0.0.1).", check=Ints(1, 65535), api=False
    )


__all__ = [
    "EXECUTORS",
    "DataDirOptions",
    "DataOptions",
    "ExecutorOptions",
    "IsolationOptions",
    "OutputOptions",
    "ServeOptions",
    "StoreOptions",
]
