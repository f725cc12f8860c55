"""The data files a campaign compile actually reads, their real sha256, and the manifest check.

`compile` hashes every file its loader reads (the Precursor Genome samples, and the A-Lab
pipeline tables, XRD patterns and automated refinements joined onto them) and compares each
digest with the manifest. A file whose bytes differ, or that the manifest does not list, stops
the compile (exit 2, naming the file) unless the user passes `--allow-modified-data`: then the
real hashes are recorded and the spec is marked "unverified data" in every board and report.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

from labreplay.errors import DataError
from labreplay.sdk import sha256_file, sha256_json
from labreplay.sdk.data import data_file, sources

PG_FILE = "precursor_genome/pg_samples.jsonl"


def files_read(record: str, data_dir: Path) -> list[Path]:
    from labreplay.suites.campaign.alab_tables import input_paths

    paths = input_paths(data_dir)
    if record == "precursor-genome":
        paths = [data_file(data_dir, PG_FILE), *paths]
    return paths


class DataProvenance(TypedDict):
    """The files a compile read: per source their set's hash, per file its sha256, and
    whether every file matched the manifest (else the modified ones)."""

    dataset_hashes: dict[str, str]
    files: dict[str, str]
    verified: bool
    modified: list[str]


def data_provenance(record: str, data_dir: Path, allow_modified: bool = False) -> DataProvenance:
    """Real per-file sha256 of every file read, checked against the manifest.

    Returns `dataset_hashes` (per source: sha256 over the sorted [path, real sha256] pairs of the
    files read from it), `files` (path -> real sha256), `verified` and the `modified` paths."""
    manifest = {e.path: (s.name, e.sha256) for s in sources() for e in s.files}
    files: dict[str, str] = {}
    per_source: dict[str, list[list[str]]] = {}
    modified: list[str] = []
    for path in files_read(record, data_dir):
        relative = path.relative_to(data_dir).as_posix()
        try:
            digest = sha256_file(path)
        except OSError as exc:
            raise DataError(f"unreadable data file ({exc.strerror or exc})", file=relative) from exc
        files[relative] = digest
        source, expected = manifest.get(relative, ("unlisted", None))
        per_source.setdefault(source, []).append([relative, digest])
        if digest != expected:
            if not allow_modified:
                why = "not listed in the manifest" if expected is None else "sha256 differs"
                raise DataError(
                    f"{why} from the manifest (real sha256 {digest[:16]}...); restore the "
                    "file (`labreplay data verify`) or pass --allow-modified-data to compile "
                    "an unverified spec",
                    file=relative,
                )
            modified.append(relative)
    return {
        "dataset_hashes": {k: sha256_json(sorted(v)) for k, v in sorted(per_source.items())},
        "files": files,
        "verified": not modified,
        "modified": sorted(modified),
    }
