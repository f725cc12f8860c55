"""Material pools of the six AutoMatBench tasks, read from the shared Matbench and JARVIS files.

A pool is the list of materials of one side (MP or JARVIS) that carry the task's target. Nothing is
repaired: a JARVIS row without the fields a target needs is left out and counted, and a value the
target cannot be computed from (log of a non-positive modulus) is left out and counted too.

Declared approximations (the paper makes the same ones, section 7.5):
- refractive index on JARVIS = sqrt(mean(mepsx, mepsy, mepsz)) (non-magnetic, isotropic average);
- metallicity on JARVIS = optb88vdw gap <= 0.001 eV; on MP = (gap == 0) from the mp_gap subset;
- bulk/shear modulus: MP targets are log10(GPa) (Matbench); JARVIS kv/gv in GPa are put on the same
  log10 scale;
- formation energy: Matbench has no MP structures for mp_e_form, so this task is composition-only
  on both sides (JARVIS structures are not used either, to keep one feature space).
"""

from __future__ import annotations

import bz2
import gzip
import math
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from labreplay.errors import DataError, SpecError
from labreplay.sdk.data import JsonLimitError, data_file, loads_strict
from labreplay.sdk.events import JsonValue

JARVIS_STRUCTURES = "jarvis/jarvis_structures_with_leaderboard_targets.jsonl"
METAL_GAP_EV = 0.001


@dataclass(frozen=True)
class Material:
    """One material of a pool. `key` identifies it across tasks (feature cache key)."""

    key: str
    source: str  # "mp" | "jarvis"
    formula: str
    target: float
    cif: str | None = None
    atoms: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Pool:
    task: str
    source: str
    materials: tuple[Material, ...]
    files: tuple[str, ...]
    excluded: Mapping[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.materials)


@dataclass(frozen=True)
class TaskDef:
    name: str
    description: str
    structure_based: bool
    classification: bool
    mp_loader: Callable[[Path], Pool]
    jarvis_fields: tuple[str, ...]
    jarvis_target: Callable[[tuple[float, ...]], float | None]
    # a task's second source (share r) from its own loader instead of the JARVIS fields; a task
    # with neither has one source, and every r > 0 is infeasible
    b_loader: Callable[[Path], Pool] | None = None
    # the shared data files `mp_loader` reads (the JARVIS file is added when `jarvis_fields`
    # are read), checked against the manifest before they are read; a user's dataset has none
    files: tuple[str, ...] = ()


def _read_jsonl_gz(path: Path) -> list[dict[str, Any]]:
    rows = []
    try:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            for lineno, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:  # depth-limited, NaN/Infinity refused
                    rows.append(loads_strict(line))
                except JsonLimitError as exc:
                    raise DataError(str(exc), file=str(path), record=f"line {lineno}") from exc
    except (OSError, EOFError, UnicodeDecodeError, zlib.error) as exc:  # zlib: corrupt gzip
        raise DataError(f"cannot read gzip file ({exc})", file=str(path)) from exc
    return rows


def _number(row: Mapping[str, JsonValue], name: str, path: Path, record: str) -> float:
    value = row.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise DataError(
            "target is not a finite number", file=str(path), record=record, field=name, value=value
        )
    return float(value)


def _mp_structure_pool(
    task: str, rel: str, transform: Callable[[float], float]
) -> Callable[[Path], Pool]:
    def load(data_dir: Path) -> Pool:
        path = data_file(data_dir, rel)
        out = []
        for row in _read_jsonl_gz(path):
            record = str(row.get("mbid"))
            cif = row.get("cif")
            if not isinstance(cif, str) or not cif.strip():
                raise DataError("missing CIF text", file=str(path), record=record, field="cif")
            target = transform(_number(row, "target", path, record))
            out.append(
                Material(f"{rel}#{record}", "mp", str(row.get("formula_sum", "")), target, cif=cif)
            )
        return Pool(task, "mp", tuple(out), (rel,))

    return load


def _mp_bulk_pool(data_dir: Path) -> Pool:
    """log10 K_VRH from the official table, joined to the shared elasticity structures by mbid
    number (mb-log-kvrh-NNNNN <-> mb-log-gvrh-NNNNN), with the compositions checked to agree."""
    rel_s, rel_t = (
        "matbench/structures/elasticity.jsonl.gz",
        "matbench/official_meta/matbench_log_kvrh.json.bz2",
    )
    s_path, t_path = data_file(data_dir, rel_s), data_file(data_dir, rel_t)
    table = _read_json_bz2(t_path)
    try:
        mbids, targets, comps = table["mbid"], table["log10(K_VRH)"], table["composition"]
    except KeyError as exc:
        raise DataError("column missing", file=str(t_path), field=str(exc.args[0])) from exc
    by_number = {str(mbid).rsplit("-", 1)[-1]: (targets[i], comps[i]) for i, mbid in mbids.items()}
    out = []
    for row in _read_jsonl_gz(s_path):
        record = str(row.get("mbid"))
        number = record.rsplit("-", 1)[-1]
        if number not in by_number:
            raise DataError("no log_kvrh row for this structure", file=str(t_path), record=record)
        target, comp = by_number[number]
        if comp != row.get("matbench_composition"):
            raise DataError(
                "composition differs between the two tables",
                file=str(t_path),
                record=record,
                field="composition",
                value=comp,
            )
        value = _number({"t": target}, "t", t_path, record)
        out.append(
            Material(
                f"{rel_s}#{record}", "mp", str(row.get("formula_sum", "")), value, cif=row["cif"]
            )
        )
    return Pool("bulk_modulus", "mp", tuple(out), (rel_s, rel_t))


def _read_json_bz2(path: Path) -> dict[str, Any]:
    try:
        with bz2.open(path, "rt", encoding="utf-8") as handle:
            value = loads_strict(handle.read())
    except (OSError, EOFError, JsonLimitError) as exc:
        raise DataError(f"cannot read bz2 JSON table ({exc})", file=str(path)) from exc
    if not isinstance(value, dict):
        raise DataError("expected a column-oriented JSON object", file=str(path))
    return value


def _mp_formation_pool(data_dir: Path) -> Pool:
    rel = "matbench/official_meta/matbench_mp_e_form.json.bz2"
    path = data_file(data_dir, rel)
    table = _read_json_bz2(path)
    try:
        mbids, targets, comps = table["mbid"], table["e_form"], table["composition"]
    except KeyError as exc:
        raise DataError("column missing", file=str(path), field=str(exc.args[0])) from exc
    out = []
    for i, mbid in mbids.items():
        value = _number({"t": targets[i]}, "t", path, str(mbid))
        out.append(Material(f"{rel}#{mbid}", "mp", str(comps[i]), value))
    return Pool("formation_energy", "mp", tuple(out), (rel,))


def _log10_positive(values: tuple[float, ...]) -> float | None:
    return math.log10(values[0]) if values[0] > 0 else None


TASKS: dict[str, TaskDef] = {
    "band_gap": TaskDef(
        "band_gap",
        "band gap (eV): MP mp_gap structures; JARVIS optb88vdw gap",
        True,
        False,
        _mp_structure_pool("band_gap", "matbench/structures/mp_gap_subset24k.jsonl.gz", float),
        ("dft_3d_optb88vdw_bandgap",),
        lambda v: v[0],
        files=("matbench/structures/mp_gap_subset24k.jsonl.gz",),
    ),
    "metallicity": TaskDef(
        "metallicity",
        "is metal (0/1): MP gap == 0; JARVIS optb88vdw gap <= 0.001 eV",
        True,
        True,
        _mp_structure_pool(
            "metallicity",
            "matbench/structures/mp_gap_subset24k.jsonl.gz",
            lambda g: 1.0 if g == 0 else 0.0,
        ),
        ("dft_3d_optb88vdw_bandgap",),
        lambda v: 1.0 if v[0] <= METAL_GAP_EV else 0.0,
        files=("matbench/structures/mp_gap_subset24k.jsonl.gz",),
    ),
    "bulk_modulus": TaskDef(
        "bulk_modulus",
        "log10 bulk modulus K_VRH (GPa): MP log_kvrh; JARVIS log10(kv)",
        True,
        False,
        _mp_bulk_pool,
        ("dft_3d_bulk_modulus_kv",),
        _log10_positive,
        files=(
            "matbench/structures/elasticity.jsonl.gz",
            "matbench/official_meta/matbench_log_kvrh.json.bz2",
        ),
    ),
    "shear_modulus": TaskDef(
        "shear_modulus",
        "log10 shear modulus G_VRH (GPa): MP log_gvrh; JARVIS log10(gv)",
        True,
        False,
        _mp_structure_pool("shear_modulus", "matbench/structures/elasticity.jsonl.gz", float),
        ("dft_3d_shear_modulus_gv",),
        _log10_positive,
        files=("matbench/structures/elasticity.jsonl.gz",),
    ),
    "formation_energy": TaskDef(
        "formation_energy",
        "formation energy (eV/atom), composition-only on both sides",
        False,
        False,
        _mp_formation_pool,
        ("dft_3d_formation_energy_peratom",),
        lambda v: v[0],
        files=("matbench/official_meta/matbench_mp_e_form.json.bz2",),
    ),
    "refractive_index": TaskDef(
        "refractive_index",
        "refractive index n: MP dielectric; JARVIS sqrt(mean meps x,y,z)",
        True,
        False,
        _mp_structure_pool("refractive_index", "matbench/structures/dielectric.jsonl.gz", float),
        ("dft_3d_mepsx", "dft_3d_mepsy", "dft_3d_mepsz"),
        lambda v: math.sqrt(sum(v) / 3.0) if sum(v) > 0 else None,
        files=("matbench/structures/dielectric.jsonl.gz",),
    ),
}


BUILTIN_TASKS = tuple(TASKS)


def register_task(definition: TaskDef) -> None:
    """The hook for new tasks: `mp_loader` reads the first source (share 1 - r), `b_loader` (or
    the JARVIS fields) the second (share r). Re-registering a name replaces it."""
    TASKS[definition.name] = definition
    _cached_pool.cache_clear()


def task_def(task: str) -> TaskDef:
    if task not in TASKS:
        raise SpecError(f"unknown configsearch task {task!r}; known: {', '.join(sorted(TASKS))}")
    return TASKS[task]


def task_files(task: str) -> tuple[str, ...]:
    """The shared data files `task` reads (manifest paths; none for a user's dataset)."""
    definition = task_def(task)
    jarvis = (JARVIS_STRUCTURES,) if definition.jarvis_fields and not definition.b_loader else ()
    return tuple(dict.fromkeys(definition.files + jarvis))


def unverified_files(data_dir: Path, task: str, allow_modified: bool = False) -> list[str]:
    """The files of `task` whose sha256 differs from the manifest, checked before any is read:
    a modified file is a DataError naming it unless `allow_modified` (the run is then marked
    UNVERIFIED by these paths in its spec)."""
    from labreplay.sdk.data import checked_digests

    return checked_digests(Path(data_dir), task_files(task), allow_modified)[1]


@lru_cache(maxsize=16)
def _cached_pool(data_dir: Path, task: str, side: str) -> Pool:
    definition = task_def(task)
    if side == "mp":
        return definition.mp_loader(data_dir)
    if definition.b_loader is not None:
        return definition.b_loader(data_dir)
    if not definition.jarvis_fields:
        return Pool(task, "none", (), ())
    return _jarvis_pool(data_dir, definition)


def load_matbench(data_dir: Path, task: str) -> Pool:
    """The MP side of `task` (manifest loader of the `matbench` source)."""
    return _cached_pool(Path(data_dir), task, "mp")


def load_jarvis(data_dir: Path, task: str) -> Pool:
    """The JARVIS side of `task` (manifest loader of the `jarvis` source)."""
    return _cached_pool(Path(data_dir), task, "jarvis")


def _formula(elements: list[str]) -> str:
    counts: dict[str, int] = {}
    for element in elements:
        counts[element] = counts.get(element, 0) + 1
    return " ".join(f"{el}{n}" for el, n in counts.items())


def _jarvis_pool(data_dir: Path, definition: TaskDef) -> Pool:
    path = data_file(data_dir, JARVIS_STRUCTURES)
    seen: set[str] = set()
    out: list[Material] = []
    excluded = {"missing_field": 0, "invalid_value": 0, "duplicate_jid": 0}
    with path.open(encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = loads_strict(line)
            except JsonLimitError as exc:
                raise DataError(str(exc), file=str(path), record=f"line {lineno}") from exc
            jid = str(row.get("jid"))
            atoms = row.get("atoms")
            if not isinstance(atoms, dict) or "elements" not in atoms:
                raise DataError("missing atoms dict", file=str(path), record=jid, field="atoms")
            fields = [row.get(name) for name in definition.jarvis_fields]
            if any(not isinstance(f, dict) or f.get("value") is None for f in fields):
                excluded["missing_field"] += 1
                continue
            if jid in seen:
                excluded["duplicate_jid"] += 1
                continue
            values = tuple(_number(f, "value", path, jid) for f in fields)
            target = definition.jarvis_target(values)
            if target is None:
                excluded["invalid_value"] += 1
                continue
            seen.add(jid)
            formula = _formula(list(atoms["elements"]))
            structure = atoms if definition.structure_based else None
            out.append(Material(f"jarvis#{jid}", "jarvis", formula, target, atoms=structure))
    return Pool(definition.name, "jarvis", tuple(out), (JARVIS_STRUCTURES,), excluded)
