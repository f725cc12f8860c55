"""Assemble the static HTML report: one self-contained file, figures embedded as base64 PNG,
no scripts and no external resources (the page makes no network requests)."""

from __future__ import annotations

import base64
import html
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from labreplay.report import plots
from labreplay.scoring.stats import BOOTSTRAP_SEED

if TYPE_CHECKING:
    from labreplay.report.suites import SuiteSectionData

CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1200px;color:#222;padding:0 1em}
h1{font-size:1.5em} h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.85em}
th,td{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#f1f3f5} td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.rejected td{color:#a33} tr.checkpoint td{background:#eef6ff} .note{color:#555;font-size:.85em}
img{max-width:100%;border:1px solid #eee;margin:.4em 0}
.scroll{overflow-x:auto;max-width:100%} .scroll table{margin:.2em 0}
pre{overflow-x:auto;max-width:100%} td{overflow-wrap:anywhere}
details{margin:.4em 0} summary{cursor:pointer;font-weight:600;margin:.3em 0}
"""

# Scores are printed to at most this many significant digits: more is noise, not information.
SIGNIFICANT = 4


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def num(value: object, fmt: str = f".{SIGNIFICANT}g") -> str:
    """A number as text (default: at most `SIGNIFICANT` significant digits); None is "-"."""
    if value is None:
        return "-"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return esc(value)
    return format(value, fmt)


def signed(value: float | None) -> str:
    """A difference: sign shown (none on an exact 0), at most `SIGNIFICANT` significant digits."""
    return "0" if value == 0 else num(value, f"+.{SIGNIFICANT}g")


def interval(lo: float | None, hi: float | None) -> str:
    """A confidence interval as "lo to hi" (not "[lo, hi]", which reads as a JSON list)."""
    return f"{signed(lo)} to {signed(hi)}"


def ci_text(ci: Mapping[str, float] | None) -> str:
    if not ci:
        return "-"
    return f"{signed(ci['mean'])} ({interval(ci['lo'], ci['hi'])})"


def details(summary: str, body: str, *, open_: bool = False, details_id: str = "") -> str:
    """A collapsible block (`<details>`): long tables stay one click away, the page short."""
    ident = f' id="{esc(details_id)}"' if details_id else ""
    state = " open" if open_ else ""
    return f"<details{ident}{state}><summary>{esc(summary)}</summary>\n{body}\n</details>"


def seed_list(seeds: Iterable[int]) -> str:
    """Seeds as runs of consecutive numbers: [0, 1, 2, 5] -> "0-2, 5"."""
    ordered = sorted(set(seeds))
    spans: list[list[int]] = []
    for s in ordered:
        if spans and s == spans[-1][1] + 1:
            spans[-1][1] = s
        else:
            spans.append([s, s])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def table(
    table_id: str,
    headers: Sequence[str],
    rows: Iterable[Sequence[object]],
    numeric: Callable[[int], bool] = lambda i: False,
    row_class: Sequence[str] | None = None,
) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = []
    for i, row in enumerate(rows):
        cls = f' class="{esc(row_class[i])}"' if row_class and row_class[i] else ""
        cells = "".join(
            f'<td class="num">{esc(c)}</td>' if numeric(j) else f"<td>{esc(c)}</td>"
            for j, c in enumerate(row)
        )
        body.append(f"<tr{cls}>{cells}</tr>")
    # The box scrolls sideways, not the page: a wide table never widens the document.
    return (
        f'<div class="scroll"><table id="{esc(table_id)}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def image(png: bytes, alt: str, image_id: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<img id="{esc(image_id)}" alt="{esc(alt)}" src="data:image/png;base64,{data}">'


def slug(text: str) -> str:
    """An HTML id fragment made of `text` (lower case, alphanumerics and dashes)."""
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")[:60]


_slug = slug


def suite_html(section: SuiteSectionData) -> str:
    """The generic section: the leaderboard open; intervals, per-key accuracy and the list of
    runs in collapsible blocks; a table with no rows is not drawn."""
    suite = section["suite"]
    slug = _slug(suite)
    parts = [f'<h2 id="{esc(slug)}">{esc(suite)} suite</h2>']
    metrics = section["metrics"]
    means = section["means"]
    parts.append("<h3>Leaderboard (mean over runs)</h3>")
    parts.append(
        table(
            f"{slug}-leaderboard",
            ["system", "runs", "seeds", *metrics],
            [
                [s, m["runs"], seed_list(m["seeds"]), *[num(m["means"].get(k)) for k in metrics]]
                for s, m in means.items()
            ],
            lambda j: j == 1 or j >= 3,
        )
    )
    if section["pairwise"]:
        pairs = section["pairwise"]
        body = (
            f'<p class="note">Paired bootstrap 95% intervals over shared units, seed '
            f"{BOOTSTRAP_SEED}, 10000 resamples.</p>"
        ) + table(
            f"{slug}-pairwise",
            ["a", "b", "shared units", "mean score difference", "95% CI", "separable"],
            [
                [
                    p["a"],
                    p["b"],
                    p["units"],
                    signed(p["diff"]),
                    interval(p["lo"], p["hi"]),
                    "yes" if p["separable"] else "no (tie)",
                ]
                for p in pairs
            ],
            lambda j: j in (2, 3),
        )
        parts.append(details(f"Pairwise differences ({len(pairs)} pairs)", body, open_=True))
    if section["per_key"]:
        keys = sorted({k for v in section["per_key"].values() for k in v})
        body = '<p class="note">Mean over the runs of each system.</p>' + table(
            f"{slug}-per-key",
            ["system (answers scored)", *keys],
            [
                [label, *[num(v.get(k)) for k in keys]]
                for label, v in sorted(section["per_key"].items())
            ],
            lambda j: j >= 1,
        )
        parts.append(details(f"Per-key accuracy ({len(keys)} keys)", body))
    if section["traces"]:
        parts.append("<h3>Traces</h3>")
        parts.append(
            image(plots.traces(section["traces"], f"{suite} traces"), "traces", f"{slug}-traces")
        )
    if section["points"]:
        parts.append("<h3>Evaluated configurations</h3>")
        parts.append(
            image(
                plots.scatter3d(section["points"], section.get("axes", ("x", "y", "z"))),
                "configurations",
                f"{slug}-scatter3d",
            )
        )
    runs = section["runs"]
    runs_table = table(
        f"{slug}-runs",
        ["run", "system", "spec", "branch", "seed", "status"],
        [
            [r["run_id"], r["system"], r["spec_id"], r["branch"], r["seed"], r["status"]]
            for r in runs
        ],
    )
    parts.append(details(f"Runs ({len(runs)})", runs_table))
    return "\n".join(parts)


def page(title: str, header: Mapping[str, object], body: Sequence[str]) -> str:
    facts = "".join(f"<li>{esc(k)}: {esc(v)}</li>" for k, v in header.items())
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
        f'<h1>{esc(title)}</h1><ul class="note">{facts}</ul>\n'
        + "\n".join(body)
        + "\n</body></html>\n"
    )
