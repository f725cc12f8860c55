"""Every process an isolated agent started, found and stopped through /proc.

Killing a process group is not enough: a grandchild that calls `setsid()` leaves the group,
and one whose parent exited is re-parented away from the agent. The isolated child's
supervisor (`labreplay.agents.isolated_child`) is therefore a child subreaper
(`PR_SET_CHILD_SUBREAPER`): orphans below it stay below it, so "every descendant" is the
subtree under its pid in /proc, whatever sessions or groups they made. `kill_tree` kills that
subtree (leaves first, rescanning until it is empty, so a process forking while it is killed
is caught on the next pass), then the root.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import time
from pathlib import Path

_PROC = Path("/proc")
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process visible in /proc."""
    parents: dict[int, int] = {}
    for entry in _PROC.iterdir() if _PROC.is_dir() else ():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text(encoding="utf-8", errors="replace")
        except OSError:  # exited while we looked
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 1 and fields[1].isdigit():
            parents[int(entry.name)] = int(fields[1])
    return parents


def descendants(root: int) -> list[int]:
    """The pids below `root` (children before their own children)."""
    children: dict[int, list[int]] = {}
    for pid, parent in _parents().items():
        children.setdefault(parent, []).append(pid)
    found: list[int] = []
    frontier = [root]
    while frontier:
        below = [c for p in frontier for c in children.get(p, []) if c not in found]
        found.extend(below)
        frontier = below
    return found


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


def kill_tree(root: int, *, include_root: bool = True, rounds: int = 50) -> int:
    """SIGKILL every descendant of `root` (rescanning until none is left), then `root`
    itself when `include_root`. Returns how many processes were signalled."""
    signalled: set[int] = set()
    for _ in range(rounds):
        below = descendants(root)
        if not below:
            break
        for pid in reversed(below):  # the deepest first: fewer orphans to chase
            _kill(pid)
            signalled.add(pid)
        time.sleep(0.01)
    if include_root:
        _kill(root)
        signalled.add(root)
    return len(signalled)


def _prctl(option: int, value: int) -> bool:
    """prctl(option, value) through libc; False where it is not available (not Linux)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name, use_errno=True)
        return int(libc.prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux >= 3.4)."""
    return _prctl(PR_SET_CHILD_SUBREAPER, 1)


def die_with_parent(sig: int = signal.SIGTERM) -> bool:
    """Have the kernel send `sig` to this process when its parent exits."""
    return _prctl(PR_SET_PDEATHSIG, int(sig))
