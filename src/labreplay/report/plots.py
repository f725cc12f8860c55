"""Generic PNG figures for the report (suites draw their own with `png_bytes`) (matplotlib, Agg canvas; no global pyplot state).

Every function returns PNG bytes; the same data gives the same bytes (no timestamps in the
PNG metadata).
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure


def png_bytes(fig: Figure) -> bytes:
    """The figure as PNG bytes, byte-stable for the same data (no timestamp metadata)."""
    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, metadata={"Software": None})
    return buffer.getvalue()


_png = png_bytes


def traces(series: Mapping[str, Sequence[float]], title: str) -> bytes:
    fig = Figure(figsize=(7.0, 3.2), layout="constrained")
    ax = fig.subplots()
    for label, values in sorted(series.items()):
        ax.plot(range(1, len(values) + 1), values, marker=".", label=label)
    ax.set_xlabel("evaluation")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6)
    return _png(fig)


def scatter3d(
    points: Mapping[str, Sequence[tuple[float, float, float, float]]],
    axes: tuple[str, str, str] = ("x", "y", "z"),
) -> bytes:
    """Evaluated points (three coordinates named by `axes`), coloured by objective."""
    fig = Figure(figsize=(5.5, 4.5), layout="constrained")
    ax = fig.add_subplot(projection="3d")
    every = [p for values in points.values() for p in values]
    art = ax.scatter(
        [p[0] for p in every],
        [p[1] for p in every],
        [p[2] for p in every],
        c=[p[3] for p in every],
        cmap="viridis",
    )
    ax.set_xlabel(axes[0])
    ax.set_ylabel(axes[1])
    ax.set_zlabel(axes[2])
    fig.colorbar(art, ax=ax, shrink=0.6, label="objective")
    return _png(fig)
