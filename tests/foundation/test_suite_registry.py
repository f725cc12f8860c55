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


# A suite reaches the core only through the SDK (`labreplay.sdk`, `labreplay.sdk.*`) and the
# error classes; it imports its own package freely.
PUBLIC = ("labreplay.sdk", "labreplay.errors")
# The only imports of another suite's modules: the Inspect AI tasks adapt campaign and
# conditions, and `conditions` mounts the `inspect import` command. Nothing else.
CROSS_SUITE = {
    "inspect_tasks": (
        "labreplay.suites.campaign.api",
        "labreplay.suites.campaign.serve",
        "labreplay.suites.conditions.episodes",  # an imported log plays as a replay agent
        "labreplay.suites.conditions.events",  # the typed answer result it scores
        "labreplay.suites.conditions.prompts",
        "labreplay.suites.conditions.questions",
        "labreplay.suites.conditions.runner",
        "labreplay.suites.conditions.scoring",
    ),
    "conditions": ("labreplay.suites.inspect_tasks.cli",),
}


def _under(name: str, module: str) -> bool:
    return name == module or name.startswith(module + ".")


def _non_sdk_imports(path: Path, root: Path = SRC) -> list[str]:
    """Imports of `labreplay` modules a suite may not use: one hit per import statement."""
    rel = path.relative_to(root)
    suite = rel.parts[1] if rel.parts[0] == "suites" and len(rel.parts) > 2 else ""
    package = ["labreplay", *rel.with_suffix("").parts]
    if path.name != "__init__.py":
        package = package[:-1]
    own = f"labreplay.suites.{suite}" if suite else ""
    ok = (*PUBLIC, *((own,) if own else ()), *CROSS_SUITE.get(suite, ()))
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against the file's package
                parent = package[: len(package) - node.level + 1]
                base = ".".join([*parent, *([base] if base else [])])
            # `from labreplay import x` and `from labreplay.suites import x` name modules
            names = (
                [f"{base}.{a.name}" for a in node.names]
                if base in ("labreplay", "labreplay.suites")
                else [base]
            )
        bad = [
            n for n in names if n.split(".")[0] == "labreplay" and not any(_under(n, m) for m in ok)
        ]
        if bad:
            found.append(f"{rel}:{node.lineno}: {bad[0]}")
    return sorted(set(found))


def test_suites_reach_the_core_through_the_sdk_only() -> None:
    suites = sorted((SRC / "suites").rglob("*.py"))
    assert len(suites) > 60  # the scan really covers the three suites
    offenders = [hit for p in suites for hit in _non_sdk_imports(p)]
    assert offenders == [], "run scripts/sdk_imports.py (see its docstring)"


def test_the_sdk_scan_catches_core_imports(tmp_path: Path) -> None:
    suite = tmp_path / "suites" / "campaign"
    suite.mkdir(parents=True)
    bad = suite / "probe.py"
    bad.write_text(
        "from labreplay._hashing import sha256_json\n"  # private
        "import labreplay._rng\n"
        "def f():\n    from labreplay.records._types import MISSING_TAG\n"  # lazy
        "from labreplay.store.sqlite import Store\n"  # public core, not the SDK
        "from labreplay import suite\n"
        "from labreplay.suites.conditions.runner import X\n"  # another suite
        "from ...store import sqlite\n"  # relative, out of the suite
        "from labreplay.sdk import sha256_json\n"  # the rest are fine
        "from labreplay.sdk.engine import Store\n"
        "from labreplay.errors import SpecError\n"
        "from labreplay.suites.campaign.api import load_specs\n"
        "from . import api\n"
        "import json\n",
        encoding="utf-8",
    )
    assert len(_non_sdk_imports(bad, tmp_path)) == 7
    other = tmp_path / "suites" / "inspect_tasks" / "probe.py"
    other.parent.mkdir()
    other.write_text(
        "from labreplay.suites.conditions.runner import X\n"  # a listed exception
        "from labreplay.suites.conditions.agents import Y\n",  # not listed
        encoding="utf-8",
    )
    assert _non_sdk_imports(other, tmp_path) == [
        "suites/inspect_tasks/probe.py:2: labreplay.suites.conditions.agents"
    ]


def test_every_facade_name_is_declared_typed_and_importable() -> None:
    """A lazy facade module lists each name three times (TYPE_CHECKING import, `_SOURCES`,
    `__all__`); they agree, and each name resolves to its core module's object."""
    import importlib

    facades = ["labreplay.sdk"] + [
        f"labreplay.sdk.{p.stem}" for p in sorted((SRC / "sdk").glob("[!_]*.py"))
    ]
    assert len(facades) >= 9
    for name in facades:
        module = importlib.import_module(name)
        exported = list(module.__all__)
        assert len(exported) == len(set(exported)), name
        sources: dict[str, tuple[str, ...]] = getattr(module, "_SOURCES", {})
        path = Path(module.__file__ or "")
        typed: dict[str, set[str]] = {}
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
                for stmt in node.body:
                    assert isinstance(stmt, ast.ImportFrom) and stmt.module, name
                    if stmt.module.split(".")[0] != "labreplay":
                        continue  # a typing-only import (`_typeshed`), not a re-exported name
                    typed.setdefault(stmt.module, set()).update(a.name for a in stmt.names)
        assert typed == {k: set(v) for k, v in sources.items()}, name
        lazy = {n for names in sources.values() for n in names}
        assert lazy <= set(exported), name
        for attr in exported:
            value = getattr(module, attr)
            for source, names in sources.items():
                if attr in names:
                    assert value is getattr(importlib.import_module(source), attr)
        assert set(exported) <= set(dir(module)), name


def test_importing_a_facade_imports_no_core_module() -> None:
    """The lazy facade modules import their names' core modules on first use only."""
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "import labreplay.sdk\n"
        "before = set(sys.modules)\n"
        "import labreplay.sdk.agents, labreplay.sdk.engine, labreplay.sdk.data\n"
        "import labreplay.sdk.scoring, labreplay.sdk.harness, labreplay.sdk.testing\n"
        "print(sorted(set(sys.modules) - before))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == str(
        [
            "labreplay.sdk.agents",
            "labreplay.sdk.data",
            "labreplay.sdk.engine",
            "labreplay.sdk.harness",
            "labreplay.sdk.scoring",
            "labreplay.sdk.testing",
        ]
    )


def test_cli_and_demo_never_import_a_suite() -> None:
    outer = [SRC / "demo.py", *sorted((SRC / "cli").rglob("*.py"))]
    assert len(outer) > 5
    assert [hit for p in outer for hit in _suite_imports(p)] == []


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


def test_the_readme_fourth_suite_reaches_the_core_through_the_sdk_only() -> None:
    # examples/fourth_suite/meltsuite: scanned as if it were `suites/meltsuite`
    example = SRC.parents[1] / "examples" / "fourth_suite"
    files = sorted((example / "meltsuite").glob("*.py"))
    assert len(files) >= 4
    assert sum("from labreplay" in p.read_text(encoding="utf-8") for p in files) >= 3
    assert [hit for p in files for hit in _non_sdk_imports(p, example)] == []
