"""Every bash and python block of the docs and the README is run here, run by the test its
`run-by` marker names, or marked `not-run` with its reason (tests/docs/_blocks.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from tests.docs._blocks import ROOT, Block, blocks, runnable_blocks

BLOCKS = runnable_blocks()


def _env(tmp_path: Path) -> dict[str, str]:
    """`labreplay` on PATH as this interpreter's CLI, this checkout's sources first."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "labreplay"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m labreplay.cli.main "$@"\n')
    shim.chmod(0o755)
    path = os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])
    return {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": path,
        "COLUMNS": "100",
    }


def test_every_page_has_blocks_and_the_collector_sees_them() -> None:
    """The collector finds the blocks a page is known to hold (so a parsing slip cannot make
    every other test here pass vacuously)."""
    ids = {b.id for b in BLOCKS}
    assert len(BLOCKS) >= 20, ids
    assert any(i.startswith("docs/agents/bring-your-own.md") for i in ids)
    assert any(b.page.name == "README.md" for b in BLOCKS)


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.id)
def test_block_runs_or_says_why_not(block: Block, tmp_path: Path) -> None:
    for reason in block.not_run:
        assert len(reason) >= 10, f"{block.id}: a not-run marker needs its reason"
    for target in block.run_by:
        path, _, name = target.partition("::")
        test_file = ROOT / path
        assert test_file.is_file(), f"{block.id}: run-by names a missing file {path}"
        if name:
            text = test_file.read_text(encoding="utf-8")
            assert re.search(rf"^def {re.escape(name)}\(", text, re.M), f"{block.id}: {target}"
    if block.not_run or block.run_by:
        return
    if not os.environ.get("LABREPLAY_DATA_DIR"):
        pytest.skip("LABREPLAY_DATA_DIR is not set: the docs' examples read the shared data")
    if block.lang == "python":
        script = tmp_path / "block.py"
        script.write_text(block.code, encoding="utf-8")
        cmd = [sys.executable, str(script)]
    else:
        cmd = ["bash", "-euo", "pipefail", "-c", block.code]
    done = subprocess.run(
        cmd, cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"{block.id} failed:\n{done.stdout[-1500:]}{done.stderr[-1500:]}"


def test_markers_are_recognised_only_directly_above_a_fence(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- not-run: needs an API key -->\n\nprose\n```bash\nfalse\n```\n"
        "<!-- not-run: needs an API key -->\n<!-- other -->\n```bash\nfalse\n```\n",
        encoding="utf-8",
    )
    first, second = blocks(page)
    assert first.not_run == () and second.not_run == ("needs an API key",)


def _normal(text: str) -> str:
    return " ".join(text.split())


def test_bibtex_entries_carry_what_citation_cff_records() -> None:
    """Each BibTeX entry of docs/cite.md has a title (and year) that CITATION.cff records, and
    every reference of CITATION.cff has an entry."""
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    years = {_normal(r["title"]): r.get("year") for r in cff["references"]}
    years[_normal(cff["title"])] = None
    bibtex = "".join(b.code for b in blocks(ROOT / "docs" / "cite.md") if b.lang == "bibtex")
    entries = re.findall(r"^@\w+\{[^,]+,\n(.*?)^\}", bibtex, re.S | re.M)
    seen = set()
    for entry in entries:
        (title,) = re.findall(r"^\s*title\s*=\s*\{(.*)\},?$", entry, re.M)
        assert _normal(title) in years, f"BibTeX title not in CITATION.cff: {title}"
        year = re.findall(r"^\s*year\s*=\s*\{(\d+)\}", entry, re.M)
        assert [int(y) for y in year] == ([years[_normal(title)]] if years[_normal(title)] else [])
        seen.add(_normal(title))
    assert seen == set(years), f"no BibTeX entry for {sorted(set(years) - seen)}"


def test_cite_page_shows_the_entries_labreplay_cite_prints() -> None:
    """docs/cite.md's BibTeX blocks are the package's entries (labreplay/cite.py, the one
    source `labreplay cite` prints), each exactly, and every entry of the package is shown."""
    from labreplay import cite

    bibtex = "".join(b.code for b in blocks(ROOT / "docs" / "cite.md") if b.lang == "bibtex")
    shown = {
        m.group(1): m.group(0)
        for m in re.finditer(r"^@\w+\{([^,]+),\n.*?^\}\n", bibtex, re.S | re.M)
    }
    assert list(shown) == list(cite.ENTRIES)
    for key, entry in shown.items():
        assert entry == cite.ENTRIES[key], key
