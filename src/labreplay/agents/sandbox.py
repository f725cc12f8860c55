"""The isolated agent's sandbox (bubblewrap) and resource limits.

With `bwrap` on PATH and usable (it needs mount and pid namespaces: root, or unprivileged user
namespaces), the isolated child runs in its own mount, pid, ipc, uts and cgroup namespaces:

- the file system is read-only and holds only what an interpreter needs (/usr, /bin, /lib*,
  /etc, the Python installation, the parent's import path and working directory, from which
  the agent's module is imported), a private /tmp and a writable working directory;
- every existing path named on labreplay's command line (`--store`, `--specs`, outputs) or in a
  LABREPLAY_* variable (the sealed directory, the data directory) is masked inside what is
  bound: an empty directory, or /dev/null for a file (and its SQLite -wal/-shm/-journal);
- its /proc is its own: the evaluator's command line and environment are not visible, and the
  evaluator cannot be signalled; when the sandbox's first process exits, the kernel kills every
  process left in it.

The network is shared (an agent may call a model endpoint). `LABREPLAY_SANDBOX=off` turns the
sandbox off. Measured behaviour and what remains without it: docs/isolation.md.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from labreplay.errors import AgentError

SANDBOX_VARIABLE = "LABREPLAY_SANDBOX"  # "off": run isolated agents without the sandbox
MEMORY_VARIABLE = "LABREPLAY_AGENT_MEMORY_MB"
CPU_VARIABLE = "LABREPLAY_AGENT_CPU_S"
DEFAULT_MEMORY_MB = 4096  # address space of each process the agent runs
DEFAULT_CPU_S = 3600  # CPU seconds of each process the agent runs
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
_SQLITE_SIDES = ("-wal", "-shm", "-journal")


@dataclass(frozen=True)
class Limits:
    """Per-process limits of the agent's processes (`setrlimit`), 0 for none."""

    memory_mb: int = DEFAULT_MEMORY_MB
    cpu_s: int = DEFAULT_CPU_S


def _limit(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) > 10**7:
        raise AgentError(f"{name}: must be a whole number from 0 to 10000000, got {raw!r}")
    return int(raw)


def limits_from_env(env: Mapping[str, str] | None = None) -> Limits:
    """The limits LABREPLAY_AGENT_MEMORY_MB / LABREPLAY_AGENT_CPU_S set (0 = no limit)."""
    env = os.environ if env is None else env
    return Limits(
        _limit(env, MEMORY_VARIABLE, DEFAULT_MEMORY_MB), _limit(env, CPU_VARIABLE, DEFAULT_CPU_S)
    )


@dataclass(frozen=True)
class SandboxStatus:
    available: bool
    reason: str  # why not, in a few words ("" when available)


@functools.cache
def _probe(bwrap: str) -> SandboxStatus:
    """Run `true` in the namespaces the sandbox uses: whether the platform allows them."""
    try:
        done = subprocess.run(
            [
                bwrap,
                "--ro-bind",
                "/",
                "/",
                "--unshare-all",
                "--share-net",
                "--proc",
                "/proc",
                "--dev",
                "/dev",
                "--die-with-parent",
                "--",
                "true",
            ],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return SandboxStatus(False, f"bwrap did not start ({type(exc).__name__})")
    if done.returncode != 0:
        why = " ".join(done.stderr.split())[:160] or f"exit {done.returncode}"
        return SandboxStatus(False, f"bwrap cannot create namespaces here: {why}")
    return SandboxStatus(True, "")


def sandbox_status() -> SandboxStatus:
    """Whether isolated agents run in the sandbox on this machine, and why not."""
    if os.environ.get(SANDBOX_VARIABLE, "").strip().lower() in {"off", "0", "no"}:
        return SandboxStatus(False, f"{SANDBOX_VARIABLE}=off")
    if not sys.platform.startswith("linux"):
        return SandboxStatus(False, f"no sandbox on {sys.platform}")
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return SandboxStatus(False, "bwrap (bubblewrap) is not installed")
    return _probe(bwrap)


def _inside(path: Path, roots: Iterable[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


def _named_paths(argv: Sequence[str], env: Mapping[str, str]) -> list[Path]:
    """Existing paths named on the command line or in a LABREPLAY_* variable."""
    values = [a.split("=", 1)[1] if a.startswith("--") and "=" in a else a for a in argv]
    values += [v for k, v in env.items() if k.startswith("LABREPLAY_")]
    found: list[Path] = []
    for value in values:
        if not value or "\n" in value or len(value) > 4096:
            continue
        try:
            path = Path(value).resolve()
            if path.exists() and path != Path("/"):
                found.append(path)
        except (OSError, RuntimeError, ValueError):
            continue
    return found


def _candidates(cwd: str) -> list[str]:
    return [
        *_SYSTEM_DIRS,
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        str(Path(sys.executable).resolve().parent),
        *[p for p in sys.path if p],
        *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p],
        cwd,
    ]


def bind_roots(cwd: str) -> list[Path]:
    """What the child must read: the interpreter, its libraries, the import path, `cwd`."""
    roots: list[Path] = []
    for raw in _candidates(cwd):
        path = Path(raw).resolve()
        if path.exists() and path not in roots:
            roots.append(path)
    return roots


def _symlinks(raw: str, roots: Sequence[Path]) -> dict[str, str]:
    """link -> target for `--symlink`, to recreate the symbolic links on the way to `raw` (a virtual
    environment reached through a link must be run by the path that names it, where Python
    finds its pyvenv.cfg), outside what is bound anyway."""
    links: dict[str, str] = {}
    path = Path(os.path.abspath(raw))
    for link in [*reversed(path.parents), path]:
        if link.is_symlink() and not _inside(link.parent.resolve(), roots):
            links[str(link)] = os.readlink(link)
    return links


def sandbox_prefix(
    workdir: str, cwd: str, hide: Sequence[str] = (), argv: Sequence[str] | None = None
) -> list[str]:
    """The `bwrap ... --` command that runs the child in the sandbox described above."""
    bwrap = shutil.which("bwrap") or "bwrap"
    roots = bind_roots(cwd)
    args = [bwrap, "--unshare-all", "--share-net", "--die-with-parent", "--new-session"]
    args += ["--tmpfs", "/tmp"]  # first: a bound directory may lie under /tmp
    for root in sorted(roots, key=lambda p: len(p.parts)):  # parents before children
        args += ["--ro-bind", str(root), str(root)]
    links: dict[str, str] = {}
    for raw in _candidates(cwd):
        links.update(_symlinks(raw, roots))
    for link, target in links.items():
        args += ["--symlink", target, link]
    args += ["--proc", "/proc", "--dev", "/dev"]
    args += ["--bind", workdir, workdir, "--chdir", workdir]
    named = _named_paths(sys.argv[1:] if argv is None else argv, os.environ)
    named += [Path(h).resolve() for h in hide]
    needed = [*roots, Path(workdir).resolve(), Path(sys.executable).resolve()]
    for path in named:
        # never mask what the child needs (a path named on the command line may be the working
        # directory, an import path or an ancestor of one); mask only what the sandbox shows
        if not _inside(path, roots) or any(path == n or path in n.parents for n in needed):
            continue
        if path.is_dir():
            args += ["--tmpfs", str(path)]
            continue
        args += ["--ro-bind", "/dev/null", str(path)]
        for side in _SQLITE_SIDES:
            sibling = path.with_name(path.name + side)
            if sibling.exists():
                args += ["--ro-bind", "/dev/null", str(sibling)]
    return [*args, "--"]
