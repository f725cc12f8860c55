"""Rewrite the suites' imports of core modules to go through the SDK facade.

A suite reaches the core only through `labreplay.sdk*` and `labreplay.errors` (the layering
test in tests/foundation/test_suite_registry.py). This script finds every other import of a
core module in `src/labreplay/suites/**/*.py` (top level or inside a function, one line or
several) and rewrites its text in place, keeping the indentation:

    from labreplay.store.sqlite import Store, run_key as key
 -> from labreplay.sdk.engine import Store, run_key as key

The name -> facade mapping is read from the facade's own source (`src/labreplay/sdk/*.py`: each
`from <core module> import <name>` whose name is in the module's `__all__`, including the
`if TYPE_CHECKING:` imports of the lazy modules); a name imported from a package that
re-exports it (`from labreplay.records import Record`) is matched by identity. An import the
facade does not cover is listed and the script exits 1 before writing anything: add the name
to the right facade module (and its `_SOURCES` and `__all__`) and run it again.

    python scripts/sdk_imports.py           # rewrite, then ruff (import sorting) + ruff format
    python scripts/sdk_imports.py --check   # list the remaining offending imports, exit 1 if any

Run it from any directory with the project's Python; it is idempotent.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
SUITES = SRC / "labreplay" / "suites"
SDK = SRC / "labreplay" / "sdk"


def allowed(module: str) -> bool:
    """Modules a suite may import: the SDK, the errors and the suites themselves."""
    return (
        module in ("labreplay.sdk", "labreplay.errors", "labreplay.suites")
        or module.startswith(("labreplay.sdk.", "labreplay.suites."))
        or module.split(".")[0] != "labreplay"
    )


def _exported(tree: ast.Module) -> set[str]:
    """The names a facade module's literal `__all__` lists."""
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            return set(ast.literal_eval(value))
    return set()


def facade_modules() -> list[str]:
    """`labreplay.sdk` first, then its public submodules in name order."""
    subs = sorted(p.stem for p in SDK.glob("*.py") if not p.stem.startswith("_"))
    return ["labreplay.sdk", *(f"labreplay.sdk.{s}" for s in subs)]


def facade_path(module: str) -> Path:
    return SDK / "__init__.py" if module == "labreplay.sdk" else SDK / f"{module.split('.')[-1]}.py"


def facade_map() -> dict[tuple[str, str], tuple[str, str]]:
    """(core module, name) -> (facade module, exported name), from the facade's source."""
    found: dict[tuple[str, str], tuple[str, str]] = {}
    for facade in facade_modules():
        tree = ast.parse(facade_path(facade).read_text(encoding="utf-8"))
        exported = _exported(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module):
                continue
            for alias in node.names:
                name = alias.asname or alias.name
                if name in exported:
                    found.setdefault((node.module, alias.name), (facade, name))
    return found


def by_identity(module: str, name: str) -> tuple[str, str] | None:
    """The facade exporting the very object `module.name` (for re-exporting packages)."""
    if str(SRC) not in sys.path:
        sys.path.insert(0, str(SRC))
    try:
        value = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None
    if isinstance(value, type(sys)):
        return None  # a submodule: no facade re-exports modules
    for facade in facade_modules():
        mod = importlib.import_module(facade)
        if name in getattr(mod, "__all__", ()) and getattr(mod, name) is value:
            return facade, name
    return None


@dataclass
class Offence:
    path: Path
    node: ast.Import | ast.ImportFrom

    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.node.lineno}"

    def text(self) -> str:
        return ast.unparse(self.node)


def offences(path: Path) -> Iterator[Offence]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            if any(not allowed(a.name) for a in node.names):
                yield Offence(path, node)
        elif (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and node.module
            and not allowed(node.module)
        ):
            yield Offence(path, node)


def replacement(
    off: Offence, table: dict[tuple[str, str], tuple[str, str]], problems: list[str]
) -> list[str] | None:
    """The statements replacing one offending import (None, with a problem, when none can)."""
    node = off.node
    if isinstance(node, ast.Import):
        problems.append(f"{off.where()}: `{off.text()}` imports a module; rewrite it by hand")
        return None
    assert node.module is not None
    groups: dict[str, list[str]] = {}
    missing = []
    for alias in node.names:
        if alias.name == "*":
            missing.append("*")
            continue
        target = table.get((node.module, alias.name)) or by_identity(node.module, alias.name)
        if target is None:
            missing.append(alias.name)
            continue
        facade, exported = target
        local = alias.asname or alias.name
        groups.setdefault(facade, []).append(
            exported if local == exported else f"{exported} as {local}"
        )
    if missing:
        problems.append(
            f"{off.where()}: not exported by the SDK facade: "
            + ", ".join(f"{node.module}.{n}" for n in missing)
        )
        return None
    return [f"from {facade} import {', '.join(names)}" for facade, names in groups.items()]


Span = tuple[int, int, bytes]


def plan(path: Path, edits: list[tuple[Offence, list[str]]], problems: list[str]) -> list[Span]:
    """Where the new statements go in the file's bytes (begin, end, text)."""
    data = path.read_bytes()
    lines = data.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    spans = []
    for off, new in edits:
        node = off.node
        assert node.end_lineno is not None and node.end_col_offset is not None
        begin = starts[node.lineno - 1] + node.col_offset
        end = starts[node.end_lineno - 1] + node.end_col_offset
        if b"#" in data[begin:end]:
            problems.append(f"{off.where()}: a comment inside the import; rewrite it by hand")
            continue
        lead = lines[node.lineno - 1][: node.col_offset]
        sep = "\n" + lead.decode() if lead.strip() == b"" else "; "
        spans.append((begin, end, sep.join(new).encode()))
    return spans


def splice(path: Path, spans: list[Span]) -> None:
    data = path.read_bytes()
    for begin, end, text in sorted(spans, reverse=True):
        data = data[:begin] + text + data[end:]
    path.write_bytes(data)


def tidy(paths: list[Path]) -> None:
    """Sort the imports of the rewritten files and format them, as `make lint` expects."""
    files = [str(p) for p in paths]
    ruff = [sys.executable, "-m", "ruff"]
    subprocess.run([*ruff, "check", "--fix", "--select", "I", "--quiet", *files], check=False)
    subprocess.run([*ruff, "format", "--quiet", *files], check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="list offending imports, exit 1")
    parser.add_argument("--no-format", action="store_true", help="skip ruff on touched files")
    parser.add_argument("paths", nargs="*", type=Path, help="files (default: every suite file)")
    args = parser.parse_args(argv)
    paths = [p.resolve() for p in args.paths] or sorted(SUITES.rglob("*.py"))
    found = [off for p in paths for off in offences(p)]
    if args.check:
        for off in found:
            print(f"{off.where()}: {off.text()}")
        print(f"{len(found)} suite import(s) of core modules outside the SDK", file=sys.stderr)
        return 1 if found else 0
    table = facade_map()
    problems: list[str] = []
    edits: dict[Path, list[tuple[Offence, list[str]]]] = {}
    for off in found:
        new = replacement(off, table, problems)
        if new is not None:
            edits.setdefault(off.path, []).append((off, new))
    spans = {p: plan(p, e, problems) for p, e in edits.items()}
    if problems:
        print("\n".join(problems), file=sys.stderr)
        print(
            f"{len(problems)} import(s) the script cannot rewrite; nothing was written. Export "
            "missing names from a module of src/labreplay/sdk/ (its TYPE_CHECKING imports, "
            "_SOURCES and __all__), fix the others by hand, and run again.",
            file=sys.stderr,
        )
        return 1
    for path, todo in spans.items():
        splice(path, todo)
    if spans and not args.no_format:
        tidy(list(spans))
    count = sum(len(todo) for todo in spans.values())
    print(f"rewrote {count} import(s) in {len(spans)} file(s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
