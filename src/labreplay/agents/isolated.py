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
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from labreplay.agents.process_tree import kill_tree
from labreplay.agents.sandbox import Limits, limits_from_env, sandbox_prefix, sandbox_status
from labreplay.errors import AgentError

if TYPE_CHECKING:
    from labreplay.runtime.event_types import JsonValue

_PROTOCOL = 2
DEFAULT_TIMEOUT_S = 60.0
MAX_TIMEOUT_S = 7 * 24 * 3600.0  # a week: beyond it a timeout is a typo (and overflows waits)
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


def plain_repr(value: object, clean: Callable[[str], str] | None = None) -> str:
    """`repr(value)` without memory addresses, at most 2,000 characters: how a non-JSON
    reply is recorded, identical in-process and in an isolated child. `clean` (a scrubber)
    runs before the cut, so a cut never leaves part of a secret no pattern matches."""
    try:
        text = repr(value)
    except Exception as exc:  # a broken __repr__ is the agent's, not ours
        text = f"<{type(value).__name__}: repr() raised {type(exc).__name__}>"
    text = _ADDRESS.sub("", text)
    return (clean(text) if clean is not None else text)[:2000]


MAX_REPLY_BYTES = 4 * 1024 * 1024  # one reply of an agent, as JSON
MAX_REPLY_DEPTH = 64  # nesting of lists and objects in one reply


def too_deep(value: object, limit: int = MAX_REPLY_DEPTH) -> bool:
    """Whether `value` nests lists/dicts deeper than `limit` (iterative: no recursion)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Iterable[object] = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _problem_and_text(method: str, value: object) -> tuple[str | None, str]:
    if too_deep(value):
        return f"{method}() returned a value nested deeper than {MAX_REPLY_DEPTH} levels", ""
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return f"{method}() returned a non-JSON value ({type(value).__name__})", ""
    if len(text) > MAX_REPLY_BYTES:  # characters <= bytes: checked again on bytes below
        return f"{method}() returned {len(text)} characters of JSON, over {MAX_REPLY_BYTES}", ""
    return None, text


def json_problem(method: str, value: object) -> str | None:
    """Why `value` (returned by `method`) cannot cross the contract as JSON, or None: not
    JSON, nested deeper than MAX_REPLY_DEPTH, or longer than MAX_REPLY_BYTES (the same rules
    in-process and isolated; the agent's bad reply is an invalid action, not a crash)."""
    return _problem_and_text(method, value)[0]


def encode_reply(method: str, value: object, clean: Callable[[str], str]) -> str:
    """The child's reply line for `value`: {"value": ...}, or {"nonjson": why, "raw": repr}."""
    problem, text = _problem_and_text(method, value)
    if problem is None:
        return '{"value": ' + text + "}"
    return json.dumps({"nonjson": problem, "raw": plain_repr(value, clean)})


class IsolatedAgent:
    """An agent served by a child process: `name` and `params()` as the child reports them,
    and the contract's methods (campaign `reset`/`act`/`forecast`, conditions `answer`,
    configsearch `suggest`/`observe`) forwarded as JSON. `sandbox` is "bwrap" when the child
    runs in the bubblewrap sandbox (`labreplay.agents.sandbox`), else "none"."""

    isolation = "subprocess"

    def __init__(
        self,
        ref: str,
        contract: str = CAMPAIGN_CONTRACT,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        label: str | None = None,
        pass_env: Sequence[str] = (),
        sandbox: bool | None = None,
        limits: Limits | None = None,
        hide: Sequence[str] = (),
    ) -> None:
        if not 0 < timeout_s <= MAX_TIMEOUT_S:
            raise AgentError(
                f"the isolated agent's timeout must be > 0 and <= {MAX_TIMEOUT_S:g} s, "
                f"got {timeout_s}"
            )
        self.timeout_s = timeout_s
        self.label = label or ref
        limits = limits or limits_from_env()
        use_sandbox = sandbox_status().available if sandbox is None else sandbox
        self._workdir = tempfile.TemporaryDirectory(prefix="labreplay-agent-")
        # Allow-listed: no key, no path to sealed data. The user's module is importable from
        # where they ran the command, as in-process.
        cwd = os.getcwd()
        env = child_environment(os.environ, pass_env, cwd)
        prefix = []
        if use_sandbox:  # the view holds the modules of the agent and of its contract
            prefix = sandbox_prefix(self._workdir.name, cwd, hide, refs=(ref, contract))
        # the protocol's own pipes: what the agent prints (fd 1 included) never mixes in
        to_child, self._requests_w = os.pipe()
        self._replies_r, from_child = os.pipe()
        command = [
            *prefix,
            sys.executable,
            "-m",
            "labreplay.agents.isolated_child",
            str(to_child),
            str(from_child),
            str(limits.memory_mb),
            str(limits.cpu_s),
            ref,
            contract,
        ]
        try:
            self._proc = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=2,  # the child's fd 1 is the user's stderr
                stderr=None,  # the agent's own messages reach the user's terminal
                cwd=self._workdir.name,  # not the spec directory
                env=env,
                pass_fds=(to_child, from_child),
                # its own session and group: a terminal's Ctrl-C reaches labreplay only
                start_new_session=True,
            )
        except OSError as exc:
            for fd in (to_child, from_child, self._requests_w, self._replies_r):
                os.close(fd)
            self._workdir.cleanup()
            raise AgentError(f"agent {self.label!r}: cannot start its process: {exc}") from exc
        finally:
            for fd in (to_child, from_child):
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.sandbox = "bwrap" if use_sandbox else "none"
        self._requests = os.fdopen(self._requests_w, "w", encoding="utf-8")
        self._sequence = 0  # each request's id; a reply names the one it answers
        self._replies: queue.Queue[tuple[str, bytes]] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        # Starting an interpreter and importing the agent's module is not the agent's answer
        # time: on a loaded machine it alone can exceed a short per-call timeout.
        startup = max(self.timeout_s, STARTUP_TIMEOUT_S)
        try:
            hello = self._call({"op": "hello", "protocol": _PROTOCOL}, "hello", startup)
        except AgentError:
            self.close()
            raise
        value = hello.get("value")
        if isinstance(value, dict):
            hello = value
        if "refused" in hello:  # the child could not build or check the agent
            self.close()
            raise AgentError(str(hello["refused"]))
        if "nonjson" in hello:  # its name or params break the reply limits
            self.close()
            raise AgentError(f"agent {self.label!r}: {hello['nonjson']}")
        self.name: str = str(hello["name"])
        params = hello["params"]
        if not isinstance(params, dict):  # the child sends check_agent_object's dict
            self.close()
            raise AgentError(f"agent {self.label!r}: params() did not cross as a JSON object")
        self._params: dict[str, JsonValue] = params
        # the methods the contract declares, as the child read them off the Protocol: any
        # suite's contract is forwarded, a fourth suite's included (see `__getattr__`)
        listed = hello.get("methods") or []
        self.methods: tuple[str, ...] = (
            tuple(str(m) for m in listed) if isinstance(listed, list) else ()
        )

    def __getattr__(self, name: str) -> Callable[..., JsonValue]:
        """A contract method this class does not spell out (a fourth suite's), forwarded to
        the child like the built-in ones; anything else is absent, as on the agent."""
        if name.startswith("_") or name not in self.__dict__.get("methods", ()):
            raise AttributeError(name)
        return functools.partial(self.call, name)

    # ------------------------------------------------------------------ contract
    def params(self) -> dict[str, JsonValue]:
        return dict(self._params)

    def reset(self, seed: int) -> None:
        self.call("reset", seed)

    def act(self, observation: Mapping[str, JsonValue]) -> JsonValue:
        return self.call("act", dict(observation))

    def forecast(self, snapshot: Mapping[str, JsonValue]) -> JsonValue:
        return self.call("forecast", dict(snapshot))

    def answer(self, question_view: Mapping[str, JsonValue]) -> JsonValue:
        return self.call("answer", dict(question_view))

    def suggest(self, history: Mapping[str, JsonValue]) -> JsonValue:
        return self.call("suggest", dict(history))

    def observe(self, result: Mapping[str, JsonValue]) -> None:
        self.call("observe", dict(result))

    def call(self, method: str, *args: JsonValue) -> JsonValue:
        """`method(*args)` in the child; its JSON return value (decoded)."""
        reply = self._call({"op": "call", "method": method, "args": list(args)}, method)
        if "raised" in reply:
            raise AgentRaised(str(reply["raised"]), str(reply.get("message", "")))
        if "nonjson" in reply:
            raise AgentNonJSON(str(reply["nonjson"]), str(reply.get("raw", "")))
        return reply.get("value")

    # ------------------------------------------------------------------ plumbing
    def _read(self) -> None:
        """Reply lines, each at most MAX_REPLY_BYTES: a longer one is read to its end and
        dropped (reported as "oversize"), so a flood never sits in memory."""
        with os.fdopen(self._replies_r, "rb", buffering=1 << 16) as replies:
            while True:
                line = replies.readline(MAX_REPLY_BYTES + 2)
                if not line:
                    break
                if line.endswith(b"\n"):
                    self._replies.put(("line", line))
                    continue
                size = len(line)
                while line and not line.endswith(b"\n"):
                    line = replies.readline(1 << 20)
                    size += len(line)
                self._replies.put(("oversize", str(size).encode()))
        self._replies.put(("eof", b""))  # end of stream: the child exited

    def _decode(self, kind: str, line: bytes, method: str) -> dict[str, JsonValue]:
        """A reply line as a dict; a reply over the limits is the agent's bad reply."""
        if kind == "oversize":
            bad = f"{method}() sent a reply of {int(line)} bytes, over {MAX_REPLY_BYTES}"
            return {"nonjson": bad, "raw": ""}
        try:
            reply = json.loads(line)
        except RecursionError:
            return {"nonjson": f"{method}() sent a reply nested too deep", "raw": ""}
        except (json.JSONDecodeError, UnicodeDecodeError):
            self._kill()
            raise AgentUnavailable(
                f"agent {self.label!r}: its process wrote a line that is not the protocol"
            ) from None
        if not isinstance(reply, dict):
            self._kill()
            raise AgentUnavailable(
                f"agent {self.label!r}: its reply to {method}() is not an object"
            )
        if too_deep(reply, MAX_REPLY_DEPTH + 1):  # the reply's own wrapper is one level
            return {"nonjson": f"{method}() sent a reply nested deeper than {MAX_REPLY_DEPTH}"}
        return reply

    def _call(
        self, message: Mapping[str, JsonValue], method: str, timeout_s: float | None = None
    ) -> dict[str, JsonValue]:
        wait = self.timeout_s if timeout_s is None else timeout_s
        if self._proc.poll() is not None:
            raise AgentUnavailable(
                f"agent {self.label!r}: its process exited (code {self._proc.returncode})"
            )
        self._sequence += 1
        ident = self._sequence
        try:
            self._requests.write(json.dumps({**message, "id": ident}, allow_nan=False) + "\n")
            self._requests.flush()
        except (OSError, ValueError) as exc:
            raise AgentUnavailable(f"agent {self.label!r}: cannot send {method}(): {exc}") from exc
        deadline = time.monotonic() + wait
        while True:
            try:
                kind, line = self._replies.get(timeout=max(deadline - time.monotonic(), 0.0))
            except queue.Empty:
                self._kill()
                raise AgentUnavailable(
                    f"agent {self.label!r}: {method}() did not answer within {wait:g} s "
                    "(its process was stopped)"
                ) from None
            if kind == "eof":
                self._stop_processes()
                raise AgentUnavailable(
                    f"agent {self.label!r}: its process exited during {method}() "
                    f"(code {self._proc.returncode})"
                )
            reply = self._decode(kind, line, method)
            # a line for an earlier request (the agent wrote onto the protocol pipe itself,
            # and its own reply came after) is dropped; one over the limits has no readable
            # id and is this call's bad reply
            if reply.get("id", ident) == ident:
                break
        if "error" in reply:
            raise AgentUnavailable(f"agent {self.label!r}: {reply['error']}")
        return reply

    def _stop_processes(self, grace_s: float = 0.0) -> None:
        """Stop the child and every process below it (any session or group), and reap it."""
        if grace_s > 0:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=grace_s)
        kill_tree(self._proc.pid, include_root=self._proc.poll() is None)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, signal.SIGKILL)  # a group the supervisor lost
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=5)

    def _kill(self) -> None:
        self._stop_processes()

    def close(self) -> None:
        """End the agent: its pipe closes (the server exits, the supervisor kills what is left
        below it); anything still running after a grace period is killed from here."""
        with contextlib.suppress(OSError, ValueError):
            self._requests.close()
        self._stop_processes(grace_s=5.0 if self._proc.poll() is None else 0.0)
        self._workdir.cleanup()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()
