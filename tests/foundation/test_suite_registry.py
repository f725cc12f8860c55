"""The suite registry and the layering rules: the core (CLI and demo included) never imports a
suite, and a suite reaches the core only through public modules (`labreplay.sdk`, ...)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import labreplay
from labreplay.errors import LabreplayError
from labreplay.suite import Suite, get_suite, load_suites

SRC = Path(labreplay.__file__).resolve().parent
# Where importing a suite is allowed: the suites themselves. The CLI and the top-level demo find
# suites through the registry, like the rest of the core.
ALLOWED = ("suites",)


def _suite_imports(path: Path, root: Path = SRC) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        found += [
            f"{path.relative_to(root)}:{node.lineno}: {n}"
            for n in names
            if n == "labreplay.suites" or n.startswith("labreplay.suites.")
        ]
    return sorted(set(found))


def test_core_never_imports_a_suite() -> None:
    core = [p for p in sorted(SRC.rglob("*.py")) if p.relative_to(SRC).parts[0] not in ALLOWED]
    assert len(core) > 30  # the scan really covers the core
    offenders = [hit for p in core for hit in _suite_imports(p)]
    assert offenders == []


def _private_core_imports(path: Path, root: Path = SRC) -> list[str]:
    """Imports of a private core module (a `_name` part below `labreplay`, outside suites)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        private = [
            n
            for n in names
            if n.split(".")[0] == "labreplay"
            and n.split(".")[1:2] != ["suites"]
            and any(p.startswith("_") and p != "__version__" for p in n.split(".")[1:])
        ]
        if private:  # one hit per import statement
            found.append(f"{path.relative_to(root)}:{node.lineno}: {private[0]}")
    return sorted(set(found))


def test_cli_and_demo_never_import_a_suite() -> None:
    outer = [SRC / "demo.py", *sorted((SRC / "cli").rglob("*.py"))]
    assert len(outer) > 5
    assert [hit for p in outer for hit in _suite_imports(p)] == []


def test_suites_reach_the_core_through_public_modules_only() -> None:
    suites = sorted((SRC / "suites").rglob("*.py"))
    assert len(suites) > 60  # the scan really covers the three suites
    offenders = [hit for p in suites for hit in _private_core_imports(p)]
    assert offenders == []


def test_the_private_scan_catches_private_imports(tmp_path: Path) -> None:
    bad = tmp_path / "probe.py"
    bad.write_text(
        "from labreplay._hashing import sha256_json\n"
        "import labreplay._rng\n"
        "def f():\n    from labreplay.records._types import MISSING_TAG\n"
        "from labreplay.cli._common import console\n"
        "from labreplay.sdk import sha256_json\n"
        "from labreplay import __version__\n",
        encoding="utf-8",
    )
    assert len(_private_core_imports(bad, tmp_path)) == 4


def test_the_scan_catches_a_suite_import(tmp_path: Path) -> None:
    # The checker itself must fail on the forms it is meant to catch.
    bad = tmp_path / "probe.py"
    bad.write_text(
        "import labreplay.suites.campaign\n"
        "from labreplay.suites import conditions\n"
        "def f():\n    from labreplay.suites.configsearch.runner import X\n",
        encoding="utf-8",
    )
    assert len(_suite_imports(bad, tmp_path)) >= 3


def test_list_suites_names_the_three_builtins() -> None:
    assert labreplay.list_suites() == ["campaign", "conditions", "configsearch"]
    for suite in load_suites():
        assert isinstance(suite, Suite)
        assert get_suite(suite.name) is suite
        assert suite.cli().registered_groups or suite.cli().registered_commands


def test_unknown_suite_is_named() -> None:
    with pytest.raises(LabreplayError, match=r"no suite named 'nope'.*campaign"):
        get_suite("nope")


def test_cli_mounts_every_registered_suite() -> None:
    from labreplay.cli import main as cli_main

    cli_main._add_suite_groups()
    mounted = {g.name for g in cli_main.app.registered_groups}
    assert set(labreplay.list_suites()) <= mounted


@pytest.mark.parametrize(
    "command",
    [
        ("campaign", "run"),
        ("conditions", "run"),
        ("configsearch", "run"),
        ("configsearch", "sweep"),
    ],
)
def test_every_run_command_takes_an_executor(command: tuple[str, str]) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "labreplay.cli.main", *command, "--help"],
        capture_output=True,
        text=True,
        check=False,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    assert "--executor" in done.stdout and "--scheduler" in done.stdout
