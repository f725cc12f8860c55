"""Run any Python agent in its own process, so that it receives observations and nothing else.

In-process, an agent shares memory with its environment: Python has no private attributes, and
`gc.get_objects()` reaches the environment's evaluator (its recorded outcomes) from any agent
code. `IsolatedAgent` serves the same contract from a child process that builds the agent from
an importable reference and talks JSON lines over stdin/stdout: the child only ever holds what
was sent to it (observations, checkpoint snapshots, questions), so no outcome can leak by
reference. The agent's module is imported in the child only, never in the parent, so it cannot
patch the environment either.

This isolates memory, not the file system: the child runs as the same user. A published result
from untrusted agent code should come from `--isolate` with the sealed evaluator file kept
out of the agent's reach (README, "Reliability").

The child's environment is allow-listed (`child_environment`): what an interpreter, a locale
and numeric libraries need, and nothing else. No API key (OPENAI_API_KEY, the variable
`--api-key-env` names, any *KEY*/*TOKEN*/*SECRET*/*PASSWORD*), no LABREPLAY_* variable
(LABREPLAY_SEALED_DIR names where the sealed evaluator files are). An agent that needs a
variable gets it only when the user names it: `pass_env=[...]`, or the comma-separated names in
LABREPLAY_AGENT_ENV. What the child writes to stderr is scrubbed of credentials like the CLI's
own output.

Failure is data. Every call has a timeout: an agent that does not answer in time is stopped
and `AgentUnavailable` is raised (the run is recorded `failed` with that cause), as when the
child dies. An exception inside the agent comes back as `AgentRaised` (the suite records it
like the same exception raised in-process), and a reply that is not JSON as `AgentNonJSON`.

The child is started as `python -m labreplay.agents.isolated REF CONTRACT`, REF as in
`labreplay.agents.resolve.build_from_ref` (`MODULE:ATTR`, or `MODULE:ATTR[NAME]` for a suite's
reference agents) and CONTRACT the `MODULE:ATTR` of the contract protocol it must satisfy.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any

from labreplay.errors import AgentError

_PROTOCOL = 2
DEFAULT_TIMEOUT_S = 60.0
STARTUP_TIMEOUT_S = 60.0  # the child's interpreter start and imports, before its first answer
CAMPAIGN_CONTRACT = "labreplay.agents.contracts:CampaignAgent"


# What the child inherits without being asked: the interpreter's and the locale's variables,
# temporary directories, the dynamic loader's path and visible GPUs, CA bundles, and the thread
# counts of numeric libraries. LC_* too.
CHILD_ENV_ALLOWED = frozenset(
    {
        "PATH",
        "LD_LIBRARY_PATH",
        "CUDA_VISIBLE_DEVICES",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
        "PYTHONNOUSERSITE",
        "HOME",
        "USER",
        "LOGNAME",
        "LANG",
        "LANGUAGE",
        "TZ",
        "TERM",
        "NO_COLOR",
        "COLUMNS",
        "TMPDIR",
        "TEMP",
        "TMP",
        "SYSTEMROOT",
        "VIRTUAL_ENV",
        "PYTHONHASHSEED",
        "PYTHONIOENCODING",
        "PYTHONUTF8",
        "PYTHONDONTWRITEBYTECODE",
        "OMP_NUM_THREADS",
        "MKL_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "NUMEXPR_NUM_THREADS",
    }
)
AGENT_ENV_VARIABLE = "LABREPLAY_AGENT_ENV"  # comma-separated names the user passes on


def child_environment(
    parent: Mapping[str, str], pass_env: Sequence[str] = (), cwd: str | None = None
) -> dict[str, str]:
    """The isolated child's environment: the allow-listed variables of `parent` (never one
    whose name looks like a credential), the variables the user passes explicitly (`pass_env`
    and the names in LABREPLAY_AGENT_ENV), and a PYTHONPATH that starts with `cwd` so the
    user's module imports as in-process."""
    from labreplay._provenance import is_secret_name

    env = {
        name: value
        for name, value in parent.items()
        if (name in CHILD_ENV_ALLOWED or name.startswith("LC_")) and not is_secret_name(name)
    }
    named = [n.strip() for n in parent.get(AGENT_ENV_VARIABLE, "").split(",")]
    for name in [*pass_env, *named]:
        if name and name in parent:
            env[name] = parent[name]
    paths = [p for p in parent.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join([cwd, *paths] if cwd else paths)
    return env


class AgentUnavailable(AgentError):
    """The isolated agent stopped answering (timeout, or its process exited): the run fails."""


class AgentRaised(Exception):
    """The agent raised inside a call; `kind` is the exception's class name."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind, self.message = kind, message


class AgentNonJSON(Exception):
    """The agent returned a value that is not JSON; `raw` is its repr (truncated)."""

    def __init__(self, message: str, raw: str) -> None:
        super().__init__(message)
        self.message, self.raw = message, raw


def one_line(exc: BaseException) -> str:
    """An exception's message on one line (at most 300 characters), without a credential
    (scrubbed before it is cut, which could leave part of an encoded key)."""
    from labreplay._provenance import scrub_text

    text = scrub_text(" ".join(str(exc).split()))
    return text[:300] if text else type(exc).__name__


def raised_message(method: str, exc: BaseException) -> str:
    """How an exception inside `method` is recorded, the same in-process and isolated."""
    if isinstance(exc, AgentRaised):
        return f"{method}() raised {exc.kind}: {exc.message}"
    return f"{method}() raised {type(exc).__name__}: {one_line(exc)}"


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def plain_repr(value: Any, clean: Callable[[str], str] | None = None) -> str:
    """`repr(value)` without memory addresses, at most 2,000 characters: how a non-JSON
    reply is recorded, identical in-process and in an isolated child. `clean` (a scrubber)
    runs before the cut, so a cut never leaves part of a secret no pattern matches."""
    try:
        text = repr(value)
    except Exception as exc:  # a broken __repr__ is the agent's, not ours
        text = f"<{type(value).__name__}: repr() raised {type(exc).__name__}>"
    text = _ADDRESS.sub("", text)
    return (clean(text) if clean is not None else text)[:2000]


def json_problem(method: str, value: Any) -> str | None:
    """Why `value` (returned by `method`) cannot cross the contract as JSON, or None."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return f"{method}() returned a non-JSON value ({type(value).__name__})"
    return None


class IsolatedAgent:
    """An agent served by a child process: `name` and `params()` as the child reports them,
    and the contract's methods (campaign `reset`/`act`/`forecast`, conditions `answer`,
    configsearch `suggest`/`observe`) forwarded as JSON."""

    isolation = "subprocess"

    def __init__(
        self,
        ref: str,
        contract: str = CAMPAIGN_CONTRACT,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        label: str | None = None,
        pass_env: Sequence[str] = (),
    ) -> None:
        if timeout_s <= 0:
            raise AgentError(f"the isolated agent's timeout must be > 0 s, got {timeout_s}")
        self.timeout_s = timeout_s
        self.label = label or ref
        self._workdir = tempfile.TemporaryDirectory(prefix="labreplay-agent-")
        # Allow-listed: no key, no path to sealed data. The user's module is importable from
        # where they ran the command, as in-process.
        env = child_environment(os.environ, pass_env, os.getcwd())
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "labreplay.agents.isolated", ref, contract],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=None,  # the agent's own messages reach the user's terminal
                text=True,
                encoding="utf-8",
                cwd=self._workdir.name,  # not the spec directory
                env=env,
                # its own process group, so that stopping the agent also stops every process
                # it started (they would otherwise outlive the run)
                start_new_session=True,
            )
        except OSError as exc:
            self._workdir.cleanup()
            raise AgentError(f"agent {self.label!r}: cannot start its process: {exc}") from exc
        self._replies: queue.Queue[str] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        # Starting an interpreter and importing the agent's module is not the agent's answer
        # time: on a loaded machine it alone can exceed a short per-call timeout.
        startup = max(self.timeout_s, STARTUP_TIMEOUT_S)
        hello = self._call({"op": "hello", "protocol": _PROTOCOL}, "hello", startup)
        if "refused" in hello:  # the child could not build or check the agent
            self.close()
            raise AgentError(str(hello["refused"]))
        self.name: str = str(hello["name"])
        self._params: dict[str, Any] = dict(hello["params"])
        # the methods the contract declares, as the child read them off the Protocol: any
        # suite's contract is forwarded, a fourth suite's included (see `__getattr__`)
        self.methods: tuple[str, ...] = tuple(str(m) for m in hello.get("methods") or ())

    def __getattr__(self, name: str) -> Any:
        """A contract method this class does not spell out (a fourth suite's), forwarded to
        the child like the built-in ones; anything else is absent, as on the agent."""
        if name.startswith("_") or name not in self.__dict__.get("methods", ()):
            raise AttributeError(name)
        return functools.partial(self.call, name)

    # ------------------------------------------------------------------ contract
    def params(self) -> dict[str, Any]:
        return dict(self._params)

    def reset(self, seed: int) -> None:
        self.call("reset", seed)

    def act(self, observation: Mapping[str, Any]) -> Any:
        return self.call("act", observation)

    def forecast(self, snapshot: Mapping[str, Any]) -> Any:
        return self.call("forecast", snapshot)

    def answer(self, question_view: dict[str, Any]) -> Any:
        return self.call("answer", question_view)

    def suggest(self, history: Mapping[str, Any]) -> Any:
        return self.call("suggest", history)

    def observe(self, result: Mapping[str, Any]) -> None:
        self.call("observe", result)

    def call(self, method: str, *args: Any) -> Any:
        """`method(*args)` in the child; its JSON return value."""
        reply = self._call({"op": "call", "method": method, "args": list(args)}, method)
        if "raised" in reply:
            raise AgentRaised(str(reply["raised"]), str(reply.get("message", "")))
        if "nonjson" in reply:
            raise AgentNonJSON(str(reply["nonjson"]), str(reply.get("raw", "")))
        return reply.get("value")

    # ------------------------------------------------------------------ plumbing
    def _read(self) -> None:
        stdout = self._proc.stdout
        assert stdout is not None
        for line in stdout:
            self._replies.put(line)
        self._replies.put("")  # end of stream: the child exited

    def _call(
        self, message: Mapping[str, Any], method: str, timeout_s: float | None = None
    ) -> dict[str, Any]:
        wait = self.timeout_s if timeout_s is None else timeout_s
        stdin = self._proc.stdin
        if stdin is None or self._proc.poll() is not None:
            raise AgentUnavailable(
                f"agent {self.label!r}: its process exited (code {self._proc.returncode})"
            )
        try:
            stdin.write(json.dumps(message, allow_nan=False) + "\n")
            stdin.flush()
        except (OSError, ValueError) as exc:
            raise AgentUnavailable(f"agent {self.label!r}: cannot send {method}(): {exc}") from exc
        try:
            line = self._replies.get(timeout=wait)
        except queue.Empty:
            self._kill()
            raise AgentUnavailable(
                f"agent {self.label!r}: {method}() did not answer within {wait:g} s "
                "(its process was stopped)"
            ) from None
        if not line:
            self._proc.wait(timeout=5)
            raise AgentUnavailable(
                f"agent {self.label!r}: its process exited during {method}() "
                f"(code {self._proc.returncode})"
            )
        try:
            reply: dict[str, Any] = json.loads(line)
        except json.JSONDecodeError:
            raise AgentUnavailable(
                f"agent {self.label!r}: its process wrote a line that is not the protocol"
            ) from None
        if "error" in reply:
            raise AgentUnavailable(f"agent {self.label!r}: {reply['error']}")
        return reply

    def _kill(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        self._kill_group()

    def _kill_group(self) -> None:
        """Stop what the agent started and left running (its group outlives its leader)."""
        with contextlib.suppress(ProcessLookupError, PermissionError, AttributeError):
            os.killpg(self._proc.pid, signal.SIGKILL)

    def close(self) -> None:
        if self._proc.poll() is None:
            try:
                if self._proc.stdin is not None:
                    self._proc.stdin.close()
                self._proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self._kill()
        self._kill_group()
        self._workdir.cleanup()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()


# ---------------------------------------------------------------------- the child
def _scrubbed(text: str) -> str:
    from labreplay._provenance import scrub_text

    return scrub_text(text)


def _hello(ref: str, contract_ref: str) -> tuple[Any, dict[str, Any]]:
    from labreplay.agents.resolve import build_from_ref, check_agent_object, import_attribute

    try:
        agent = build_from_ref(ref)
        contract = import_attribute(contract_ref)
        name, params = check_agent_object(agent, contract, ref)
    except AgentError as exc:
        return None, {"refused": str(exc)}
    except Exception as exc:
        return None, {
            "refused": f"agent {ref!r}: building it raised {type(exc).__name__}: {one_line(exc)}"
        }
    from labreplay.agents.resolve import contract_members

    return agent, {"name": name, "params": params, "methods": contract_members(contract)[1]}


def _serve(ref: str, contract_ref: str, out: IO[str]) -> None:
    agent: Any = None
    methods: list[str] = []
    for line in sys.stdin:
        message = json.loads(line)
        op = message.get("op")
        if op == "hello":
            agent, reply = _hello(ref, contract_ref)
            methods = list(reply.get("methods", []))
        elif op == "call" and agent is not None and message.get("method") in methods:
            method = str(message["method"])
            try:
                value = getattr(agent, method)(*message.get("args", []))
            except Exception as exc:
                reply = {"raised": type(exc).__name__, "message": one_line(exc)}
            else:
                problem = json_problem(method, value)
                reply = (
                    {"value": value}
                    if problem is None
                    else {"nonjson": problem, "raw": plain_repr(value, _scrubbed)}
                )
        else:
            reply = {"error": f"unknown request {op!r} {message.get('method')!r}"}
        out.write(json.dumps(reply, allow_nan=False) + "\n")
        out.flush()


def main() -> None:
    ref, contract_ref = sys.argv[1], sys.argv[2]
    # The protocol owns the real stdout; anything the agent prints goes to stderr instead.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    from labreplay._scrubbed_io import scrubbing

    sys.stderr = scrubbing(sys.stderr)  # a key the user passed on is not printed either
    sys.stdout = sys.stderr
    _serve(ref, contract_ref, out)


if __name__ == "__main__":
    main()
