"""The isolated agent's sandbox (bubblewrap) and resource limits.

With `bwrap` on PATH and usable (it needs mount and pid namespaces: root, or unprivileged user
namespaces), the isolated child runs in its own mount, pid, ipc, uts and cgroup namespaces:

- the file system is read-only and holds only what an interpreter needs (/usr, /bin, /lib*,
  /etc, /opt, the Python installation, the import path: site-packages, the source of an
  editable install, PYTHONPATH) and the agent's own module with the modules and packages
  beside it, a private /tmp and a writable working directory of its own;
- never the caller's working directory or $HOME, nor a directory above them, even when they
  are on the import path (`python -m`, `PYTHONPATH=.`): of an agent's module that lies there,
  the module and its importable neighbours (`*.py`, extensions, packages) are all it shows,
  not a store, a secret or any other file left there; one that lies inside what is bound (a
  working directory under /opt) is masked;
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
import importlib.machinery
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


def _private_dirs(cwd: str, env: Mapping[str, str]) -> list[Path]:
    """The caller's working directory and home: never shown to the agent (another store, a
    secret or a draft may lie there), nor any directory above them."""
    raw = [cwd, env.get("HOME", "")]
    return [Path(p).resolve() for p in raw if p and Path(p).is_absolute()]


def _import_path(cwd: str, env: Mapping[str, str]) -> list[str]:
    """The child's import path as it will search it: the working directory and PYTHONPATH
    (`child_environment`), then this interpreter's own (site-packages, the source of an
    editable install, the standard library)."""
    pythonpath = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    return [cwd, *pythonpath, *[p or cwd for p in sys.path]]


def _importable(directory: Path) -> list[str]:
    """The modules (`*.py`, compiled extensions) and regular packages (with an `__init__`) of
    `directory`: what an import from it can reach, and nothing else of it (not its data
    files, stores or other directories)."""
    suffixes = tuple(importlib.machinery.all_suffixes())
    try:
        entries = sorted(directory.iterdir())
    except OSError:
        return []
    return [
        str(entry)
        for entry in entries
        if (entry.is_file() and entry.name.endswith(suffixes))
        or (entry.is_dir() and any((entry / f"__init__{s}").is_file() for s in suffixes))
    ]


def module_locations(refs: Sequence[str], cwd: str, env: Mapping[str, str]) -> list[str]:
    """The file, or the package's directories, of the top-level module of each `MODULE:ATTR`
    reference, found as the child's import would find it and without importing it (an
    agent's module runs in the child only)."""
    search = [str(Path(cwd, p)) for p in _import_path(cwd, env)]
    found: list[str] = []
    for ref in refs:
        top = ref.partition(":")[0].split(".")[0]
        if not top.isidentifier():
            continue
        try:
            spec = importlib.machinery.PathFinder.find_spec(top, search)
        except (ImportError, OSError, ValueError):
            continue
        if spec is None:
            continue  # built in, or not importable: the child says so
        places = [str(p) for p in spec.submodule_search_locations or ()]
        if not places and spec.has_location and spec.origin:
            places = [spec.origin]
        found += places
    return found


def _sources(cwd: str, env: Mapping[str, str], refs: Sequence[str]) -> list[str]:
    """What the child reads, as named: the system directories, the interpreter, the import
    path without the private directories (nor one above them: the working directory is on the
    import path of `python -m` and `PYTHONPATH=.`), and the agent's own module with the modules
    beside it (of the working directory, only its modules and packages are shown)."""
    private = _private_dirs(cwd, env)
    entries = [
        p
        for p in _import_path(cwd, env)
        if p and not any(_inside(d, [Path(cwd, p).resolve()]) for d in private)
    ]
    interpreter = [sys.prefix, sys.base_prefix, sys.exec_prefix]
    interpreter.append(str(Path(sys.executable).resolve().parent))
    shown = [*_SYSTEM_DIRS, *interpreter, *entries]
    bound = [Path(cwd, p).resolve() for p in shown]
    modules = module_locations(refs, cwd, env)
    for place in list(modules):  # (a namespace package has no `__init__`: named itself)
        directory = Path(place).resolve().parent
        if not _inside(directory, bound):  # a module it may import lies beside it
            modules += _importable(directory)
    return [*shown, *modules]


def bind_roots(
    cwd: str, refs: Sequence[str] = (), env: Mapping[str, str] | None = None
) -> list[Path]:
    """What the child must read: the interpreter, its libraries, the import path and the
    modules of `refs` (`MODULE:ATTR`); never `cwd` or $HOME (see `_sources`)."""
    env = os.environ if env is None else env
    roots: list[Path] = []
    for raw in _sources(cwd, env, refs):
        path = Path(cwd, raw).resolve()
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


def _masks(path: Path) -> list[list[str]]:
    """The mounts that hide `path`: an empty directory, or /dev/null for a file and for its
    SQLite siblings."""
    if path.is_dir():
        return [["--tmpfs", str(path)]]
    files = [path, *(path.with_name(path.name + side) for side in _SQLITE_SIDES)]
    return [["--ro-bind", "/dev/null", str(f)] for f in files if f.exists()]


def sandbox_prefix(
    workdir: str,
    cwd: str,
    hide: Sequence[str] = (),
    argv: Sequence[str] | None = None,
    refs: Sequence[str] = (),
) -> list[str]:
    """The `bwrap ... --` command that runs the child in the sandbox described above; `refs`
    are the `MODULE:ATTR` references the child imports (the agent's and its contract's)."""
    bwrap = shutil.which("bwrap") or "bwrap"
    env = os.environ
    roots = bind_roots(cwd, refs, env)
    args = [bwrap, "--unshare-all", "--share-net", "--die-with-parent", "--new-session"]
    args += ["--tmpfs", "/tmp"]  # first: a bound directory may lie under /tmp
    # (target, mount) pairs applied parents first, so that a mask over a directory the view
    # shows (a store in site-packages, a working directory under /opt) is applied after that
    # directory's mount and before the mounts of anything needed below it
    mounts: list[tuple[Path, list[str]]] = [
        (root, ["--ro-bind", str(root), str(root)]) for root in roots
    ]
    for raw in _sources(cwd, env, refs):
        for link, target in _symlinks(raw, roots).items():
            mounts.append((Path(link), ["--symlink", target, link]))
    named = _named_paths(sys.argv[1:] if argv is None else argv, env)
    named += [Path(h).resolve() for h in hide]
    named += _private_dirs(cwd, env)
    needed = {*roots, Path(workdir).resolve(), Path(sys.executable).resolve()}
    for path in dict.fromkeys(named):
        # only what the view shows, and never a path it must show itself
        if _inside(path, roots) and path not in needed:
            mounts += [(path, mount) for mount in _masks(path)]
    seen: set[tuple[str, ...]] = set()
    for _, mount in sorted(mounts, key=lambda m: len(m[0].parts)):  # stable: binds first
        if tuple(mount) not in seen:
            seen.add(tuple(mount))
            args += mount
    args += ["--proc", "/proc", "--dev", "/dev"]
    args += ["--bind", workdir, workdir, "--chdir", workdir]
    return [*args, "--"]
