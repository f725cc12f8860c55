"""No import cycle between files of `src/labreplay`: imports inside functions count; imports
under `if TYPE_CHECKING:` (annotations only) do not, and `from PKG import SUBMODULE` is an
import of the submodule."""

from __future__ import annotations

import ast
from pathlib import Path

import labreplay

SRC = Path(labreplay.__file__).resolve().parent.parent


def _modules() -> dict[str, Path]:
    found = {}
    for path in (SRC / "labreplay").rglob("*.py"):
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    deps: set[str] = set()

    def targets(node: ast.Import | ast.ImportFrom) -> list[str]:
        if isinstance(node, ast.Import):
            return [a.name for a in node.names]
        base = node.module or ""
        if node.level:
            package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
            package = package[: len(package) - node.level + 1]
            base = ".".join([*package, base] if base else package)
        subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules]
        return subs + ([base] if len(subs) < len(node.names) else [])

    class Visitor(ast.NodeVisitor):
        def visit_If(self, node: ast.If) -> None:
            if ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
                for stmt in node.orelse:
                    self.visit(stmt)
                return
            self.generic_visit(node)

        def visit_Import(self, node: ast.Import) -> None:
            deps.update(t for t in targets(node) if t in modules)

        def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
            deps.update(t for t in targets(node) if t in modules)

    Visitor().visit(ast.parse(path.read_text(encoding="utf-8")))
    return deps - {name}


def test_no_import_cycle_between_files() -> None:
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    assert len(graph) > 200
    # Tarjan's strongly connected components; any with two or more files is a cycle
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    assert cycles == []
