"""Report helpers for a suite's `report_section`: HTML building blocks, PNG figures and the
generic section (leaderboard, pairwise intervals, traces) every suite may start from.

    from labreplay.sdk.report import generic_section, table, image, png_bytes
"""

from labreplay.report.html import ci_text, esc, image, num, slug, table
from labreplay.report.plots import png_bytes, scatter3d, traces
from labreplay.report.suites import PointOf, generic_section, suite_section, system_of

__all__ = [
    "PointOf",
    "ci_text",
    "esc",
    "generic_section",
    "image",
    "num",
    "png_bytes",
    "scatter3d",
    "slug",
    "suite_section",
    "system_of",
    "table",
    "traces",
]
