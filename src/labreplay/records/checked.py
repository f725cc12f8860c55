"""Data files checked against the manifest before a suite reads them.

A file whose sha256 differs from the manifest (or that the manifest does not list) stops the
command with one line naming it, unless the user passes `--allow-modified-data`: then the
modified paths are returned, and the suite marks what it builds from them UNVERIFIED.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from labreplay._hashing import sha256_file
from labreplay.errors import DataError
from labreplay.records.manifest import sources
from labreplay.records.sources import data_file


def checked_digests(
    data_dir: Path, relatives: Iterable[str], allow_modified: bool = False
) -> tuple[dict[str, str], list[str]]:
    """(path -> real sha256, sorted modified paths) of the files; a modified file is a
    DataError naming it unless `allow_modified`."""
    manifest = {e.path: e.sha256 for s in sources() for e in s.files}
    digests: dict[str, str] = {}
    modified: list[str] = []
    for relative in relatives:
        if relative in digests:
            continue
        path = data_file(data_dir, relative)
        try:
            digest = sha256_file(path)
        except OSError as exc:
            raise DataError(f"unreadable data file ({exc.strerror or exc})", file=relative) from exc
        digests[relative] = digest
        expected = manifest.get(relative)
        if digest != expected:
            if not allow_modified:
                why = "not listed in the manifest" if expected is None else "sha256 differs"
                raise DataError(
                    f"{why} from the manifest (real sha256 {digest[:16]}...); restore the file "
                    "(`labreplay data verify`) or pass --allow-modified-data to mark the "
                    "results UNVERIFIED",
                    file=relative,
                )
            modified.append(relative)
    return digests, sorted(modified)


__all__ = ["checked_digests"]
