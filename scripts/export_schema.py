"""Build the JSON Schema of `labreplay export` from its TypedDicts, or check the published one.

The schema (JSON Schema 2020-12) is written to src/labreplay/store/export_schema.json:
- `$defs.table_<table>`: one exported row of each table (`labreplay.store.export_rows.ROWS`),
  also the schema's `properties.<table>`;
- `$defs.payload_<kind>`: the payload of each event kind, from every registered suite's
  `events.PAYLOADS` (the module `events` beside the suite class) and the shared `header`;
  an `events` row's `payload` text is JSON holding the payload of its `kind`
  (`contentMediaType`/`contentSchema`, chosen by `kind` with if/then).

    python scripts/export_schema.py          # rewrite the published schema
    python scripts/export_schema.py --check  # exit 1 if it is not what the types give
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import types
import typing
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))  # the types of this checkout, whatever is installed
OUT = ROOT / "src" / "labreplay" / "store" / "export_schema.json"
JsonSchema = dict[str, object]


def type_schema(hint: object) -> JsonSchema:
    """The JSON Schema of one annotation (the subset payload and row types use)."""
    if hint is typing.Any or _is_json_value(hint):
        return {}
    if hint is type(None):
        return {"type": "null"}
    simple = {bool: "boolean", int: "integer", float: "number", str: "string"}
    if isinstance(hint, type) and hint in simple:
        return {"type": simple[hint]}
    if typing.is_typeddict(hint):
        return typed_dict_schema(hint)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Annotated, typing.NotRequired, typing.Required):
        return type_schema(args[0])
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [type_schema(a) for a in args]}
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin is list:
        return {"type": "array", "items": type_schema(args[0])}
    if origin in (dict, Mapping):
        return {"type": "object", "additionalProperties": type_schema(args[1])}
    raise TypeError(f"no JSON Schema for annotation {hint!r}")


def _is_json_value(hint: object) -> bool:
    """`JsonValue` (any JSON value), however `get_type_hints` rebuilt the recursive alias."""
    if typing.get_origin(hint) not in (typing.Union, types.UnionType):
        return False
    members = {typing.get_origin(a) or a for a in typing.get_args(hint)}
    return members == {str, int, float, bool, type(None), list, dict}


def _hints(cls: type) -> dict[str, object]:
    from labreplay.runtime.event_types import JsonObject, JsonValue

    # the recursive alias's forward references resolve here, whatever the defining module
    names = {"JsonValue": JsonValue, "JsonObject": JsonObject}
    return typing.get_type_hints(cls, localns=names, include_extras=True)


def _required(cls: type, hint: object) -> bool:
    # from the hints, not `__required_keys__`: Python 3.11 misses a `NotRequired` written as a
    # string annotation (`from __future__ import annotations`)
    origin = typing.get_origin(hint)
    total = bool(getattr(cls, "__total__", True))
    return origin is typing.Required or (total and origin is not typing.NotRequired)


def typed_dict_schema(cls: type) -> JsonSchema:
    hints = _hints(cls)
    return {
        "type": "object",
        "title": cls.__name__,
        "properties": {name: type_schema(hint) for name, hint in hints.items()},
        "required": sorted(name for name, hint in hints.items() if _required(cls, hint)),
        "additionalProperties": False,
    }


def event_payloads() -> dict[str, type]:
    """kind -> payload type over every registered suite (one kind, one type: a clash fails)."""
    from labreplay.runtime.event_types import COMMON_PAYLOADS
    from labreplay.suite import get_suite, list_suites

    found: dict[str, type] = dict(COMMON_PAYLOADS)
    for name in list_suites():
        package = type(get_suite(name)).__module__.rsplit(".", 1)[0]
        try:
            module = importlib.import_module(f"{package}.events")
        except ModuleNotFoundError:
            continue  # a suite that declares no event types: its payloads stay unchecked
        for kind, payload in module.PAYLOADS.items():
            if found.setdefault(kind, payload) is not payload:
                raise TypeError(f"event kind {kind!r} has two payload types ({name})")
    return dict(sorted(found.items()))


def _row_schema(table: str, row: type) -> JsonSchema:
    from labreplay.store.export_rows import JsonText

    schema = typed_dict_schema(row)
    properties = schema["properties"]
    assert isinstance(properties, dict)
    for column, hint in _hints(row).items():
        marks = [m for m in getattr(hint, "__metadata__", ()) if isinstance(m, JsonText)]
        if marks:
            properties[column] = {**properties[column], "contentMediaType": "application/json"}
    return schema


def build_schema() -> JsonSchema:
    from labreplay.store.export_rows import ROWS

    payloads = event_payloads()
    tables = {table: _row_schema(table, row) for table, row in ROWS.items()}
    events = tables["events"]
    events["allOf"] = [
        {
            "if": {"properties": {"kind": {"const": kind}}, "required": ["kind"]},
            "then": {
                "properties": {"payload": {"contentSchema": {"$ref": f"#/$defs/payload_{kind}"}}}
            },
        }
        for kind in payloads
    ]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://labreplay.invalid/schemas/export.json",
        "title": "labreplay export",
        "description": (
            "One exported row per table ($defs.table_<table>); the payload of each event kind "
            "($defs.payload_<kind>). Generated by scripts/export_schema.py from "
            "labreplay.store.export_rows and the suites' events modules."
        ),
        "type": "object",
        "properties": {table: {"$ref": f"#/$defs/table_{table}"} for table in tables},
        "$defs": {
            **{f"table_{table}": row for table, row in tables.items()},
            **{f"payload_{kind}": typed_dict_schema(cls) for kind, cls in payloads.items()},
        },
    }


def render() -> str:
    return json.dumps(build_schema(), indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the file is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
        if current != text:
            print(
                f"{OUT.relative_to(ROOT)} is stale: run scripts/export_schema.py", file=sys.stderr
            )
            return 1
        print(f"{OUT.relative_to(ROOT)} is current")
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
