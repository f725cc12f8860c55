"""Assemble the static HTML report: one self-contained file, figures embedded as base64 PNG,
no scripts and no external resources (the page makes no network requests)."""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, TypedDict

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
td{white-space:nowrap} td.text{white-space:normal;min-width:16em} .nb{white-space:nowrap}
tr.rejected td{color:#a33} tr.checkpoint td{background:#eef6ff} .note{color:#555;font-size:.85em}
img{max-width:100%;border:1px solid #eee;margin:.4em 0}
.scroll{overflow-x:auto;max-width:100%} .scroll table{margin:.2em 0}
pre{overflow-x:auto;max-width:100%}
details{margin:.4em 0} summary{cursor:pointer;font-weight:600;margin:.3em 0}
"""

# Scores are printed with this many decimals, as the terminal prints them: more is noise, and
# a fixed count never turns a tiny value into an exponent (6.134e-08 prints as 0.000).
DECIMALS = 3


# A table cell longer than this wraps, at spaces only; a shorter one (a number, a name) never
# wraps, and a wide table scrolls in its own box instead.
PROSE_CHARS = 40
# a token that a browser may break inside (after a hyphen or a slash)
BREAKABLE = re.compile(r"\S*[-/]\S*")


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def cell(value: str, numeric: bool = False) -> str:
    """A table cell: numbers and short texts on one line; prose wraps between tokens only."""
    text = esc(value)
    if numeric:
        return f'<td class="num">{text}</td>'
    if len(value) <= PROSE_CHARS:
        return f"<td>{text}</td>"
    kept = BREAKABLE.sub(lambda m: f'<span class="nb">{m.group(0)}</span>', text)
    return f'<td class="text">{kept}</td>'


def num(value: object, fmt: str | None = None) -> str:
    """A number as text: by `fmt`, else an int as it is and a float to `DECIMALS` decimals;
    None is "-"."""
    if value is None:
        return "-"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return esc(value)
    if fmt is None:
        fmt = "d" if isinstance(value, int) else f".{DECIMALS}f"
    text = format(value, fmt)
    if text.startswith("-") and not text.strip("-0.%"):  # a tiny negative rounds to zero
        return ("+" if "+" in fmt else "") + text[1:]
    return text


def signed(value: float | None) -> str:
    """A difference: sign always shown, `DECIMALS` decimals (as the terminal: +0.000)."""
    return num(value, f"+.{DECIMALS}f")


def interval(lo: float | None, hi: float | None) -> str:
    """A confidence interval as "lo to hi" (not "[lo, hi]", which reads as a JSON list)."""
    return f"{signed(lo)} to {signed(hi)}"


class Interval(TypedDict):
    """A mean with its 95% interval."""

    mean: float
    lo: float
    hi: float


def ci_text(ci: Interval | Mapping[str, float] | None) -> str:
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


def label(key: str, labels: Mapping[str, str]) -> str:
    """A column header for a metric key: the suite's declared label, else the key in words
    (never a snake_case name)."""
    return labels.get(key) or key.replace("_", " ")


def table(
    table_id: str,
    headers: Sequence[str],
    rows: Iterable[Sequence[object]],
    numeric: Callable[[int], bool] = lambda i: False,
    row_class: Sequence[str] | None = None,
    *,
    drop_empty: bool = False,
) -> str:
    """An HTML table; `drop_empty` leaves out a column that no row has (every cell "-")."""
    body_rows = [list(r) for r in rows]
    keep = [
        j
        for j in range(len(headers))
        if not (drop_empty and body_rows and all(str(r[j]) == "-" for r in body_rows))
    ]
    head = "".join(f"<th>{esc(headers[j])}</th>" for j in keep)
    body = []
    for i, row in enumerate(body_rows):
        cls = f' class="{esc(row_class[i])}"' if row_class and row_class[i] else ""
        cells = "".join(cell(str(row[j]), numeric(j)) for j in keep)
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


def suite_html(section: SuiteSectionData, labels: Mapping[str, str] | None = None) -> str:
    """The generic section: the leaderboard open; intervals, per-key accuracy and the list of
    runs in collapsible blocks; a table with no rows is not drawn. `labels`: the suite's column
    header per metric key (others are shown as the key in words); a metric no system has is
    left out."""
    labels = labels or {}
    suite = section["suite"]
    slug = _slug(suite)
    parts = [f'<h2 id="{esc(slug)}">{esc(suite)} suite</h2>']
    order = {k: i for i, k in enumerate(labels)}  # the suite's declared order, then the rest
    metrics = sorted(section["metrics"], key=lambda k: (order.get(k, len(order)), k))
    means = section["means"]
    parts.append("<h3>Leaderboard (mean over runs)</h3>")
    parts.append(
        table(
            f"{slug}-leaderboard",
            ["system", "runs", "seeds", *(label(k, labels) for k in metrics)],
            [
                [s, m["runs"], seed_list(m["seeds"]), *[num(m["means"].get(k)) for k in metrics]]
                for s, m in means.items()
            ],
            lambda j: j == 1 or j >= 3,
            drop_empty=True,
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
            ["system (answers scored)", *(label(k, labels) for k in keys)],
            [
                [system, *[num(v.get(k)) for k in keys]]
                for system, v in sorted(section["per_key"].items())
            ],
            lambda j: j >= 1,
            drop_empty=True,
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
