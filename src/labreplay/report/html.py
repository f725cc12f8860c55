"""Assemble the static HTML report: one self-contained file, figures embedded as base64 PNG,
no scripts and no external resources (the page makes no network requests)."""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from labreplay.report import plots
from labreplay.scoring.stats import BOOTSTRAP_SEED

CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1200px;color:#222;padding:0 1em}
h1{font-size:1.5em} h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.85em}
th,td{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#f1f3f5} td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.rejected td{color:#a33} tr.checkpoint td{background:#eef6ff} .note{color:#555;font-size:.85em}
img{max-width:100%;border:1px solid #eee;margin:.4em 0}
"""


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def num(value: Any, fmt: str = ".3f") -> str:
    if value is None:
        return "-"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return esc(value)
    return format(value, fmt)


def ci_text(ci: Mapping[str, float] | None) -> str:
    return "-" if not ci else f"{ci['mean']:+.3f} [{ci['lo']:+.3f}, {ci['hi']:+.3f}]"


def table(
    table_id: str,
    headers: Sequence[str],
    rows: Iterable[Sequence[Any]],
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
    return (
        f'<table id="{esc(table_id)}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def image(png: bytes, alt: str, image_id: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<img id="{esc(image_id)}" alt="{esc(alt)}" src="data:image/png;base64,{data}">'


def slug(text: str) -> str:
    """An HTML id fragment made of `text` (lower case, alphanumerics and dashes)."""
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")[:60]


_slug = slug


def suite_html(section: Mapping[str, Any]) -> str:
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
                [
                    s,
                    m["runs"],
                    ", ".join(map(str, m["seeds"])),
                    *[num(m["means"].get(k)) for k in metrics],
                ]
                for s, m in means.items()
            ],
            lambda j: j == 1 or j >= 3,
        )
    )
    if section["pairwise"]:
        parts.append(
            f'<p class="note">Paired bootstrap 95% intervals over shared units, seed '
            f"{BOOTSTRAP_SEED}, 10000 resamples.</p>"
        )
        parts.append(
            table(
                f"{slug}-pairwise",
                ["a", "b", "shared units", "mean score difference", "95% CI", "separable"],
                [
                    [
                        p["a"],
                        p["b"],
                        p["units"],
                        num(p["diff"], "+.4f"),
                        f"[{p['lo']:+.4f}, {p['hi']:+.4f}]",
                        "yes" if p["separable"] else "no (tie)",
                    ]
                    for p in section["pairwise"]
                ],
                lambda j: j in (2, 3),
            )
        )
    if section["per_key"]:
        keys = sorted({k for v in section["per_key"].values() for k in v})
        parts.append("<h3>Per-key accuracy</h3>")
        parts.append(
            table(
                f"{slug}-per-key",
                ["run / field", *keys],
                [
                    [label, *[num(v.get(k)) for k in keys]]
                    for label, v in sorted(section["per_key"].items())
                ],
                lambda j: j >= 1,
            )
        )
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
    parts.append("<h3>Runs</h3>")
    parts.append(
        table(
            f"{slug}-runs",
            ["run", "system", "spec", "branch", "seed", "status", "scores"],
            [
                [
                    r["run_id"],
                    r["system"],
                    r["spec_id"],
                    r["branch"],
                    r["seed"],
                    r["status"],
                    json.dumps({k: v for k, v in r["scores"].items()}, sort_keys=True),
                ]
                for r in section["runs"]
            ],
        )
    )
    return "\n".join(parts)


def page(title: str, header: Mapping[str, Any], body: Sequence[str]) -> str:
    facts = "".join(f"<li>{esc(k)}: {esc(v)}</li>" for k, v in header.items())
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
        f'<h1>{esc(title)}</h1><ul class="note">{facts}</ul>\n'
        + "\n".join(body)
        + "\n</body></html>\n"
    )
