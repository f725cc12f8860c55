"""Atomic file and directory outputs: a reader sees the old content or the new, never a part.

Every output of labreplay (specs, exports, reports, caches, question files, downloads) goes
through here, so the rules hold everywhere at once:
- the target is a regular file or nothing (`labreplay._files`): a device, a FIFO or a
  directory there is refused before anything is written, never replaced by a renamed file;
- the temporary file lives in the destination's own directory (a rename never crosses a
  filesystem, so it is atomic);
- a failure (full disk, permission, a bug, Ctrl-C) removes the temporary and leaves the
  destination as it was;
- the result has the mode a plain `open(path, "w")` would give (0666 minus the umask), not the
  0600 of `mkstemp`;
- OS errors become one-line `LabreplayError`s naming the path.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import IO, Literal, overload

from labreplay._files import writable_dir, writable_file
from labreplay.errors import LabreplayError


def _umask() -> int:
    """The process umask, read without changing it where the OS allows (Linux /proc): setting
    it, even briefly, would race with files other threads create meanwhile."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _umask_mode(directory: bool = False) -> int:
    return (0o777 if directory else 0o666) & ~_umask()


def describe_os_error(exc: OSError, path: str | Path) -> str:
    """`cannot write out/x.json: No space left on device` style text for an OS error."""
    reason = exc.strerror or type(exc).__name__
    return f"{path}: {reason}"


@overload
def atomic_open(
    path: str | Path, binary: Literal[False] = False
) -> AbstractContextManager[IO[str]]: ...


@overload
def atomic_open(path: str | Path, binary: Literal[True]) -> AbstractContextManager[IO[bytes]]: ...


def atomic_open(
    path: str | Path, binary: bool = False
) -> AbstractContextManager[IO[str] | IO[bytes]]:
    """Open a temporary beside `path` for writing (text, or bytes when `binary`); on clean
    exit it replaces `path`."""
    return _atomic_open(path, binary)


@contextmanager
def _atomic_open(path: str | Path, binary: bool) -> Iterator[IO[str] | IO[bytes]]:
    target = writable_file(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise LabreplayError(f"cannot write {describe_os_error(exc, target)}") from exc
    try:
        handle: IO[str] | IO[bytes] = (
            os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline="")
        )
        with handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, _umask_mode())
        os.replace(tmp, target)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise LabreplayError(f"cannot write {describe_os_error(exc, target)}") from exc
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    with atomic_open(path) as handle:
        handle.write(text)


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    with atomic_open(path, binary=True) as handle:
        handle.write(data)


@contextmanager
def atomic_directory(path: str | Path) -> Iterator[Path]:
    """Build a directory's files in a temporary sibling; on clean exit move them into `path`.

    Yields the temporary directory. A new `path` is the temporary directory renamed. In an
    existing `path`, files the build does not produce are kept, and each produced entry (file
    or directory) replaces its namesake: the namesakes are first moved aside, and if any move
    fails (a namesake of another kind, a full disk) every move is undone, so a failed build
    leaves `path` exactly as it was. `path` must be a directory or not exist (an existing file
    there is refused before anything is written), and a namesake must be of the kind built (a
    regular file for a file, a directory for a directory: a FIFO there is never replaced).
    """
    target = writable_dir(path, "output directory")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    except OSError as exc:
        raise LabreplayError(f"cannot write {describe_os_error(exc, target)}") from exc
    try:
        yield tmp
        created = not target.exists()
        if created:
            os.chmod(tmp, _umask_mode(directory=True))
        for item in sorted(tmp.rglob("*")):
            if item.is_file():
                os.chmod(item, _umask_mode())
        if created:
            os.replace(tmp, target)
            return
        _swap_into(tmp, target)
    except OSError as exc:
        raise LabreplayError(f"cannot write {describe_os_error(exc, target)}") from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _swap_into(built: Path, target: Path) -> None:
    """Move every entry of `built` into `target`, all or none (namesakes moved aside first)."""
    produced = sorted(p for p in built.iterdir())
    for item in produced:  # every namesake checked before anything moves
        (writable_dir if item.is_dir() else writable_file)(target / item.name)
    aside = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
    moved_aside: list[tuple[Path, Path]] = []  # (original place, where it waits)
    placed: list[tuple[Path, Path]] = []  # (new place, where it came from)
    try:
        for item in produced:
            dest = target / item.name
            if dest.exists() or dest.is_symlink():
                os.replace(dest, aside / item.name)
                moved_aside.append((dest, aside / item.name))
        for item in produced:
            os.replace(item, target / item.name)
            placed.append((target / item.name, item))
    except OSError:
        for new, origin in reversed(placed):
            with contextlib.suppress(OSError):
                os.replace(new, origin)
        for original, waiting in reversed(moved_aside):
            with contextlib.suppress(OSError):
                os.replace(waiting, original)
        with contextlib.suppress(OSError):
            aside.rmdir()  # only when every namesake went back (never delete the user's files)
        raise
    shutil.rmtree(aside, ignore_errors=True)  # the replaced namesakes
