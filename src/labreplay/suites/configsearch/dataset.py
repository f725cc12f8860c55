"""A user's own dataset as a configsearch task: a JSONL(.gz) file of structures plus a numeric
target, optionally a second file as the second source of r.

Each line is one material: a structure as CIF text (`cif`) or a pymatgen Structure dict
(`structure`; a top-level dict with `sites` is read the same way), an id (`id`, `mbid` or
`material_id`; else the line number) and the target field named by the user. Matbench's layout
(`cif`, `target`) works as is. Nothing is repaired: an unparseable CIF, a missing or non-numeric
target, or a duplicate id stops the load with one line naming file, record and field.

Sources (declared): the first file plays MP's role (share 1 - r), the second JARVIS's (share r).
With one file r collapses to {0}: `dataset_space` keeps only r = 0 and says so.

Each CIF is parsed once, here: the parsed structure is kept as its pymatgen dict, which the
feature stage reads without parsing CIF text again. The task name carries a hash of the file
bytes and the target field, so the pipeline cache can never mix two versions of a file.
"""

from __future__ import annotations

import gzip
import hashlib
import math
import re
import warnings
import zlib
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from labreplay.errors import DataError
from labreplay.sdk import MAX_INPUT_BYTES, read_file, readable_file
from labreplay.sdk.data import JsonLimitError, loads_strict
from labreplay.sdk.events import JsonValue
from labreplay.suites.configsearch.data import Material, Pool, TaskDef, register_task
from labreplay.suites.configsearch.space import ConfigSpace

if TYPE_CHECKING:
    from pymatgen.core.structure import Structure

ID_FIELDS = ("id", "mbid", "material_id", "jid")


def _lines(path: Path) -> list[tuple[int, str]]:
    try:
        if path.name.endswith(".gz"):
            with gzip.open(readable_file(path, "dataset file", MAX_INPUT_BYTES), "rt",
                           encoding="utf-8") as handle:  # fmt: skip
                text = handle.read()
        else:
            text = read_file(path, "dataset file").decode("utf-8")
    except (OSError, EOFError, UnicodeDecodeError, zlib.error) as exc:  # zlib: corrupt gzip
        raise DataError(f"cannot read dataset ({exc})", file=str(path)) from exc
    return [(i, line) for i, line in enumerate(text.splitlines(), 1) if line.strip()]


def _structure(row: Mapping[str, JsonValue], path: Path, record: str) -> Structure:
    from pymatgen.core.structure import Structure

    cif = row.get("cif")
    if isinstance(cif, str):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                structure = Structure.from_str(cif, fmt="cif")
        except Exception as exc:  # pymatgen raises many types on bad CIF text
            raise DataError(
                f"unparseable CIF ({type(exc).__name__})",
                file=str(path),
                record=record,
                field="cif",
            ) from exc
        if len(structure) == 0:
            raise DataError("CIF has no sites", file=str(path), record=record, field="cif")
        return structure
    source = row.get("structure") if isinstance(row.get("structure"), dict) else row
    if isinstance(source, dict) and "sites" in source:
        try:
            return Structure.from_dict(source)
        except Exception as exc:
            raise DataError(
                f"unreadable pymatgen structure dict ({type(exc).__name__})",
                file=str(path),
                record=record,
                field="structure",
            ) from exc
    raise DataError(
        "no structure: expected `cif` text or a pymatgen `structure` dict",
        file=str(path),
        record=record,
        field="cif",
    )


# The pools last read, by file identity: `check_dataset` reads a file before any store exists
# and the task's loader then gets the same pool without parsing every structure again.
_LAST_READ: dict[tuple[str, int, int, str, str, str], Pool] = {}


def read_dataset(path: Path, target: str, task: str, source: str) -> Pool:
    """The materials of one JSONL(.gz) file (see the module doc)."""
    path = readable_file(path, "dataset file", MAX_INPUT_BYTES)
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns, target, task, source)
    if key not in _LAST_READ:
        pool = _read_dataset(path, target, task, source)
        if len(_LAST_READ) >= 4:
            _LAST_READ.clear()
        _LAST_READ[key] = pool
    return _LAST_READ[key]


def check_dataset(path: Path, target: str, path_b: Path | None = None) -> None:
    """Read a user dataset (and its second source) in full, so that a bad file is refused in
    one line before a store is created or opened (the reads are kept for the run)."""
    name = register_dataset(path, target, path_b)
    read_dataset(Path(path), target, name, "a")
    if path_b is not None:
        read_dataset(Path(path_b), target, name, "b")


def _read_dataset(path: Path, target: str, task: str, source: str) -> Pool:
    out: list[Material] = []
    seen: set[str] = set()
    group = f"{task}:{source}"
    for lineno, line in _lines(path):
        try:  # depth-limited, NaN/Infinity refused
            row = loads_strict(line)
        except JsonLimitError as exc:
            raise DataError(str(exc), file=str(path), record=f"line {lineno}") from exc
        if not isinstance(row, dict):
            raise DataError("a line must be a JSON object", file=str(path), record=f"line {lineno}")
        ident = next((str(row[k]) for k in ID_FIELDS if row.get(k) is not None), f"line {lineno}")
        if ident in seen:
            raise DataError("duplicate id", file=str(path), record=ident, field="id")
        seen.add(ident)
        value = row.get(target)
        if value is None:
            raise DataError("target missing", file=str(path), record=ident, field=target)
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise DataError(
                "target is not a finite number",
                file=str(path),
                record=ident,
                field=target,
                value=value,
            )
        structure = _structure(row, path, ident)
        out.append(
            Material(
                f"{group}#{ident}",
                source,
                structure.composition.formula,
                float(value),
                atoms={"pymatgen": structure.as_dict()},
            )
        )
    if not out:
        raise DataError("dataset has no materials", file=str(path))
    return Pool(task, source, tuple(out), (path.name,))


def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()[:10]


def register_dataset(path: Path, target: str, path_b: Path | None = None) -> str:
    """Register a user dataset as a task (the Python hook behind `--dataset`); returns its name."""
    path = Path(path)
    blobs = [read_file(path, "dataset file"), target.encode()]
    if path_b is not None:
        blobs.append(read_file(path_b, "dataset file"))
    stem = re.sub(r"[^A-Za-z0-9]+", "_", path.name.split(".")[0]).strip("_") or "dataset"
    name = f"user_{stem}_{_digest(*blobs)}"
    b_loader = (lambda _dir: read_dataset(Path(path_b), target, name, "b")) if path_b else None
    register_task(
        TaskDef(
            name,
            f"user dataset {path.name} (target {target!r})"
            + (f", second source {Path(path_b).name}" if path_b else ", one source (r = 0)"),
            True,
            False,
            lambda _dir: read_dataset(path, target, name, "a"),
            (),
            lambda v: None,
            b_loader=b_loader,
        )
    )
    return name


def dataset_space(two_sources: bool, space: ConfigSpace | None = None) -> ConfigSpace:
    """The paper's space, with r collapsed to {0} when there is only one source (declared)."""
    base = space or ConfigSpace()
    if two_sources:
        return base
    return replace(base, r_values=(0.0,))
