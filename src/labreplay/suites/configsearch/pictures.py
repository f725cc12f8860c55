"""Pictures of the reference report (matplotlib, Agg): what a materials researcher choosing a
benchmark configuration looks at.

- `heatmaps`: per task x model, one (n, s) MAE panel per r with a shared colour scale; the C_min
  boundary (n*s = min_test_points) drawn as a step line, cells below it hatched, the
  configurations on the best-model target ringed, the optimum starred and Omee et al.'s
  (0, 48, 10) boxed.
- `traces`: best-so-far normalised score of BO vs random search per step, the mean over seeds
  with the 25-75% band, the initial design shaded.
- `which_model`: per task with two references, the paired difference of the models (95%
  interval clustered by (r, n) block) over C_min and over the full space, with BO / paired-random verdict counts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from labreplay.suites.configsearch.space import REFERENCE_CONFIG, Config

if TYPE_CHECKING:  # matplotlib is imported lazily, when a picture is drawn
    from types import ModuleType

    from matplotlib.patches import Rectangle

    from labreplay.suites.configsearch.which_model import WhichModelRow


def _pyplot() -> ModuleType:
    """matplotlib.pyplot on the Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def heatmaps(
    title: str,
    maes: dict[Config, float],
    on_target: set[Config],
    optimum: Config | None,
    min_test_points: int,
    path: Path,
) -> None:
    plt = _pyplot()
    r_values = sorted({c.r for c in maes})
    n_values = sorted({c.n for c in maes})
    s_values = sorted({c.s for c in maes})
    cols = min(4, len(r_values))
    rows = math.ceil(len(r_values) / cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(3.1 * cols + 1.0, 2.7 * rows + 0.6), squeeze=False, sharey=True
    )
    values = np.array(list(maes.values()), dtype=float)
    vmin, vmax = float(values.min()), float(values.max())
    image = None
    for k, ax in enumerate(axes.flat):
        if k >= len(r_values):
            ax.axis("off")
            continue
        r = r_values[k]
        grid = np.full((len(n_values), len(s_values)), np.nan)
        for i, n in enumerate(n_values):
            for j, s in enumerate(s_values):
                c = Config(r, n, s)
                if c in maes:
                    grid[i, j] = maes[c]
        image = ax.imshow(
            grid, origin="lower", aspect="auto", cmap="viridis_r", vmin=vmin, vmax=vmax
        )
        for i, n in enumerate(n_values):
            for j, s in enumerate(s_values):
                c = Config(r, n, s)
                if c not in maes:
                    continue
                if n * s < min_test_points:
                    ax.add_patch(_rect(j, i, hatch="///", edge="white", alpha=0.5))
                if c in on_target:
                    ax.plot(j, i, "o", mfc="none", mec="red", ms=7, mew=1.4)
                if c == optimum:
                    ax.plot(j, i, "*", color="red", ms=10)
                if (r, n, s) == REFERENCE_CONFIG:
                    ax.add_patch(_rect(j, i, hatch=None, edge="black", alpha=1.0, lw=2.0))
        # the C_min boundary: for each n, the left edge of the first s with n*s >= C_min
        xs, ys = [], []
        for i, n in enumerate(n_values):
            first = next((j for j, s in enumerate(s_values) if n * s >= min_test_points), None)
            edge = (first if first is not None else len(s_values)) - 0.5
            xs += [edge, edge]
            ys += [i - 0.5, i + 0.5]
        ax.plot(xs, ys, color="white", lw=2.0)
        ax.set_title(f"r = {r:g}", fontsize=9)
        ax.set_xticks(range(len(s_values)), [str(s) for s in s_values], fontsize=7)
        ax.set_yticks(range(len(n_values)), [str(n) for n in n_values], fontsize=7)
        if k >= len(r_values) - cols:
            ax.set_xlabel("s (test points per cluster)", fontsize=8)
        if k % cols == 0:
            ax.set_ylabel("n (clusters)", fontsize=8)
    fig.subplots_adjust(hspace=0.35, right=0.86)
    if image is not None:
        fig.colorbar(image, ax=axes.ravel().tolist(), shrink=0.8, label="MAE")
    fig.suptitle(
        f"{title}: MAE over (n, s) per r. White line: n*s = {min_test_points} (C_min starts to "
        "its right; hatched below it); red rings: on the best-model target; red star: optimum "
        "over C_min; black box: (0, 48, 10)",
        fontsize=8,
        wrap=True,
    )
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _rect(x: int, y: int, hatch: str | None, edge: str, alpha: float, lw: float = 0.0) -> Rectangle:
    from matplotlib.patches import Rectangle

    return Rectangle(
        (x - 0.5, y - 0.5), 1, 1, fill=False, hatch=hatch, edgecolor=edge, alpha=alpha, lw=lw
    )


def traces(
    title: str, by_method: Mapping[str, Sequence[Sequence[float | None]]], init: int, path: Path
) -> None:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    colours = {"bo": "tab:red", "random": "tab:blue"}
    for method, runs in by_method.items():
        length = min(len(t) for t in runs)
        arr = np.array(
            [[np.nan if v is None else float(v) for v in t[:length]] for t in runs], dtype=float
        )
        steps = np.arange(1, length + 1)
        colour = colours.get(method, "tab:green")
        lo, hi = np.nanpercentile(arr, 25, axis=0), np.nanpercentile(arr, 75, axis=0)
        ax.fill_between(steps, lo, hi, color=colour, alpha=0.2, lw=0)
        ax.plot(steps, np.nanmean(arr, axis=0), color=colour, lw=2,
                label=f"{method}: mean of {len(runs)} seeds, 25-75% band")  # fmt: skip
    ax.axvspan(
        0.5, init + 0.5, color="grey", alpha=0.12, label=f"shared initial design (T0 = {init})"
    )
    ax.axhline(1.0, color="black", lw=0.8, ls=":")
    ax.set_xlabel("evaluation")
    ax.set_ylabel("normalised best so far (med - b) / (med - opt)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def which_model(rows: Sequence[WhichModelRow], path: Path) -> None:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9.0, 1.6 + 0.9 * len(rows)))
    labels = []
    for k, row in enumerate(rows):
        for offset, (reading, truth) in enumerate(
            (("C_min", row["truth"]), ("full space", row["truth_full"]))
        ):
            y = k - 0.18 + 0.36 * offset
            lo, hi = truth["paired_difference_ci95"]
            mean = truth["paired_difference"]
            ax.errorbar(mean, y, xerr=[[mean - lo], [hi - mean]], fmt="o" if offset == 0 else "s",
                        color="tab:red" if offset == 0 else "tab:grey", capsize=4,
                        label=reading if k == 0 else None)  # fmt: skip
        counts = "; ".join(
            f"{m}: {v['tied']} tied, {v['agrees_with_truth']} agree"
            for m, v in row["methods"].items()
        )
        labels.append(
            f"{row['task']}: {row['truth']['difference']}\nT = {row['budget']}, "
            f"{row['seeds']} seeds\n{counts}"
        )
    ax.axvline(0.0, color="black", lw=0.8)
    ax.set_yticks(range(len(rows)), labels, fontsize=7)
    ax.set_xlabel("paired difference of mean MAE, 95% interval clustered by (r, n) block "
                  "(0 inside: tied)", fontsize=8)  # fmt: skip
    ax.set_title("Which model is best over the space (Algorithm 1, paired)", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
