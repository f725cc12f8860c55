"""Per-material features, computed once and cached: orbital field matrix (OFM, 1,024-dim) for the
OOD screening, Magpie composition statistics and sine Coulomb matrix eigenvalues for RF-SCM.

Declared deviation: matminer's OrbitalFieldMatrix weights neighbours by Voronoi solid angles on a
3x3x3 supercell, which costs about 1 s per structure on this machine (50+ min per task). We keep
its 32-orbital one-hot vectors and its 1/r factor but weight neighbours smoothly by distance,
w = exp(1 - (d / d_min)^6) (an effective-coordination weight), over a neighbour list. For the
composition-only task the OFM is replaced by its mean-field limit: the outer product of the
fraction-weighted mean orbital vector with itself (every atom sees the average atom).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from labreplay.errors import DataError
from labreplay.sdk import sha256_json
from labreplay.suites.configsearch.cache import PIPELINE_VERSION, CacheStats, load_npz, save_npz
from labreplay.suites.configsearch.data import Material

if TYPE_CHECKING:
    from matminer.featurizers.composition import ElementProperty
    from pymatgen.core.structure import Structure

ANG_TO_BOHR = 1.8897261246
SCM_EIGEN = 64
OFM_CUTOFF = 6.0
FEATURE_KINDS = ("ofm", "composition_ofm", "magpie", "scm")
STRUCTURE_KINDS = ("ofm", "scm")


@lru_cache(maxsize=1)
def _orbital_table() -> np.ndarray:
    """Row Z (1..94) = matminer's 32-dim valence-shell one-hot vector of element Z."""
    from matminer.featurizers.structure import OrbitalFieldMatrix

    featurizer = OrbitalFieldMatrix(period_tag=False, flatten=True)
    table = np.zeros((95, 32))
    for z in range(1, 95):
        table[z] = np.asarray(featurizer.ohvs[z]).ravel()
    return table


def _z_array(numbers: Sequence[int], material: Material) -> np.ndarray:
    z = np.asarray(numbers, dtype=int)
    if z.size == 0 or z.min() < 1 or z.max() > 94:
        raise DataError(
            "element outside Z = 1..94 (no orbital vector)",
            record=material.key,
            field="elements",
            value=[int(v) for v in z if not 1 <= v <= 94] if z.size else None,
        )
    return z


def to_structure(material: Material) -> Structure:
    """A pymatgen Structure from the material's CIF text or JARVIS atoms dict."""
    from pymatgen.core.lattice import Lattice
    from pymatgen.core.structure import Structure

    try:
        if material.cif is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return Structure.from_str(material.cif, fmt="cif")
        if material.atoms is not None and "pymatgen" in material.atoms:
            return Structure.from_dict(material.atoms["pymatgen"])
        if material.atoms is not None:
            atoms = material.atoms
            return Structure(
                Lattice(atoms["lattice_mat"]),
                list(atoms["elements"]),
                atoms["coords"],
                coords_are_cartesian=bool(atoms.get("cartesian", False)),
            )
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise DataError(f"cannot build a structure ({exc})", record=material.key) from exc
    raise DataError("material has no structure (composition-only task)", record=material.key)


def ofm(structure: Structure, material: Material) -> np.ndarray:
    """Site-averaged orbital field matrix with distance-weighted neighbours (see module doc)."""
    table = _orbital_table()
    z = _z_array([site.specie.Z for site in structure], material)
    cutoff = OFM_CUTOFF
    for _ in range(3):
        centers, neighbours, _, dist = structure.get_neighbor_list(r=cutoff)
        if len(centers) and len(np.unique(centers)) == len(structure):
            break
        cutoff *= 1.6  # sparse cells (molecular crystals): widen until every site has neighbours
    # A site still alone after widening (a few JARVIS cells, e.g. JVASP-7577, hold an isolated
    # atom in vacuum) contributes no neighbour terms; declared here rather than dropping the
    # material, so the sample drawn for a configuration never changes.
    keep = dist > 1e-6
    centers, neighbours, dist = centers[keep], neighbours[keep], dist[keep]
    d_min = np.full(len(structure), np.inf)
    np.minimum.at(d_min, centers, dist)
    weight = np.exp(1.0 - (dist / d_min[centers]) ** 6) / (dist * ANG_TO_BOHR)
    near = weight > 1e-4
    left = table[z[neighbours[near]]] * weight[near, None]
    matrix = left.T @ table[z[centers[near]]] / len(structure)
    return np.asarray(matrix.ravel(), dtype=float)


def composition_ofm(formula: str, material: Material) -> np.ndarray:
    from pymatgen.core.composition import Composition

    try:
        fractions = Composition(formula).fractional_composition
    except ValueError as exc:
        raise DataError(
            f"unparseable formula ({exc})", record=material.key, field="formula", value=formula
        ) from exc
    table = _orbital_table()
    z = _z_array([el.Z for el in fractions.elements], material)
    weights = np.array([fractions[el] for el in fractions.elements])
    mean = weights @ table[z]
    return np.asarray(np.outer(mean, mean).ravel(), dtype=float)


@lru_cache(maxsize=1)
def _magpie() -> ElementProperty:
    from matminer.featurizers.composition import ElementProperty

    return ElementProperty.from_preset("magpie")


def magpie(formula: str, material: Material) -> np.ndarray:
    """The 132 Magpie statistics; elements Magpie lacks data for give NaN, set to 0 (declared)."""
    from pymatgen.core.composition import Composition

    try:
        composition = Composition(formula)
    except ValueError as exc:
        raise DataError(
            f"unparseable formula ({exc})", record=material.key, field="formula", value=formula
        ) from exc
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        values = np.asarray(_magpie().featurize(composition), dtype=float)
    return np.asarray(np.nan_to_num(values, nan=0.0, posinf=0.0, neginf=0.0), dtype=float)


def sine_coulomb_eigen(structure: Structure, material: Material) -> np.ndarray:
    """Eigenvalues of the sine Coulomb matrix (Faber et al. 2015), descending, zero-padded or
    truncated to SCM_EIGEN so that every material has the same length."""
    z = _z_array([site.specie.Z for site in structure], material).astype(float)
    frac = np.asarray(structure.frac_coords)
    lattice = np.asarray(structure.lattice.matrix)
    diff = np.sin(math.pi * (frac[:, None, :] - frac[None, :, :])) ** 2
    norm = np.linalg.norm(diff @ lattice, axis=-1)
    np.fill_diagonal(norm, 1.0)
    matrix = np.outer(z, z) / np.maximum(norm, 1e-8)
    np.fill_diagonal(matrix, 0.5 * z**2.4)
    eig = np.sort(np.linalg.eigvalsh(matrix))[::-1][:SCM_EIGEN]
    out = np.zeros(SCM_EIGEN)
    out[: len(eig)] = eig
    return out


def _compute(kind: str, material: Material) -> np.ndarray:
    if kind == "magpie":
        return magpie(material.formula, material)
    if kind == "composition_ofm":
        return composition_ofm(material.formula, material)
    structure = to_structure(material)
    if kind == "ofm":
        return ofm(structure, material)
    if kind == "scm":
        return sine_coulomb_eigen(structure, material)
    raise ValueError(f"unknown feature kind {kind!r}")


class FeatureStore:
    """Per-material features, cached on disk per (kind, material source file)."""

    def __init__(self, root: Path, stats: CacheStats) -> None:
        self.root = root / "features"
        self.stats = stats
        self._memory: dict[str, dict[str, np.ndarray]] = {}

    def _path(self, kind: str, group: str) -> Path:
        return self.root / f"{kind}-{sha256_json([PIPELINE_VERSION, kind, group])[:16]}.npz"

    def _load(self, kind: str, group: str) -> dict[str, np.ndarray]:
        name = f"{kind}|{group}"
        if name not in self._memory:
            stored = load_npz(self._path(kind, group))
            table: dict[str, np.ndarray] = {}
            if stored is not None:
                table = dict(zip(stored["keys"].tolist(), stored["values"], strict=True))
            self._memory[name] = table
        return self._memory[name]

    def _save(self, kind: str, group: str) -> None:
        table = self._load(kind, group)
        keys = sorted(table)
        save_npz(
            self._path(kind, group), keys=np.array(keys), values=np.stack([table[k] for k in keys])
        )

    def matrix(self, kind: str, materials: Sequence[Material]) -> np.ndarray:
        """Rows of `kind` features for `materials`, computing and caching the missing ones.

        A structure is parsed once per material: when one structure feature is missing, every
        structure feature of that material is computed from the same parsed structure."""
        groups: dict[str, list[Material]] = {}
        for material in materials:
            groups.setdefault(material.key.split("#", 1)[0], []).append(material)
        for group, members in groups.items():
            table = self._load(kind, group)
            missing = [m for m in members if m.key not in table]
            self.stats.hit("features", len(members) - len(missing))
            self.stats.miss("features", len(missing))
            if not missing:
                continue
            kinds = STRUCTURE_KINDS if kind in STRUCTURE_KINDS else (kind,)
            for material in missing:
                if kind in STRUCTURE_KINDS:
                    structure = to_structure(material)
                    computed = {
                        "ofm": ofm(structure, material),
                        "scm": sine_coulomb_eigen(structure, material),
                    }
                else:
                    computed = {kind: _compute(kind, material)}
                for name, row in computed.items():
                    self._load(name, group)[material.key] = row.astype(np.float32)
            for name in kinds:
                self._save(name, group)
        rows = [self._load(kind, m.key.split("#", 1)[0])[m.key] for m in materials]
        return np.stack(rows).astype(np.float64)
