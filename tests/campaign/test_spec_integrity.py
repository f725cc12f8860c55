"""A spec whose bytes were modified refuses to run."""

from __future__ import annotations

from pathlib import Path

import pytest

from labreplay.compile.spec import load_spec, write_spec
from labreplay.errors import SpecError


def test_modified_spec_refuses_to_load(pg_specs, tmp_path: Path):
    path = tmp_path / "long-1.json"
    write_spec(pg_specs[0], path)
    assert load_spec(path).spec_hash == pg_specs[0].spec_hash
    text = path.read_text(encoding="utf-8")
    # Change one recorded outcome inside the evaluator section.
    tampered = text.replace('"unreacted"', '"transformed"', 1)
    assert tampered != text
    path.write_text(tampered, encoding="utf-8")
    with pytest.raises(SpecError, match="does not match its recorded spec_hash"):
        load_spec(path)
    path.write_text(text.replace("{", "{ ", 1), encoding="utf-8")
    with pytest.raises(SpecError, match="canonical form"):
        load_spec(path)
    path.write_text(text[: len(text) // 2], encoding="utf-8")
    with pytest.raises(SpecError, match="not valid JSON"):
        load_spec(path)


def test_cli_run_refuses_tampered_spec(pg_specs, tmp_path: Path):
    import json
    import subprocess
    import sys

    from labreplay.suites.campaign.compiler import write_specs

    index = {
        "assignments": [{"id": "long-1", "file": "long-1.json", "spec_hash": pg_specs[0].spec_hash}]
    }
    write_specs(tmp_path / "specs", index, pg_specs[:1])
    # The recorded outcomes live in the sealed evaluator file beside the agent-visible spec.
    spec_file = tmp_path / "specs" / "sealed" / "long-1.sealed.json"
    assert '"valid":true' not in (tmp_path / "specs" / "long-1.json").read_text()
    spec_file.write_text(spec_file.read_text().replace('"valid":true', '"valid":false', 1))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "labreplay.cli.main",
            "campaign",
            "run",
            "--specs",
            str(tmp_path / "specs"),
            "--agent",
            "random",
            "--store",
            str(tmp_path / "s.sqlite"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "refusing to run" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert json.loads((tmp_path / "specs" / "index.json").read_text())["assignments"]
