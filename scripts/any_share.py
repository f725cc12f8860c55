"""Print the share of function signatures in src/labreplay that are loosely typed.

A signature counts when any parameter annotation or the return annotation mentions `Any`
(`dict[str, Any]` included) or an alias of it (a module-level `NAME = Any`), or is a bare
`object` or a `Mapping`/`dict` of `str` to `object`: renaming `Any` to `object` is no typing.
`make lint` runs this with `--max`, so the share cannot grow; the engine issue's target is 20%.

    python scripts/any_share.py [--max PERCENT] [--top N]
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "src" / "labreplay"


LOOSE_MAPPINGS = ("Mapping", "dict", "MutableMapping")


def _any_aliases(tree: ast.Module) -> set[str]:
    """Module-level names bound to `Any` (`JsonAny = Any`, `X: TypeAlias = Any`)."""
    found = {"Any"}
    for node in tree.body:
        value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if value is not None and ast.unparse(value) in ("Any", "typing.Any"):
            found |= {t.id for t in targets if isinstance(t, ast.Name)}
    return found


def _loose(node: ast.expr | None, aliases: set[str]) -> bool:
    if node is None:
        return False
    text = ast.unparse(node).replace(" ", "").strip("'\"")
    if text == "object" or text.removesuffix("|None") == "object":
        return True
    for mapping in LOOSE_MAPPINGS:
        if text.split("|")[0] in (
            f"{mapping}[str,object]",
            f"collections.abc.{mapping}[str,object]",
        ):
            return True
    return any(
        (isinstance(n, ast.Name) and n.id in aliases)
        or (isinstance(n, ast.Attribute) and n.attr == "Any")
        or (isinstance(n, ast.Constant) and isinstance(n.value, str) and "Any" in n.value)
        for n in ast.walk(node)
    )


def signatures(root: Path = ROOT) -> list[tuple[str, bool]]:
    """(module:function, loosely typed) for every function and method under `root`."""
    found: list[tuple[str, bool]] = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases = _any_aliases(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            args = node.args
            params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
            params += [a for a in (args.vararg, args.kwarg) if a is not None]
            uses = _loose(node.returns, aliases) or any(
                _loose(a.annotation, aliases) for a in params
            )
            found.append((f"{path.relative_to(root.parent)}:{node.name}", uses))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max", type=float, default=None, help="fail above this percent")
    parser.add_argument("--top", type=int, default=0, help="list the modules with most")
    args = parser.parse_args(argv)
    found = signatures()
    with_any = sum(1 for _, uses in found if uses)
    share = 100.0 * with_any / len(found) if found else 0.0
    print(
        f"{with_any} of {len(found)} function signatures take or return Any, an alias of it, "
        f"a bare object or a str-to-object mapping: {share:.1f}%"
    )
    if args.top:
        per: dict[str, int] = {}
        for name, uses in found:
            per[name.split(":")[0]] = per.get(name.split(":")[0], 0) + int(uses)
        for module, n in sorted(per.items(), key=lambda kv: -kv[1])[: args.top]:
            print(f"  {n:4d}  {module}")
    if args.max is not None and share > args.max:
        print(f"the share {share:.1f}% is above --max {args.max}%", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
