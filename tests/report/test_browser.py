"""Open the report in a real headless Chromium: the DOM it builds has the expected tables and
images (all decoded), and a screenshot is saved with the test's output.

Needs Debian's `chromium` (apt-get install -y chromium). Skipped when it is missing, except
under CI=true, where a missing browser fails the test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from tests.report.conftest import parse_html

from labreplay.report import build_report

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-default-apps",
    "--disable-extensions",
)


def _chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail("chromium is not installed (CI=true): apt-get install -y chromium")
    pytest.skip("chromium is not installed (apt-get install -y chromium)")


def _run(browser: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [browser, *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=180,
    )


@pytest.mark.browser
def test_report_renders_in_headless_chromium(tmp_path, campaign_store):
    browser = _chromium()
    report = Path(build_report(campaign_store, tmp_path / "report")["path"])
    url = report.resolve().as_uri()
    dumped = _run(browser, tmp_path / "profile-dom", "--dump-dom", url)
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = parse_html(dumped.stdout)
    expected = {
        "campaign-leaderboard",
        "campaign-loao",
        "belief-trajectory-table",
    }
    assert expected <= set(dom.tables)
    # bayes is the one ranked system; no-evidence, random and the models are reference rows
    board = dom.tables["campaign-leaderboard"]
    assert len([r for r in board if r[0].isdigit()]) == 1
    refs = {r[2] for r in board if r[0] == "ref"}
    assert {"no-evidence", "random", "context-trained model"} <= refs
    assert len(dom.tables["belief-trajectory-table"]) > 20
    ids = {img.get("id", "") for img in dom.images}
    assert {"campaign-lifts", "campaign-lift-per-assignment", "trajectory-plot"} <= ids
    assert sum(1 for i in ids if i.startswith("curve-")) == 3  # one per agent
    assert all(img["src"].startswith("data:image/png;base64,") for img in dom.images)

    shot = tmp_path / "report.png"
    shown = _run(
        browser, tmp_path / "profile-shot", "--window-size=1280,2000", f"--screenshot={shot}", url
    )
    assert shown.returncode == 0, shown.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1280, 2000)
    assert len(data) > 50_000  # a rendered page, not a blank canvas
