"""The published JSON Schema of `labreplay export` (labreplay/store/export_schema.json) is
current with its TypedDicts, names exactly the store's columns, and refuses a payload that is
not of its kind (a real exported store is validated in tests/configsearch/test_export_rows.py,
which shares that folder's model cache)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from labreplay.store.export import TABLES
from labreplay.store.export_rows import ROWS
from labreplay.store.sqlite import Store

ROOT = Path(__file__).resolve().parents[2]


def export_schema() -> dict[str, Any]:
    """The published schema, itself checked to be a valid JSON Schema 2020-12."""
    text = resources.files("labreplay.store").joinpath("export_schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


def test_the_published_schema_is_generated_from_the_types() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "export_schema.py"), "--check"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_every_exported_table_has_a_row_type_naming_its_columns() -> None:
    assert set(ROWS) == set(TABLES)
    for table, row in ROWS.items():
        assert list(row.__annotations__) == Store.schema_columns(table), table


def validator(schema: dict[str, Any], pointer: str) -> jsonschema.Draft202012Validator:
    """A validator of one part of the schema, its `$ref`s resolved against the whole."""
    return jsonschema.Draft202012Validator({"$ref": pointer, "$defs": schema["$defs"]})


def test_the_schema_refuses_a_payload_that_is_not_of_its_kind() -> None:
    schema = export_schema()
    answer = validator(schema, "#/$defs/payload_answer")
    good = {
        "question_id": "q1",
        "raw": {"option": 1},
        "answer": {"option": 1},
        "result": {"valid": True, "uninformative": False, "score": 1.0, "option": 1},
    }
    answer.validate(good)
    for bad in (
        {k: v for k, v in good.items() if k != "result"},
        {**good, "question_id": 3},
        {**good, "extra": 1},
        {**good, "result": {"valid": "yes", "uninformative": False, "score": None}},
    ):
        with pytest.raises(jsonschema.ValidationError):
            answer.validate(bad)
    events = validator(schema, "#/$defs/table_events")
    row = {
        "run_id": "r",
        "seq": 0,
        "kind": "answer",
        "payload": "{}",
        "prev_hash": "0",
        "hash": "1",
    }
    events.validate(row)
    with pytest.raises(jsonschema.ValidationError):
        events.validate({**row, "seq": "0"})
