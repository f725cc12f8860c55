"""Run a Python agent in its own process, so that it receives observations and nothing else.

In-process, an agent shares memory with its environment: Python has no private attributes, and
`gc.get_objects()` reaches the environment's evaluator (its recorded outcomes) from any agent
code. `IsolatedAgent` is the same Agent protocol, served by a child process that builds the
agent by name and talks JSON lines over stdin/stdout: the child only ever holds what was sent
to it (observations and checkpoint snapshots), so no outcome can leak by reference.

This isolates memory, not the file system: the child runs as the same user. A published result
from untrusted agent code should come from `--isolate` with the sealed evaluator file kept
out of the agent's reach (README, "Reliability").

The child is started as `python -m labreplay.agents.isolated FACTORY NAME`, FACTORY being
"module:attribute" of a mapping name -> agent class (e.g. the campaign suite's reference
agents); the core imports it by that string at run time, never by an import statement.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from typing import IO, Any

from labreplay.errors import AgentError

_PROTOCOL = 1


class IsolatedAgent:
    """An agent served by a child process (the Agent protocol: name, params, reset, act,
    forecast)."""

    isolation = "subprocess"

    def __init__(self, factory: str, name: str) -> None:
        self._workdir = tempfile.TemporaryDirectory(prefix="labreplay-agent-")
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "labreplay.agents.isolated", factory, name],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=None,  # the agent's own messages reach the user's terminal
                text=True,
                encoding="utf-8",
                cwd=self._workdir.name,  # not the spec directory
            )
        except OSError as exc:
            self._workdir.cleanup()
            raise AgentError(f"cannot start the isolated agent {name!r}: {exc}") from exc
        hello = self._call({"op": "hello", "protocol": _PROTOCOL})
        self.name: str = str(hello["name"])
        self._params: dict[str, Any] = dict(hello["params"])

    # ------------------------------------------------------------------ protocol
    def params(self) -> dict[str, Any]:
        return dict(self._params)

    def reset(self, seed: int) -> None:
        self._call({"op": "reset", "seed": seed})

    def act(self, observation: Mapping[str, Any]) -> dict[str, Any]:
        return dict(self._call({"op": "act", "observation": observation})["value"])

    def forecast(self, snapshot: Mapping[str, Any]) -> dict[str, Any]:
        return dict(self._call({"op": "forecast", "snapshot": snapshot})["value"])

    # ------------------------------------------------------------------ plumbing
    def _call(self, message: Mapping[str, Any]) -> dict[str, Any]:
        stdin, stdout = self._proc.stdin, self._proc.stdout
        if stdin is None or stdout is None or self._proc.poll() is not None:
            raise AgentError(f"isolated agent process exited (code {self._proc.returncode})")
        try:
            stdin.write(json.dumps(message, allow_nan=False) + "\n")
            stdin.flush()
            line = stdout.readline()
        except (OSError, ValueError) as exc:
            raise AgentError(f"isolated agent: cannot talk to the child: {exc}") from exc
        if not line:
            self._proc.wait(timeout=5)
            raise AgentError(f"isolated agent process exited (code {self._proc.returncode})")
        reply: dict[str, Any] = json.loads(line)
        if "error" in reply:
            raise AgentError(f"isolated agent failed: {reply['error']}")
        return reply

    def close(self) -> None:
        if self._proc.poll() is None:
            try:
                if self._proc.stdin is not None:
                    self._proc.stdin.close()
                self._proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait()
        for stream in (self._proc.stdout,):
            if stream is not None:
                stream.close()
        self._workdir.cleanup()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()


def _build(factory: str, name: str) -> Any:
    import importlib

    module_name, _, attribute = factory.partition(":")
    registry = getattr(importlib.import_module(module_name), attribute)
    if name not in registry:
        raise AgentError(f"unknown agent {name!r}; choose from {sorted(registry)}")
    return registry[name]()


def _serve(factory: str, name: str, out: IO[str]) -> None:
    agent = _build(factory, name)
    for line in sys.stdin:
        message = json.loads(line)
        op = message.get("op")
        try:
            if op == "hello":
                reply: dict[str, Any] = {"name": agent.name, "params": agent.params()}
            elif op == "reset":
                agent.reset(int(message["seed"]))
                reply = {}
            elif op == "act":
                reply = {"value": agent.act(message["observation"])}
            elif op == "forecast":
                reply = {"value": agent.forecast(message["snapshot"])}
            else:
                reply = {"error": f"unknown op {op!r}"}
        except Exception as exc:
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        out.write(json.dumps(reply, allow_nan=False) + "\n")
        out.flush()


def main() -> None:
    factory, name = sys.argv[1], sys.argv[2]
    # The protocol owns the real stdout; anything the agent prints goes to stderr instead.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    sys.stdout = sys.stderr
    _serve(factory, name, out)


if __name__ == "__main__":
    main()
