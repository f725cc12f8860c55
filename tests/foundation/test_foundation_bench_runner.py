"""`benchmarks/run.py`: discovery, isolation of a failing module, JSON output, exit code 0."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

RUNNER = Path(__file__).resolve().parents[2] / "benchmarks" / "run.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(RUNNER), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=None,
    )


def _write_benches(bench_dir: Path) -> None:
    bench_dir.mkdir()
    (bench_dir / "bench_b_ok.py").write_text(
        textwrap.dedent(
            """
            def run(quick):
                return [{"name": "sum", "median": 1.5 if quick else 2.5, "unit": "ms",
                         "ratio": 0.5, "target": "< 3 ms"},
                        {"name": "no-ratio", "median": 7, "unit": "s"}]
            """
        )
    )
    (bench_dir / "bench_a_broken.py").write_text(
        "def run(quick):\n    raise RuntimeError('boom')\n"
    )
    (bench_dir / "bench_c_bad_shape.py").write_text("def run(quick):\n    return {'x': 1}\n")
    (bench_dir / "helper.py").write_text("raise SystemExit('not a benchmark: never imported')\n")


def test_a_failing_module_is_reported_and_the_others_still_run(tmp_path: Path) -> None:
    bench_dir, out = tmp_path / "benches", tmp_path / "out"
    _write_benches(bench_dir)
    done = _run("--quick", "--dir", str(bench_dir), "--out", str(out))
    assert done.returncode == 0, done.stderr
    result = json.loads((out / "figures.json").read_text())
    assert [(m["module"], m["status"]) for m in result["modules"]] == [
        ("bench_a_broken", "failed"),
        ("bench_b_ok", "ok"),
        ("bench_c_bad_shape", "failed"),
    ]
    assert "RuntimeError: boom" in result["modules"][0]["error"]
    assert [f["name"] for f in result["figures"]] == ["sum", "no-ratio"]
    assert result["figures"][0] == {
        "module": "bench_b_ok",
        "name": "sum",
        "median": 1.5,
        "unit": "ms",
        "ratio": 0.5,
        "target": "< 3 ms",
    }
    assert result["figures"][1]["ratio"] is None and result["quick"] is True
    assert "FAILED" in done.stdout and "sum" in done.stdout
    assert sorted(p.name for p in out.iterdir()) == ["figures.json"]


def test_only_selects_one_module(tmp_path: Path) -> None:
    bench_dir, out = tmp_path / "benches", tmp_path / "out"
    _write_benches(bench_dir)
    done = _run("--only", "b_ok", "--dir", str(bench_dir), "--out", str(out))
    assert done.returncode == 0, done.stderr
    result = json.loads((out / "figures.json").read_text())
    assert [m["module"] for m in result["modules"]] == ["bench_b_ok"]
    assert result["figures"][0]["median"] == 2.5  # not quick


def test_the_foundation_benchmark_runs_on_the_real_data(tmp_path: Path) -> None:
    done = _run("--quick", "--only", "foundation", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    result = json.loads((tmp_path / "figures.json").read_text())
    assert result["modules"][0]["status"] == "ok", result["modules"][0].get("traceback")
    names = [f["name"] for f in result["figures"]]
    assert len(names) == 3
    assert names[0].startswith("canonical_json + sha256 of a spec (1035 records")
    assert names[2].startswith("data verify, all 1560 files")
    assert all(f["median"] > 0 for f in result["figures"])


def test_piped_output_keeps_each_figure_on_one_line(tmp_path: Path) -> None:
    # captured stdout is not a terminal: a long figure name must not wrap at 80 columns
    bench_dir, out = tmp_path / "benches", tmp_path / "out"
    bench_dir.mkdir()
    name = "a figure name long enough to wrap " * 4
    (bench_dir / "bench_long.py").write_text(
        f"def run(quick):\n    return [{{'name': {name!r}, 'median': 1, 'unit': 's'}}]\n"
    )
    (bench_dir / "bench_bad.py").write_text("def run(quick):\n    raise KeyError('[id]')\n")
    done = _run("--quick", "--dir", str(bench_dir), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert any(name.strip() in line for line in done.stdout.splitlines()), done.stdout
    assert "failed: KeyError: '[id]'" in done.stdout  # the error as raised, markup rendered


def _labreplay_imports(path: Path) -> list[tuple[str, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        (node.module, alias.name)
        for node in ast.walk(tree)  # imports inside functions too: most benchmarks defer them
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("labreplay")
        for alias in node.names
    ]


def test_every_benchmark_module_names_only_what_labreplay_has() -> None:
    # an engine move that deletes or renames a function fails here, not an hour into `make bench`
    benches = sorted(RUNNER.parent.glob("bench_*.py"))
    assert benches
    missing = []
    for path in benches:
        assert re.search(r"^def run\(quick: bool\)", path.read_text(), re.M), path.name
        missing += [
            f"{path.name}: from {module} import {name}"
            for module, name in _labreplay_imports(path)
            if not _resolves(module, name)
        ]
    assert missing == []


def _resolves(module: str, name: str) -> bool:
    try:
        if hasattr(importlib.import_module(module), name):
            return True
        return importlib.util.find_spec(f"{module}.{name}") is not None  # a submodule
    except ImportError:
        return False
