"""The static HTML report: `build_report(store_path, out_dir)` -> `out_dir/index.html`.

Reads only from the results store. One self-contained file: figures are base64 PNGs, there are
no scripts and no external links, so opening it makes no network request. The same store gives
the same bytes (no timestamps are printed).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypedDict

from labreplay import __version__
from labreplay._atomic import atomic_directory, atomic_write_text
from labreplay._files import writable_dir
from labreplay.store.sqlite import Store

REPORT_FILE = "index.html"


class ReportResult(TypedDict):
    """What `build_report` wrote: the page, the suites and runs in it, the featured run."""

    path: str
    suites: list[str]
    runs: int
    events: int
    trajectory_run: object  # a suite's `ReportSection.info["trajectory_run"]`, or None


def build_report(
    store_path: str | Path,
    out_dir: str | Path,
    run_id: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> ReportResult:
    """Write the report; returns {"path", "suites", "runs", "events", "trajectory_run"}.
    `progress` is told, one line at a time, which suite's section is being built."""
    from labreplay.report.html import page
    from labreplay.report.suites import generic_section
    from labreplay.suite import ReportSection, load_suites

    store_path, out = Path(store_path), writable_dir(out_dir, "--out")  # before any work
    sections: list[ReportSection] = []
    with Store(store_path, readonly=True) as store:
        runs = store.runs()
        events = store.event_count()
        registered = load_suites()
        present = {r.suite for r in runs}
        for suite in registered:
            if progress is not None and suite.name in present:
                progress(f"report: the {suite.name} section")
            section = suite.report_section(store, run_id)
            if section is not None:
                sections.append(section)
        # Runs of a suite not installed here still get the generic section.
        for name in sorted({r.suite for r in runs} - {s.name for s in registered}):
            generic = generic_section(store, name)
            if generic is not None:
                sections.append(generic)
    body = [s.html for s in sections]
    if not body:
        body.append('<p id="empty">The store holds no runs yet.</p>')
    suites = [s.suite for s in sections]
    text = page(
        "labreplay report",
        {
            "store": store_path.name,
            "labreplay": __version__,
            "suites": ", ".join(suites) or "none",
            "runs": len(runs),
            "events": events,
        },
        body,
    )
    target = out / REPORT_FILE
    # Built in a temporary sibling and renamed into place: a reader never sees a half-written
    # report, and a failure (a full disk) leaves no new, empty --out directory behind.
    with atomic_directory(out) as building:
        atomic_write_text(building / REPORT_FILE, text)
    if progress is not None:
        progress(f"report: wrote {target}")
    return {
        "path": str(target),
        "suites": suites,
        "runs": len(runs),
        "events": events,
        "trajectory_run": next(
            (s.info["trajectory_run"] for s in sections if "trajectory_run" in s.info), None
        ),
    }


__all__ = ["REPORT_FILE", "ReportResult", "build_report"]
