"""CITATION.cff: CFF 1.2.0 with its required keys, the package's version, and a title and
authors for every reference (the three papers and the datasets)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import yaml

from labreplay import __version__

ROOT = Path(__file__).resolve().parents[2]


def test_citation_cff_is_cff_1_2_0_for_this_version() -> None:
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    assert cff["message"] and cff["title"] and cff["authors"]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert cff["version"] == project["version"] == __version__
    assert cff["license"] == project["license"]
    titles = " ".join(r["title"] for r in cff["references"])
    for paper in ("Dynamical-SDL-1", "RxnOptBench", "AutoMatBench", "Precursor Genome"):
        assert paper in titles
    for ref in cff["references"]:
        assert ref["type"] and ref["title"] and ref["authors"], ref
        for author in ref["authors"]:
            assert author.get("family-names") or author.get("name"), ref["title"]
