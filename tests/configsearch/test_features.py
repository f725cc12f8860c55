from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from labreplay.errors import DataError
from labreplay.suites.configsearch.data import Material, load_jarvis, load_matbench
from labreplay.suites.configsearch.features import (
    composition_ofm,
    ofm,
    sine_coulomb_eigen,
    to_structure,
)


def test_ofm_and_scm_are_deterministic_and_physically_shaped(data_dir: Path) -> None:
    material = load_jarvis(data_dir, "band_gap").materials[0]
    structure = to_structure(material)
    first, second = ofm(structure, material), ofm(to_structure(material), material)
    assert first.shape == (1024,) and np.array_equal(first, second)
    assert first.min() >= 0 and first.max() > 0
    eig = sine_coulomb_eigen(structure, material)
    assert eig.shape == (64,) and eig[0] >= eig[1]
    mp = load_matbench(data_dir, "band_gap").materials[0]
    assert ofm(to_structure(mp), mp).shape == (1024,)


def test_composition_ofm_is_the_mean_field_outer_product(data_dir: Path) -> None:
    material = load_matbench(data_dir, "formation_energy").materials[0]
    matrix = composition_ofm(material.formula, material).reshape(32, 32)
    assert np.allclose(matrix, matrix.T)
    assert np.linalg.matrix_rank(matrix) == 1


def test_bad_materials_raise_named_errors() -> None:
    broken = Material("x#1", "mp", "Zz2", 0.0, cif="not a cif")
    with pytest.raises(DataError, match="x#1"):
        to_structure(broken)
    with pytest.raises(DataError, match=r"x#1.*elements"):
        composition_ofm("Zz2", broken)  # pymatgen reads Zz as a dummy species, not an element
    with pytest.raises(DataError, match="composition-only"):
        to_structure(Material("y#2", "mp", "NaCl", 0.0))


def test_isolated_atom_in_vacuum_gets_a_finite_ofm(data_dir: Path) -> None:
    """A real JARVIS cell with an atom far from every other site (JVASP-7577) is featurised,
    not rejected: isolated sites contribute no neighbour terms."""
    pool = load_jarvis(data_dir, "band_gap")
    material = next(m for m in pool.materials if m.key == "jarvis#JVASP-7577")
    vector = ofm(to_structure(material), material)
    assert vector.shape == (1024,) and np.isfinite(vector).all()
