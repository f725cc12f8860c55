"""JSON read with limits and written strictly.

Reading: a file or stored row is parsed with a size limit and a nesting-depth limit (a deeply
nested line made the decoder raise RecursionError, a traceback), and `NaN`/`Infinity` are
refused (Python's decoder accepts them, and a NaN score then poisons every mean and floor).
Writing: `dumps_strict` never writes `NaN`/`Infinity`: every `--json` output is strict JSON
that any other tool can read; a non-finite float becomes `null`, the JSON for "no value".
"""

from __future__ import annotations

import json
import math
from typing import Any, NoReturn

from labreplay.errors import LabreplayError

MAX_DEPTH = 64  # far deeper than any record, spec or event we write
MAX_BYTES = 256 * 1024 * 1024  # one JSON text (a spec, a line, a stored row)


class JsonLimitError(LabreplayError, ValueError):
    """A JSON text that is too large, too deep, not finite, or not JSON; exit 2."""


def _refuse_constant(name: str) -> NoReturn:
    raise JsonLimitError(f"{name} is not a JSON number (only finite numbers are accepted)")


def _depth(value: object) -> int:
    """Nesting depth, walked without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, depth)
            if depth > MAX_DEPTH:
                return depth
            children = node.values() if isinstance(node, dict) else node
            stack.extend((child, depth + 1) for child in children)
    return deepest


def loads_strict(
    text: str | bytes, *, max_depth: int = MAX_DEPTH, max_bytes: int = MAX_BYTES
) -> Any:
    """`json.loads` that refuses NaN/Infinity, texts over `max_bytes` and nesting deeper than
    `max_depth`, each as a JsonLimitError (a ValueError and a LabreplayError) saying which."""
    size = len(text)
    if size > max_bytes:
        raise JsonLimitError(f"JSON text of {size} bytes is over the limit of {max_bytes}")
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except JsonLimitError:
        raise
    except RecursionError as exc:
        raise JsonLimitError(f"JSON nested deeper than {max_depth} levels") from exc
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        raise JsonLimitError(f"invalid JSON at {where}: {exc.msg}") from exc
    except UnicodeDecodeError as exc:
        raise JsonLimitError(f"JSON text is not valid UTF-8 (byte {exc.start})") from exc
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise JsonLimitError(f"invalid JSON: {' '.join(str(exc).split())}") from exc
    if _depth(value) > max_depth:
        raise JsonLimitError(f"JSON nested deeper than {max_depth} levels")
    return value


def finite_or_none(value: object) -> object:
    """`value` with every non-finite float (NaN, +/-inf) replaced by None, recursively."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite_or_none(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite_or_none(v) for v in value]
    return value


def dumps_strict(
    value: object,
    *,
    indent: int | None = None,
    sort_keys: bool = False,
    ensure_ascii: bool = True,
    separators: tuple[str, str] | None = None,
) -> str:
    """`json.dumps` that never writes NaN/Infinity (non-finite floats become null)."""

    def dump(v: object) -> str:
        return json.dumps(
            v,
            allow_nan=False,
            indent=indent,
            sort_keys=sort_keys,
            ensure_ascii=ensure_ascii,
            separators=separators,
        )

    try:
        return dump(value)
    except ValueError:
        return dump(finite_or_none(value))


__all__ = [
    "MAX_BYTES",
    "MAX_DEPTH",
    "JsonLimitError",
    "dumps_strict",
    "finite_or_none",
    "loads_strict",
]
