"""The isolated agent's child: a supervisor, and the agent's server below it.

Started as `python -m labreplay.agents.isolated_child IN_FD OUT_FD MEMORY_MB CPU_S REF CONTRACT`
(in the sandbox when there is one). The protocol (JSON lines) runs over the two inherited pipe
descriptors, never over stdin/stdout: fd 0 is /dev/null and fd 1 is the same as fd 2 (the
user's stderr), so whatever the agent or a process it starts prints cannot corrupt a reply.

The supervisor is a child subreaper: it forks the server, sets the server's resource limits
(address space, CPU seconds), reaps every orphan, and when the server exits or labreplay asks
it to stop (SIGTERM, or labreplay itself dying), it kills every process left below it, in
whatever session or group (`labreplay.agents.process_tree`). It never runs the agent's code.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
import time
from typing import IO, TYPE_CHECKING

from labreplay.agents.isolated import encode_reply, one_line
from labreplay.agents.process_tree import (
    become_subreaper,
    die_with_parent,
    kill_tree,
)
from labreplay.errors import AgentError

if TYPE_CHECKING:
    from types import FrameType


def _scrubbed(text: str) -> str:
    from labreplay._provenance import scrub_text

    return scrub_text(text)


def _hello(ref: str, contract_ref: str) -> tuple[object, dict[str, object]]:
    from labreplay.agents.resolve import (
        build_from_ref,
        check_agent_object,
        contract_members,
        import_attribute,
    )

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
    return agent, {"name": name, "params": params, "methods": contract_members(contract)[1]}


def _answer(agent: object, method: str, args: list[object]) -> str:
    """The reply line to `method(*args)`: its value, or why it cannot cross the contract."""
    try:
        value = getattr(agent, method)(*args)
    except Exception as exc:
        return json.dumps({"raised": type(exc).__name__, "message": one_line(exc)})
    return encode_reply(method, value, _scrubbed)


def _with_id(ident: object, reply: str) -> str:
    """`reply` (a JSON object's text) with the request's id first, without re-encoding it."""
    return '{"id": ' + json.dumps(ident if isinstance(ident, int) else None) + ", " + reply[1:]


def serve(ref: str, contract_ref: str, requests: IO[str], out: IO[str]) -> None:
    agent: object = None
    methods: list[str] = []
    for line in requests:
        message = json.loads(line)
        op = message.get("op")
        if op == "hello":
            agent, hello = _hello(ref, contract_ref)
            listed = hello.get("methods", [])
            methods = [str(m) for m in listed] if isinstance(listed, list) else []
            reply = encode_reply("params", hello, _scrubbed)
        elif op == "call" and agent is not None and message.get("method") in methods:
            reply = _answer(agent, str(message["method"]), list(message.get("args", [])))
        else:
            reply = json.dumps({"error": f"unknown request {op!r} {message.get('method')!r}"})
        out.write(_with_id(message.get("id"), reply) + "\n")
        out.flush()


def _limit_self(memory_mb: int, cpu_s: int) -> None:
    """Resource limits every process of the agent inherits (0 = none)."""
    if memory_mb > 0:
        size = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (size, size))
    if cpu_s > 0:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 5))


def _run_server(
    in_fd: int, out_fd: int, memory_mb: int, cpu_s: int, ref: str, contract: str
) -> int:
    _limit_self(memory_mb, cpu_s)
    from labreplay._scrubbed_io import scrubbing

    requests = os.fdopen(in_fd, "r", encoding="utf-8")
    out = os.fdopen(out_fd, "w", encoding="utf-8")
    sys.stderr = scrubbing(sys.stderr)  # a key the user passed on is not printed either
    sys.stdout = sys.stderr
    serve(ref, contract, requests, out)
    return 0


def _supervise(server: int) -> int:
    """Reap every process below until the server exits or a stop is asked; then kill them."""
    stop = False

    def on_stop(_signum: int, _frame: FrameType | None) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_stop)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # labreplay decides when the agent stops
    code = 0
    while not stop:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == server:
            code = os.waitstatus_to_exitcode(status)
            break
        if pid == 0:
            time.sleep(0.05)
    kill_tree(os.getpid(), include_root=False)
    while True:  # reap what was killed
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
    return code


def main() -> None:
    in_fd, out_fd, memory_mb, cpu_s = (int(a) for a in sys.argv[1:5])
    ref, contract = sys.argv[5], sys.argv[6]
    os.dup2(2, 1)  # fd 1 of every process below is the user's stderr, not the protocol
    become_subreaper()
    die_with_parent(signal.SIGTERM)
    server = os.fork()
    if server == 0:
        code = 1
        try:
            code = _run_server(in_fd, out_fd, memory_mb, cpu_s, ref, contract)
        except BaseException as exc:  # the agent's crash: one line; labreplay sees EOF
            print(f"isolated agent: {type(exc).__name__}: {one_line(exc)}", file=sys.stderr)
            code = 1
        finally:
            os._exit(code)
    os.close(in_fd)
    os.close(out_fd)
    sys.exit(_supervise(server))


if __name__ == "__main__":
    main()
