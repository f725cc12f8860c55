"""The static HTML report: `build_report(store_path, out_dir)` -> `out_dir/index.html`.

Reads only from the results store. One self-contained file: figures are base64 PNGs, there are
no scripts and no external links, so opening it makes no network request. The same store gives
the same bytes (no timestamps are printed).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from labreplay import __version__
from labreplay.errors import StoreError
from labreplay.store.sqlite import Store

REPORT_FILE = "index.html"


def build_report(
    store_path: str | Path, out_dir: str | Path, run_id: str | None = None
) -> dict[str, Any]:
    """Write the report; returns {"path", "suites", "runs", "events", "trajectory_run"}."""
    from labreplay.report.html import campaign_html, page, suite_html
    from labreplay.report.suites import other_suites, suite_section
    from labreplay.suites.campaign.report import campaign_section

    store_path, out = Path(store_path), Path(out_dir)
    if not store_path.is_file():
        raise StoreError(f"store {store_path} does not exist")
    with Store(store_path) as store:
        runs = store.runs()
        events = store.event_count()
        campaign = campaign_section(store, run_id)
        others = [suite_section(store, s) for s in other_suites(store)]
    body = []
    if campaign:
        body.append(campaign_html(campaign))
    body.extend(suite_html(s) for s in others)
    if not body:
        body.append('<p id="empty">The store holds no runs yet.</p>')
    suites = (["campaign"] if campaign else []) + [s["suite"] for s in others]
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
    out.mkdir(parents=True, exist_ok=True)
    target = out / REPORT_FILE
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, target)  # a reader never sees a half-written report
    trajectory = campaign["trajectory"] if campaign else None
    return {
        "path": str(target),
        "suites": suites,
        "runs": len(runs),
        "events": events,
        "trajectory_run": trajectory["run_id"] if trajectory else None,
    }


__all__ = ["REPORT_FILE", "build_report"]
