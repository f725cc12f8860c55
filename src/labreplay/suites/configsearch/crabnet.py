"""A compact CrabNet-style composition model (Wang et al. 2021), in torch on CPU.

Each element of a formula is a token: a learned element embedding plus an encoding of its
fraction. Two self-attention layers let elements see each other; the output is pooled with the
fractions as weights and mapped to the property. Far smaller than CrabNet (d = 32, 2 layers, 4
heads, no Mat2Vec initialisation) so that one fit takes seconds on one CPU thread.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from labreplay.errors import DataError, SpecError
from labreplay.suites.configsearch.models import ModelData

MAX_ELEMENTS = 10


def encode_formulas(formulas: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(atomic numbers, fractions), each (n, MAX_ELEMENTS), zero-padded."""
    from pymatgen.core.composition import Composition

    z = np.zeros((len(formulas), MAX_ELEMENTS), dtype=np.int64)
    frac = np.zeros((len(formulas), MAX_ELEMENTS), dtype=np.float32)
    for i, formula in enumerate(formulas):
        try:
            composition = Composition(formula).fractional_composition
        except ValueError as exc:
            raise DataError(f"unparseable formula ({exc})", field="formula", value=formula) from exc
        items = sorted(composition.items(), key=lambda kv: kv[0].Z)[:MAX_ELEMENTS]
        for j, (element, amount) in enumerate(items):
            z[i, j], frac[i, j] = element.Z, float(amount)
    return z, frac


def _network(seed: int, d_model: int = 32) -> Any:
    import torch

    torch.manual_seed(seed)

    class Attention(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.element = torch.nn.Embedding(119, d_model, padding_idx=0)
            self.fraction = torch.nn.Linear(2, d_model)
            layer = torch.nn.TransformerEncoderLayer(
                d_model, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True
            )
            self.encoder = torch.nn.TransformerEncoder(
                layer, num_layers=2, enable_nested_tensor=False
            )
            self.head = torch.nn.Sequential(
                torch.nn.Linear(d_model, 64), torch.nn.SiLU(), torch.nn.Linear(64, 1)
            )

        def forward(self, z: Any, frac: Any) -> Any:
            frac_features = torch.stack([frac, torch.log(frac + 1e-6)], dim=-1)
            tokens = self.element(z) + self.fraction(frac_features)
            hidden = self.encoder(tokens, src_key_padding_mask=(z == 0))
            pooled = (hidden * frac.unsqueeze(-1)).sum(dim=1)
            return self.head(pooled)

    return Attention()


class CompositionAttention:
    name = "crabnet"
    requires = frozenset({"formula"})

    def __init__(self, epochs: int = 120, patience: int = 15) -> None:
        self.epochs, self.patience = epochs, patience
        self._model: Any = None

    def params(self) -> dict[str, Any]:
        return {"epochs": self.epochs, "patience": self.patience, "d_model": 32, "layers": 2}

    def _encoded(self, data: ModelData) -> tuple[np.ndarray, np.ndarray]:
        if "crabnet_tokens" not in data.extra:
            data.extra["crabnet_tokens"] = encode_formulas(data.formulas)
        tokens: tuple[np.ndarray, np.ndarray] = data.extra["crabnet_tokens"]
        return tokens

    def fit(self, data: ModelData, train: np.ndarray, val: np.ndarray, seed: int) -> None:
        from labreplay.suites.configsearch.torch_fit import fit_regressor

        z, frac = self._encoded(data)
        self._model = fit_regressor(
            _network(seed),
            lambda rows: (z[rows], frac[rows]),
            data.target,
            train,
            val,
            seed,
            self.epochs,
            self.patience,
        )

    def predict(self, data: ModelData, rows: np.ndarray) -> np.ndarray:
        from labreplay.suites.configsearch.torch_fit import predict

        if self._model is None:
            raise SpecError(f"model {self.name}: predict before fit")
        z, frac = self._encoded(data)
        return predict(self._model, (z[rows], frac[rows]))
