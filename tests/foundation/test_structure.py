"""The engine's structural promises, read from the source (no run needed):

- a suite declares its options as classes whose fields are the flags: no `typer.Option(`
  under `src/labreplay/suites/` (the CLI is generated from the classes, `labreplay.cli.generate`);
- every suite's demo plays its runs through `labreplay.run`, at its defaults: it names no
  runner function of its suite (the demo once played one random replicate where `run` plays
  three, so its board was not the CLI's).
"""

from __future__ import annotations

import ast
from pathlib import Path

import labreplay

SRC = Path(labreplay.__file__).parent
SUITES = SRC / "suites"
# what a demo must not call: the suites' own run entry points, around `labreplay.run` (the
# configsearch demo's exhaustive sweep is its reference table, as `configsearch sweep` makes it)
RUNNER_NAMES = {
    "run_suite",
    "run_assignments",
    "run_campaign",
    "run_conditions",
    "run_agent",
    "run_searches",
    "run_search",
    "play_detached",
}


def test_no_suite_module_writes_a_typer_option() -> None:
    found = [
        f"{path.relative_to(SRC)}:{n}"
        for path in sorted(SUITES.rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "typer.Option(" in line
    ]
    assert found == [], found


def _names(tree: ast.AST) -> set[str]:
    imported = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    called = {
        node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
    }
    return imported | called


def test_every_demo_plays_through_labreplay_run() -> None:
    demos = sorted(SUITES.glob("*/demo.py"))
    assert {d.parent.name for d in demos} >= {"campaign", "conditions", "configsearch"}
    for demo in demos:
        names = _names(ast.parse(demo.read_text(encoding="utf-8")))
        assert not names & RUNNER_NAMES, (demo.parent.name, sorted(names & RUNNER_NAMES))
        assert "run" in names or "labreplay_run" in names, demo.parent.name
