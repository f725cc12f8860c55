"""ALIGNN (the alignn package's pure-torch model) through the model plug-in, on real Matbench
structures; a tiny declared schedule (40 materials, 1 epoch) so it runs in seconds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from labreplay.errors import SpecError
from labreplay.suites.configsearch.data import load_matbench
from labreplay.suites.configsearch.gnn import AlignnGNN, available
from labreplay.suites.configsearch.models import ModelData, build_model, model_names

pytestmark = pytest.mark.skipif(not available(), reason="alignn is not installed")


def test_alignn_fits_and_predicts_real_structures(data_dir: Path) -> None:
    assert "alignn" in model_names()
    assert isinstance(build_model("alignn", True), AlignnGNN)
    with pytest.raises(SpecError, match="composition-only"):
        build_model("alignn", False)
    materials = list(load_matbench(data_dir, "refractive_index").materials[:40])
    data = ModelData(
        {},
        [m.formula for m in materials],
        np.array([m.target for m in materials]),
        {"materials": materials},
    )
    model = AlignnGNN(epochs=1, patience=1)
    model.fit(data, np.arange(30), np.arange(30, 35), seed=3)
    pred = model.predict(data, np.arange(35, 40))
    assert pred.shape == (5,) and np.all(np.isfinite(pred))
    # standardised targets: an untrained-but-sane net predicts within the target's range
    spread = data.target.max() - data.target.min()
    assert np.all(np.abs(pred - data.target.mean()) < 3 * spread)
