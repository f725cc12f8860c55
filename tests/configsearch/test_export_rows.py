"""Every JSONL row `labreplay export` writes from a real store (campaign, conditions and
configsearch runs) validates against the published schema, each event's payload against the
schema of its kind. Here, not in tests/engine, to share this folder's model cache."""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema

import labreplay
from labreplay.store.export import TABLES, export_store
from labreplay.store.sqlite import Store

from .conftest import SMALL_SETTINGS, SMALL_SPACE


def export_schema() -> dict[str, Any]:
    text = resources.files("labreplay.store").joinpath("export_schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def validator(schema: dict[str, Any], pointer: str) -> jsonschema.Draft202012Validator:
    """A validator of one part of the schema, its `$ref`s resolved against the whole."""
    return jsonschema.Draft202012Validator({"$ref": pointer, "$defs": schema["$defs"]})


def _small_store(
    path: Path, campaign: list[Any], data_dir: Path, question_file: Path, cache: Path
) -> None:
    short = [s for s in campaign if s.body["assignment"]["id"] == "short-2"]
    labreplay.run("campaign", short, "random", path, controls=(), random_replicates=1)
    (conditions,) = labreplay.compile(
        "conditions", data_dir, datasets=["edbo_mitsunobu"], out=question_file
    )
    labreplay.run("conditions", [conditions], "ranker", path)
    options: dict[str, Any] = {"settings": SMALL_SETTINGS, "space": SMALL_SPACE}
    options["min_test_points"] = 1  # n*s <= 18 here
    specs = labreplay.compile("configsearch", data_dir, task="band_gap", **options)
    labreplay.run(
        "configsearch", specs, "random", path, data_dir=data_dir, cache_dir=cache, budget=3,
        init=2, **options,
    )  # fmt: skip


def test_an_exported_store_validates_against_the_schema(
    compiled_campaign: Callable[..., Any], data_dir: Path, cache_dir: Path, tmp_path: Path
) -> None:
    schema = export_schema()
    store = tmp_path / "small.sqlite"
    campaign = compiled_campaign(record="precursor-genome", seed=0)[1]
    _small_store(store, campaign, data_dir, tmp_path / "q.jsonl", cache_dir)
    with Store(store, readonly=True) as db:
        assert {r.suite for r in db.runs()} == {"campaign", "conditions", "configsearch"}
        export_store(db, tmp_path / "out", ("jsonl",))
    tables = {name: validator(schema, f"#/$defs/table_{name}") for name in TABLES}
    payloads = {
        key.removeprefix("payload_"): validator(schema, f"#/$defs/{key}")
        for key in schema["$defs"]
        if key.startswith("payload_")
    }
    kinds: set[str] = set()
    for name in TABLES:
        lines = (tmp_path / "out" / f"{name}.jsonl").read_text("utf-8").splitlines()
        for line in lines:
            row = json.loads(line)
            tables[name].validate(row)
            if name == "events":
                kinds.add(row["kind"])
                payloads[row["kind"]].validate(json.loads(row["payload"]))
    # what the runs recorded: a kind the schema did not know would have failed above
    assert {"reset", "action", "checkpoint", "end", "answer", "step", "evaluation"} <= kinds
