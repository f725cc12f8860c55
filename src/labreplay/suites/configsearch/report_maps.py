"""Heat maps of every stored exhaustive sweep, one panel per r: the test MAE over (n, s) with
the configurations below C_min marked and those on target outlined, and beneath it the same
MAE minus its (r, n) row's mean over s, on its own symmetric scale, so that an s effect of a
few thousandths (the s-claims) is visible next to n and r effects a hundred times larger."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TypedDict

import numpy as np

from labreplay.sdk.engine import Store
from labreplay.sdk.report import details, image, png_bytes
from labreplay.suites.configsearch.targets import MIN_TEST_POINTS, Landscape, standard_error

if TYPE_CHECKING:  # matplotlib is imported lazily, when a figure is drawn
    from matplotlib.patches import Rectangle

SWEEP_BRANCH = "sweep/exhaustive"


class SweepPoint(TypedDict):
    """One evaluated configuration of a sweep, as the heat maps read it."""

    r: float
    n: int
    s: int
    mae: float
    abs_error_sd: float | None  # as stored (None in sweeps recorded before it was)


def sweep_points(store: Store, run_id: str) -> list[SweepPoint]:
    """(r, n, s, mae, abs_error_sd, n_test) of every configuration the sweep evaluated."""
    points: list[SweepPoint] = []
    for event in store.events(run_id):
        payload = event["payload"]
        if event["kind"] != "evaluation" or not isinstance(payload, Mapping):
            continue
        config, mae = payload.get("config"), payload.get("mae")
        if not isinstance(config, Mapping) or not isinstance(mae, int | float):
            continue
        points.append(
            {
                "r": float(config["r"]),
                "n": int(config["n"]),
                "s": int(config["s"]),
                "mae": float(mae),
                "abs_error_sd": payload.get("abs_error_sd"),
            }
        )
    return points


def target_threshold(points: Sequence[SweepPoint], min_test_points: int) -> float | None:
    """tau of METRICS.md over C_min (targets.Landscape), the optimum's SE where it is known."""
    reliable = [p for p in points if p["n"] * p["s"] >= min_test_points]
    if not reliable:
        return None
    best = min(reliable, key=lambda p: p["mae"])
    sd = best.get("abs_error_sd")
    se = standard_error(float(sd), best["n"] * best["s"]) if isinstance(sd, int | float) else None
    land = Landscape("min", tuple(p["mae"] for p in reliable), "", se, se is not None)
    return land.threshold


def landscape_png(title: str, points: Sequence[SweepPoint], min_test_points: int) -> bytes:
    from matplotlib.figure import Figure

    rs = sorted({p["r"] for p in points})
    ns = sorted({p["n"] for p in points})
    ss = sorted({p["s"] for p in points})
    tau = target_threshold(points, min_test_points)
    grids = {r: np.full((len(ns), len(ss)), np.nan) for r in rs}
    for p in points:
        grids[p["r"]][ns.index(p["n"]), ss.index(p["s"])] = p["mae"]
    centred = {r: g - np.nanmean(g, axis=1, keepdims=True) for r, g in grids.items()}
    lo, hi = (
        np.nanmin([np.nanmin(g) for g in grids.values()]),
        np.nanmax([np.nanmax(g) for g in grids.values()]),
    )
    spread = float(np.nanmax([np.nanmax(np.abs(c)) for c in centred.values()])) or 1.0
    fig = Figure(figsize=(2.6 * len(rs) + 1.2, 5.4), layout="constrained")
    axes = fig.subplots(2, len(rs), squeeze=False)
    for k, r in enumerate(rs):
        top, bottom = axes[0][k], axes[1][k]
        shown = top.imshow(grids[r], cmap="viridis", vmin=lo, vmax=hi, aspect="auto")
        shift = bottom.imshow(centred[r], cmap="RdBu_r", vmin=-spread, vmax=spread, aspect="auto")
        for i, n in enumerate(ns):
            for j, s in enumerate(ss):
                value = grids[r][i, j]
                if np.isnan(value):
                    continue
                if n * s < min_test_points:  # below C_min: no search or target uses it
                    top.text(j, i, "x", ha="center", va="center", color="white", fontsize=7)
                elif tau is not None and value <= tau:  # on target
                    top.add_patch(_box(j, i))
        for ax, name in ((top, f"r = {r:g}: MAE"), (bottom, f"r = {r:g}: MAE - row mean")):
            ax.set_title(name, fontsize=8)
            ax.set_xticks(range(len(ss)), [str(s) for s in ss], fontsize=6)
            ax.set_yticks(range(len(ns)), [str(n) for n in ns], fontsize=6)
            ax.set_xlabel("s", fontsize=7)
            ax.set_ylabel("n", fontsize=7)
    fig.colorbar(shown, ax=axes[0].tolist(), shrink=0.8, label="test MAE")
    fig.colorbar(shift, ax=axes[1].tolist(), shrink=0.8, label="MAE - mean over s")
    target = "-" if tau is None else f"{tau:.4g}"
    fig.suptitle(
        f"{title}: x = below C_min (n*s < {min_test_points}); boxed = on target (MAE <= {target})",
        fontsize=8,
    )
    return png_bytes(fig)


def _box(j: int, i: int) -> Rectangle:
    """The outline of cell (i, j) of a heat map."""
    from matplotlib.patches import Rectangle

    return Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="black", linewidth=1.2)


def landscapes_html(store: Store) -> str:
    """HTML: the heat maps of every complete exhaustive sweep (empty string when none)."""
    parts = []
    for run in store.runs(suite="configsearch", status="complete"):
        if run.branch != SWEEP_BRANCH:
            continue
        params = run.agent_params or {}
        points = sweep_points(store, run.run_id)
        if not points:
            continue
        model = (params.get("models") or ["?"])[0]
        title = f"{params.get('task', run.spec_id)} / {model}"
        min_points = int(params.get("min_test_points") or MIN_TEST_POINTS)
        ident = f"configsearch-map-{run.run_id}"
        parts.append(image(landscape_png(title, points, min_points), f"landscape {title}", ident))
    if not parts:
        return ""
    return "<h3>Landscapes of the exhaustive sweeps</h3>" + details(
        f"Heat maps per r ({len(parts)} sweeps)", "".join(parts), open_=len(parts) <= 2
    )


__all__ = ["landscape_png", "landscapes_html", "sweep_points", "target_threshold"]
