"""ALIGNN through the model plug-in: the field's own message-passing GNN (the `alignn` package's
pure-PyTorch ALIGNN, no DGL), trained per fold on CPU.

Declared reduced protocol (CPU, two shared cores): a small ALIGNN (1 ALIGNN layer + 1 GCN layer,
64 hidden features, 80/40 RBF bins as in the package), 4 A neighbour cutoff with at most 12
neighbours, CGCNN atom features, Adam (lr 2e-3), batches of 64, at most 10 epochs (patience 3) with
early stopping on the fold's validation rows (best-validation weights kept), targets standardised
on the training rows. The paper's ALIGNN trains 300 epochs on a GPU; this one is a faithful
architecture on a short schedule and is meant for reduced protocols (e.g. n_total = 300), not for
the full 1,892-fit sweep. Graphs are built once per material and process, from the structure the
pipeline already parsed.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from labreplay.errors import SpecError
from labreplay.sdk.events import JsonObject

if TYPE_CHECKING:
    import torch

    from labreplay.suites.configsearch.data import Material
    from labreplay.suites.configsearch.models import ModelData  # annotations only


def available() -> bool:
    try:
        import alignn.models.alignn_atomwise_pure
        import alignn.torch_graph_builder  # noqa: F401
    except ImportError:
        return False
    return True


class AlignnGNN:
    """ALIGNN (Choudhary & DeCost 2021) as a configsearch property model."""

    name = "alignn"
    requires = frozenset({"structure"})

    def __init__(
        self, hidden: int = 64, epochs: int = 10, patience: int = 3, cutoff: float = 4.0
    ) -> None:
        self.hidden, self.epochs, self.patience, self.cutoff = hidden, epochs, patience, cutoff
        self.n_jobs = 1
        self._graphs: dict[str, object] = {}  # alignn's graph pair per material
        self._state: tuple[torch.nn.Module, float, float] | None = None

    def params(self) -> JsonObject:
        return {
            "hidden": self.hidden,
            "epochs": self.epochs,
            "patience": self.patience,
            "cutoff": self.cutoff,
            "layers": [1, 1],
        }

    def _graph(self, material: Material) -> object:
        if material.key not in self._graphs:
            from alignn.torch_graph_builder import build_pure_torch_graph
            from jarvis.core.atoms import Atoms

            from labreplay.suites.configsearch.features import to_structure

            structure = to_structure(material)
            atoms = Atoms(
                lattice_mat=np.asarray(structure.lattice.matrix),
                coords=np.asarray(structure.frac_coords),
                elements=[site.specie.symbol for site in structure],
                cartesian=False,
            )
            self._graphs[material.key] = build_pure_torch_graph(
                atoms,
                two_body_cutoff=self.cutoff,
                max_neighbors=12,
                atom_features="cgcnn",
            )
        return self._graphs[material.key]

    def _batch(self, data: ModelData, rows: np.ndarray) -> tuple[object, object, None]:
        from alignn.torch_graph_builder import batch_torch_graph_pairs

        materials = data.extra["materials"]
        g, lg = batch_torch_graph_pairs([self._graph(materials[int(i)]) for i in rows])
        return (g, lg, None)

    def _net(self, seed: int) -> torch.nn.Module:
        import torch
        from alignn.models.alignn_atomwise_pure import (
            ALIGNNAtomWisePure,
            ALIGNNAtomWisePureConfig,
        )

        torch.manual_seed(seed)
        config = ALIGNNAtomWisePureConfig(
            name="alignn_atomwise_pure",
            alignn_layers=1,
            gcn_layers=1,
            atom_input_features=92,
            hidden_features=self.hidden,
            embedding_features=self.hidden,
            calculate_gradient=False,
            gradwise_weight=0.0,
            use_zbl=False,
            energy_mult_natoms=False,
            use_penalty=False,
        )
        net: torch.nn.Module = ALIGNNAtomWisePure(config)  # alignn ships no types
        return net

    def fit(self, data: ModelData, train: np.ndarray, val: np.ndarray, seed: int) -> None:
        import torch

        torch.set_num_threads(max(1, self.n_jobs))
        y = torch.tensor(data.target, dtype=torch.float32)
        mean, std = float(y[train].mean()), float(y[train].std()) or 1.0
        net = self._net(seed)
        optimiser = torch.optim.Adam(net.parameters(), lr=2e-3)
        rng = np.random.default_rng(seed)
        best, best_state, stale = math.inf, None, 0
        val_rows = val if len(val) else train[: max(1, len(train) // 10)]
        for _ in range(self.epochs):
            net.train()
            for chunk in np.array_split(rng.permutation(train), max(1, len(train) // 64)):
                optimiser.zero_grad()
                out = net(self._batch(data, chunk))["out"].reshape(-1)
                loss = torch.nn.functional.l1_loss(out, (y[chunk] - mean) / std)
                loss.backward()  # type: ignore[no-untyped-call]
                optimiser.step()
            net.eval()
            with torch.no_grad():
                pred = net(self._batch(data, val_rows))["out"].reshape(-1) * std + mean
                mae = float(torch.mean(torch.abs(pred - y[val_rows])))
            if mae < best - 1e-9:
                best, stale = mae, 0
                best_state = {k: v.clone() for k, v in net.state_dict().items()}
            else:
                stale += 1
                if stale >= self.patience:
                    break
        if best_state is not None:
            net.load_state_dict(best_state)
        self._state = (net, mean, std)

    def predict(self, data: ModelData, rows: np.ndarray) -> np.ndarray:
        import torch

        if self._state is None:
            raise SpecError(f"model {self.name}: predict before fit")
        net, mean, std = self._state
        net.eval()
        with torch.no_grad():
            out = net(self._batch(data, rows))["out"].reshape(-1) * std + mean
        return np.asarray(out.numpy(), dtype=float)
