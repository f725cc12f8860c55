"""Where data lives, whether it is intact, and how to download it.

Resolution order of the data directory: explicit argument (`--data-dir`) > `LABREPLAY_DATA_DIR`
> the user cache directory. Downloads stream into a `.part` file next to the target, resume it
with an HTTP Range request when the server allows, verify size and sha256, and only then rename
into place, so a killed or failed download never leaves a file that looks complete.
"""

from __future__ import annotations

import http.client
import os
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from labreplay._files import readable_file, writable_file
from labreplay._hashing import sha256_file
from labreplay.errors import DataError, DownloadError
from labreplay.records.manifest import FileEntry, Source, get_source, sources

ENV_DATA_DIR = "LABREPLAY_DATA_DIR"
ENV_MIRROR = "LABREPLAY_MIRROR"
# where suites keep derived caches (never inside the data directory)
ENV_CACHE_DIR = "LABREPLAY_CACHE_DIR"


def user_cache_dir() -> Path:
    from platformdirs import user_cache_path

    return Path(user_cache_path("labreplay")) / "data"


def resolve_data_dir(explicit: str | Path | None = None, must_exist: bool = True) -> Path:
    """--data-dir > LABREPLAY_DATA_DIR > user cache dir.

    `must_exist=False` is for commands that create the directory (fetch): a path that does not
    exist yet is accepted, one that exists must still be a readable directory.
    """
    if explicit is not None and str(explicit) != "":
        chosen, origin = Path(explicit), "--data-dir"
    elif os.environ.get(ENV_DATA_DIR):
        chosen, origin = Path(os.environ[ENV_DATA_DIR]), ENV_DATA_DIR
    else:
        return user_cache_dir()
    if not chosen.exists() and not must_exist:
        return chosen
    if not chosen.exists():
        raise DataError(f"data directory does not exist (from {origin})", file=str(chosen))
    if not chosen.is_dir():
        raise DataError(f"data directory is not a directory (from {origin})", file=str(chosen))
    if not os.access(chosen, os.R_OK | os.X_OK):
        raise DataError(f"data directory is not readable (from {origin})", file=str(chosen))
    return chosen


def data_file(data_dir: Path, relative: str) -> Path:
    """Path of one manifest file; a clear error if it is not there."""
    path = data_dir / relative
    if not path.exists():
        raise DataError(
            "file not found; run `labreplay data fetch` or set LABREPLAY_DATA_DIR",
            file=str(path),
        )
    return readable_file(path, "data file")  # a FIFO or a directory there: named as such


@dataclass(frozen=True)
class FileStatus:
    source: str
    path: str
    status: str  # ok | missing | unreadable | size-mismatch | sha256-mismatch
    detail: str = ""


def verify_file(data_dir: Path, entry: FileEntry, source: str) -> FileStatus:
    path = data_dir / entry.path
    if not path.is_file():
        return FileStatus(source, entry.path, "missing")
    try:
        size = path.stat().st_size
        if size != entry.size:
            return FileStatus(source, entry.path, "size-mismatch", f"{size} != {entry.size} bytes")
        digest = sha256_file(path)
    except OSError as exc:  # permissions, I/O errors: a finding about this file, not a crash
        return FileStatus(source, entry.path, "unreadable", exc.strerror or str(exc))
    if digest != entry.sha256:
        return FileStatus(source, entry.path, "sha256-mismatch", f"{digest[:12]}...")
    return FileStatus(source, entry.path, "ok")


def verify(
    data_dir: Path,
    names: list[str] | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[FileStatus]:
    chosen = [get_source(n) for n in names] if names else list(sources())
    results = []
    for source in chosen:
        for entry in source.files:
            results.append(verify_file(data_dir, entry, source.name))
            if progress is not None:
                progress(1)
    return results


# --------------------------------------------------------------------------- download


def _download_one(url: str, target: Path, entry: FileEntry, timeout: float) -> None:
    part = target.with_name(target.name + ".part")
    target.parent.mkdir(parents=True, exist_ok=True)
    have = part.stat().st_size if part.exists() else 0
    if have > entry.size:  # a stale, longer partial file cannot be resumed
        part.unlink()
        have = 0
    # A complete .part (killed between the last byte and the rename) needs no request at all:
    # asking for `bytes=<size>-` would get 416 and the download could never finish.
    if have < entry.size or not part.exists():
        _stream_into(url, part, have, timeout)
    size = part.stat().st_size
    if size != entry.size:
        if size > entry.size:
            part.unlink()
        raise DownloadError(
            f"incomplete download: {size} of {entry.size} bytes; "
            + ("run fetch again to resume" if size < entry.size else "partial file discarded"),
            file=url,
        )
    digest = sha256_file(part)
    if digest != entry.sha256:
        part.unlink()
        raise DownloadError(
            f"sha256 mismatch: got {digest}, manifest says {entry.sha256}; file discarded",
            file=url,
        )
    os.replace(part, target)


def _stream_into(url: str, part: Path, have: int, timeout: float) -> None:
    """Append the rest of `url` to `part` (Range request when `have` > 0), or rewrite it whole."""
    request = urllib.request.Request(url)
    if have:
        request.add_header("Range", f"bytes={have}-")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status = getattr(response, "status", 200)
            resumed = bool(have) and status == 206
            if resumed and not _range_starts_at(response.headers.get("Content-Range"), have):
                part.unlink()  # the server's bytes would not line up with ours: start over
                raise DownloadError(
                    f"server answered a resume request with Content-Range "
                    f"{response.headers.get('Content-Range')!r}, not from byte {have}; "
                    "partial file discarded, run fetch again",
                    file=url,
                )
            with part.open("ab" if resumed else "wb") as handle:
                while chunk := response.read(1 << 16):
                    handle.write(chunk)
    except urllib.error.HTTPError as exc:
        raise DownloadError(f"HTTP {exc.code} {exc.reason}", file=url) from exc
    except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
        reason = getattr(exc, "reason", None) or exc
        kept = (
            f"; partial data kept in {part.name} for resume"
            if part.exists() and part.stat().st_size
            else ""
        )
        raise DownloadError(
            f"download failed ({reason}){kept}. "
            "Offline? Use --mirror URL or copy the files into the data directory",
            file=url,
        ) from exc


def _range_starts_at(content_range: str | None, start: int) -> bool:
    """True if a `Content-Range: bytes START-END/TOTAL` header begins at `start`."""
    if not content_range:
        return False
    unit, _, span = content_range.strip().partition(" ")
    return unit == "bytes" and span.split("-", 1)[0].strip() == str(start)


def fetch(
    name: str,
    data_dir: Path,
    mirror: str | None = None,
    timeout: float = 60.0,
    progress: Callable[[FileEntry], None] | None = None,
) -> list[FileStatus]:
    """Download every file of `name` that is not already present and intact."""
    source: Source = get_source(name)
    base = mirror or os.environ.get(ENV_MIRROR) or source.download_base
    if not base:
        raise DownloadError(
            f"source {name!r} has no public copy with this file layout "
            f"(canonical release: {source.canonical_url}); pass --mirror URL",
            file=name,
        )
    base = base.rstrip("/") + "/"
    results = []
    for entry in source.files:
        status = verify_file(data_dir, entry, name)
        if status.status != "ok":
            target = data_dir / entry.path
            for path in (target, target.with_name(target.name + ".part")):
                writable_file(path, "data file")  # never unlink or fill a FIFO or a device
            if target.exists():
                target.unlink()  # wrong bytes: never keep a file that fails its checksum
            _download_one(
                base + urllib.request.pathname2url(entry.path).lstrip("/"), target, entry, timeout
            )
            status = FileStatus(name, entry.path, "ok", "downloaded")
        results.append(status)
        if progress is not None:
            progress(entry)
    return results
