"""The papers side by side: a suite's published headline figures (constants quoted from the
paper, each with where it stands there), this tool's figures on its own data (computed from the
store being reported, never typed) and the declared reasons the two differ.

A suite keeps its paper's figures in `suites/<name>/papers.py` and builds a `PaperComparison`
from a store; `paper_html` renders it in the report and `paper_markdown` the docs page (which
has no store, so it shows the command that produces this tool's figures instead).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from labreplay.report.html import esc, table


@dataclass(frozen=True)
class Published:
    """One headline figure as the paper prints it (`value` is text, quoted verbatim)."""

    figure: str
    value: str
    source: str  # where it stands in the paper: section, table or figure


@dataclass(frozen=True)
class Paper:
    """What a suite quotes from the paper its benchmark follows."""

    suite: str
    title: str
    citation: str  # short reference; the BibTeX key is `labreplay cite`'s
    bibtex_key: str
    published: tuple[Published, ...]
    differences: tuple[str, ...]  # declared reasons this tool's figures differ
    command: str  # the commands that produce this tool's figures on its data
    here_figures: str  # what this tool's side shows, in words (for the docs page)


@dataclass(frozen=True)
class PaperComparison:
    """A paper beside this tool's figures read from one store."""

    paper: Paper
    columns: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()  # formatted cells, one row per system
    notes: tuple[str, ...] = field(default=())  # what the rows are (board, assignments, ...)


def paper_html(comparison: PaperComparison) -> str:
    """The report's "paper vs here vs why different" block for one suite."""
    paper, suite = comparison.paper, comparison.paper.suite
    parts = [
        f'<h3 id="{esc(suite)}-paper">The paper beside this store</h3>',
        f'<p class="note">{esc(paper.citation)}: <em>{esc(paper.title)}</em>. Published '
        "figures are quoted from the paper; this store's figures are computed from its runs.</p>",
        "<h4>Published headline figures</h4>",
        table(
            f"{suite}-paper-published",
            ("figure", "paper", "where in the paper"),
            [(p.figure, p.value, p.source) for p in paper.published],
        ),
        "<h4>This store</h4>",
    ]
    if comparison.rows:
        parts.append(
            table(
                f"{suite}-paper-here",
                comparison.columns,
                comparison.rows,
            )
        )
    else:
        parts.append(
            f'<p class="note">No runs of this store give these figures yet: '
            f"{esc(paper.command)}</p>"
        )
    parts.extend(f'<p class="note">{esc(n)}</p>' for n in comparison.notes)
    parts.append("<h4>Why the figures differ</h4>")
    items = "".join(f"<li>{esc(d)}</li>" for d in paper.differences)
    parts.append(f'<ul id="{esc(suite)}-paper-differences">{items}</ul>')
    return "\n".join(parts)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def paper_markdown(papers: Sequence[Paper]) -> str:
    """The docs page: for each paper its published figures, how to get this tool's figures
    (a command, never a typed measurement) and why they differ."""
    lines = [
        "# The papers side by side",
        "",
        "Each suite follows one published benchmark. The figures below are quoted from the",
        "papers, with where each stands there; this tool's figures on its own data are not",
        "typed here: they come from your runs. Run the commands given, then open the report:",
        "its section *The paper beside this store* puts the two side by side, computed from the",
        "store it reads, with the reasons they differ. `labreplay cite` prints the BibTeX.",
        "",
        "This page is generated from the suites' `papers.py` modules (the report quotes the",
        "same constants).",
        "",
    ]
    for paper in papers:
        lines += [
            f"## {paper.suite}: {paper.title}",
            "",
            f"{paper.citation} (BibTeX key `{paper.bibtex_key}`).",
            "",
            "| figure | paper | where in the paper |",
            "| --- | --- | --- |",
            *(
                f"| {_cell(p.figure)} | {_cell(p.value)} | {_cell(p.source)} |"
                for p in paper.published
            ),
            "",
            f"**This tool's figures** ({paper.here_figures}): run",
            "",
            "```bash",
            paper.command,
            "```",
            "",
            "**Why they differ**",
            "",
            *(f"- {d}" for d in paper.differences),
            "",
        ]
    return "\n".join(lines)


__all__ = ["Paper", "PaperComparison", "Published", "paper_html", "paper_markdown"]
