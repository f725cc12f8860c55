"""The two rules for the paths a user names: what labreplay writes and what it reads.

Writes: every file labreplay writes is a regular file. An output path that holds a device, a
FIFO, a socket or a directory (a derived sibling such as `<out>.spec.json` included) is refused
before anything is written, and left as it is: the atomic writer renames a temporary file over
its target, which would have replaced /dev/null itself with a regular file.

Reads: every file read from a user-named path is a regular file of bounded size. A FIFO would
block the reader for ever, /dev/zero would fill the memory, and a directory or a device is
named for what it is, not reported as "not found".

`_atomic` (every writer), `labreplay.store.sqlite.Store` and the CLI's `--out` callbacks apply
the first rule through `writable_file`/`writable_dir`; every reader of a user-named file goes
through `read_file` (parsed whole) or `readable_file` (a reader that streams it).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from labreplay.errors import DataError

# What one input file parsed whole may weigh: far above any real question file, spec, price
# table, card or predictions file (the largest real one is a few MB), far below the memory.
MAX_INPUT_BYTES = 256 * 2**20

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class FileKindError(DataError):
    """A user-named path is missing, is not a regular file (or directory) or is too large."""


def kind_of(mode: int) -> str:
    """'a regular file', 'a FIFO', 'a character device'... for an `st_mode`."""
    if stat.S_ISREG(mode):
        return "a regular file"
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def path_kind(path: str | Path) -> str | None:
    """What `path` names, as `kind_of` says it (links followed); None when nothing is there."""
    mode = _mode(Path(path))
    return None if mode is None else kind_of(mode)


def _mode(path: Path) -> int | None:
    """The `st_mode` of what `path` names (links followed); None when nothing is there."""
    try:
        return os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    except ValueError:  # a NUL in the path: nothing can be there
        return None


def writable_file(path: str | Path, what: str = "output") -> Path:
    """`path` as a Path, if it is free or a regular file (which a write replaces); else a
    one-line FileKindError. Checked before anything is written, so a refused path (and the
    device or FIFO it names) stays exactly as it was."""
    target = Path(path)
    mode = _mode(target)
    if mode is not None and not stat.S_ISREG(mode):
        raise FileKindError(
            f"{what} is {kind_of(mode)}, not a regular file (labreplay writes regular files "
            "only; nothing was written)",
            file=str(target),
        )
    return target


def writable_dir(path: str | Path, what: str = "--out") -> Path:
    """`path` as a Path, if it is free or a directory; else a one-line FileKindError."""
    target = Path(path)
    mode = _mode(target)
    if mode is not None and not stat.S_ISDIR(mode):
        raise FileKindError(
            f"{what} is {kind_of(mode)}, not a directory (nothing was written)", file=str(target)
        )
    return target


def readable_file(path: str | Path, what: str, max_bytes: int | None = None) -> Path:
    """`path` as a Path, if it is a regular file (of at most `max_bytes` when given); else a
    one-line FileKindError naming what is there ("not found", "a FIFO", "a directory"...).
    For readers that stream the file; `read_file` reads one whole."""
    target = Path(path)
    try:
        info = os.stat(target)
    except (FileNotFoundError, NotADirectoryError, ValueError):
        raise FileKindError(f"{what} not found", file=str(target)) from None
    except OSError as exc:
        raise FileKindError(f"{what} cannot be read ({exc.strerror})", file=str(target)) from exc
    _check_regular(target, what, info, max_bytes)
    return target


def read_file(path: str | Path, what: str, max_bytes: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of the regular file `path` (at most `max_bytes`), or a one-line
    FileKindError. The file is opened without blocking and checked again once open, so a FIFO
    swapped in meanwhile is refused too, never waited on."""
    target = readable_file(path, what, max_bytes)
    try:
        fd = os.open(target, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | os.O_CLOEXEC)
    except OSError as exc:
        raise FileKindError(f"{what} cannot be read ({exc.strerror})", file=str(target)) from exc
    with os.fdopen(fd, "rb") as handle:
        _check_regular(target, what, os.fstat(fd), max_bytes)
        try:
            data = handle.read(max_bytes + 1)
        except OSError as exc:
            raise FileKindError(
                f"{what} cannot be read ({exc.strerror})", file=str(target)
            ) from exc
    if len(data) > max_bytes:  # it grew since it was checked
        raise FileKindError(f"{what} is over its {_size(max_bytes)} limit", file=str(target))
    return data


def readable_dir(path: str | Path, what: str) -> Path:
    """`path` as a Path, if it is a directory; else a one-line FileKindError."""
    target = Path(path)
    mode = _mode(target)
    if mode is None:
        raise FileKindError(f"{what} not found", file=str(target))
    if not stat.S_ISDIR(mode):
        raise FileKindError(f"{what} is {kind_of(mode)}, not a directory", file=str(target))
    return target


def _check_regular(target: Path, what: str, info: os.stat_result, max_bytes: int | None) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise FileKindError(
            f"{what} is {kind_of(info.st_mode)}, not a regular file", file=str(target)
        )
    if max_bytes is not None and info.st_size > max_bytes:
        raise FileKindError(
            f"{what} is {_size(info.st_size)}, over its {_size(max_bytes)} limit",
            file=str(target),
        )


def _size(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


__all__ = [
    "MAX_INPUT_BYTES",
    "FileKindError",
    "kind_of",
    "path_kind",
    "read_file",
    "readable_dir",
    "readable_file",
    "writable_dir",
    "writable_file",
]
