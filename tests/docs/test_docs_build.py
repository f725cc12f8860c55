"""`mkdocs build --strict` builds the docs site (the pages, the CLI reference generated from
the app by scripts/mkdocs_hooks.py, the API reference from docstrings) without a warning."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NEEDED = ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python")
MISSING = [name for name in NEEDED if importlib.util.find_spec(name.split(".")[0]) is None]


@pytest.mark.slow
@pytest.mark.skipif(
    bool(MISSING), reason=f"the docs extra is not installed (no {', '.join(MISSING)})"
)
def test_mkdocs_build_strict(tmp_path: Path) -> None:
    site = tmp_path / "site"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
        "NO_MKDOCS_2_WARNING": "1",
    }
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    cli = (site / "cli" / "index.html").read_text(encoding="utf-8")
    for command in (
        "labreplay campaign run",
        "labreplay conditions score",
        "labreplay store verify",
    ):
        assert command in cli, f"the CLI reference lacks {command}"
    assert "--store" in cli
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    for name in ("check_agent", "check_suite", "CampaignAgent", "EpisodeSuite", "EventSink"):
        assert name in api, f"the API reference lacks {name}"
    for page in ("suites/campaign", "agents/llm", "harnesses", "reliability", "metrics", "cite"):
        assert (site / page / "index.html").is_file(), page


def test_no_list_runs_into_the_paragraph_above_it() -> None:
    """Python-Markdown (unlike GitHub) reads a list that follows a paragraph line without a
    blank line as part of that paragraph: one run-on line on the site (issue 51)."""
    import re

    item = re.compile(r"^(\d+\.|[-*]) ")
    found = []
    for page in sorted((ROOT / "docs").rglob("*.md")):
        lines, in_code = page.read_text(encoding="utf-8").split("\n"), False
        for k, line in enumerate(lines[1:], start=1):
            if line.startswith("```"):
                in_code = not in_code
            above = lines[k - 1]
            if in_code or not item.match(line) or not above.strip():
                continue
            if not (item.match(above.lstrip()) or above[0] in " |#<"):
                found.append(f"{page.relative_to(ROOT)}:{k + 1}")
    assert found == []
