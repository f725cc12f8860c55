"""Report helpers for a suite's `report_section`: HTML building blocks, PNG figures and the
generic section (leaderboard, pairwise intervals, traces) every suite may start from.

    from labreplay.sdk.report import generic_section, table, image, png_bytes

A suite that follows a paper adds `paper_html(PaperComparison(...))`: the paper's published
figures beside this store's, and why they differ.
"""

from labreplay.report.html import (
    Interval,
    ci_text,
    details,
    esc,
    image,
    interval,
    num,
    seed_list,
    signed,
    slug,
    table,
)
from labreplay.report.papers import Paper, PaperComparison, Published, paper_html
from labreplay.report.plots import png_bytes, scatter3d, traces
from labreplay.report.suites import (
    PointOf,
    generic_section,
    suite_section,
    system_labels,
    system_of,
)

__all__ = [
    "Interval",
    "Paper",
    "PaperComparison",
    "PointOf",
    "Published",
    "ci_text",
    "details",
    "esc",
    "generic_section",
    "image",
    "interval",
    "num",
    "paper_html",
    "png_bytes",
    "scatter3d",
    "seed_list",
    "signed",
    "slug",
    "suite_section",
    "system_labels",
    "system_of",
    "table",
    "traces",
]
