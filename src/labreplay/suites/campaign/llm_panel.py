"""The panel forecast as the LLM agent asks for it: one row of numbers per experiment.

The environment's panel schema asks for one object per held-out query,
`{"experiment_id": ..., "p_valid": ..., "categories": {"completely_reacted": ..., ...}}`:
about 70 tokens per query in a small model's tokeniser, so a 32-query forecast needs more than
2,000 completion tokens and its schema repeats every id. The agent asks instead for
`{"forecasts": [[p_valid, completely_reacted, transformed, partially_reacted, unreacted], ...]}`
with exactly one row per query, in the panel's order (about 25 tokens per row), and turns the
rows back into the environment's objects before the runtime sees them. Declared conversion: the
category numbers are relative weights, rescaled to sum to 1 (a row whose weights sum to 0 is
dropped, so that query takes the runtime's declared fallback); p_valid is taken as given. A
reply that breaks the row schema keeps its valid rows (`PanelWire.salvage`): only the rows that
are not numbers in [0, 1] fall back, as a bad entry in the environment's own format does.

`panel_wire` recognises the environment's schema shape (an array of objects with an
`experiment_id` enum, number fields in [0, 1] and objects of such numbers); for any other shape
it returns None and the agent sends the environment's own schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeGuard

from labreplay.sdk import canonical_json
from labreplay.sdk.agents import extract_json_object
from labreplay.sdk.events import JsonObject, JsonValue
from labreplay.suites.campaign.actions import ForecastReply, PanelEntry
from labreplay.suites.campaign.json_values import json_list, json_object


@dataclass(frozen=True)
class PanelWire:
    ids: tuple[str, ...]
    columns: tuple[tuple[str, str | None], ...]  # (field, sub-field of a weights object)
    descriptions: tuple[str, ...]

    @property
    def schema(self) -> JsonObject:
        n, width = len(self.ids), len(self.columns)
        number: JsonObject = {"type": "number", "minimum": 0, "maximum": 1}
        row: JsonObject = {"type": "array", "items": number, "minItems": width, "maxItems": width}
        rows: JsonObject = {"type": "array", "items": row, "minItems": n, "maxItems": n}
        return {
            "type": "object",
            "properties": {"forecasts": rows},
            "required": ["forecasts"],
            "additionalProperties": False,
        }

    def instructions(self) -> str:
        names = [f if sub is None else sub for f, sub in self.columns]
        return (
            f'Reply with {{"forecasts": [[{", ".join(names)}], ...]}}: exactly '
            f"{len(self.ids)} rows, one per experiment in the order listed. "
            + "; ".join(self.descriptions)
            + ". Valid under this JSON Schema:"
        )

    def decode(self, value: JsonValue) -> ForecastReply:
        """The environment's forecast object for the model's rows (see module docstring)."""
        rows = value.get("forecasts") if isinstance(value, Mapping) else None
        if not isinstance(rows, list):
            return {"forecasts": [], "error": "reply has no 'forecasts' list of rows"}
        out = []
        for eid, row in zip(self.ids, rows, strict=False):
            entry = self._entry(eid, row)
            if entry is not None:
                out.append(entry)
        return {"forecasts": out}

    def salvage(self, text: str | None) -> ForecastReply | None:
        """The valid rows of a reply that broke the schema (e.g. one number above 1): each bad
        row takes the runtime's fallback, as a bad entry in the environment's format does,
        instead of the whole panel. None when the text holds no forecast rows at all."""
        value = extract_json_object(text) if text else None
        decoded = self.decode(value) if value is not None else None
        return decoded if decoded and decoded["forecasts"] else None

    def _entry(self, eid: str, row: JsonValue) -> PanelEntry | None:
        if not isinstance(row, list) or len(row) != len(self.columns):
            return None
        numbers = [x for x in row if isinstance(x, int | float) and not isinstance(x, bool)]
        if len(numbers) != len(row):
            return None
        if not all(0 <= x <= 1 for x in numbers):
            return None  # out of range: this query takes the runtime's fallback
        entry: PanelEntry = {"experiment_id": eid}
        weights: dict[str, dict[str, int | float]] = {}  # the weights objects, in `entry`
        for (field, sub), x in zip(self.columns, numbers, strict=True):
            if sub is None:
                entry[field] = x
            else:
                if field not in weights:
                    entry[field] = weights[field] = {}
                weights[field][sub] = x
        for field, sub in self.columns:
            if sub is not None:
                total = float(sum(weights[field].values()))
                if total <= 0:
                    return None
                weights[field] = {k: float(w) / total for k, w in weights[field].items()}
                entry[field] = weights[field]
        return entry


def _is_probability(schema: object) -> TypeGuard[Mapping[str, object]]:
    return (
        isinstance(schema, Mapping)
        and schema.get("type") == "number"
        and schema.get("minimum") == 0
        and schema.get("maximum") == 1
    )


def panel_wire(response_schema: object) -> PanelWire | None:
    """The row format for this panel schema, or None when its shape is not recognised."""
    try:
        properties = json_object(json_object(response_schema)["properties"])
        item = json_object(json_object(properties["forecasts"])["items"])
        props = json_object(item["properties"])
        ids = tuple(str(i) for i in json_list(json_object(props["experiment_id"])["enum"]))
    except (KeyError, TypeError):
        return None
    columns: list[tuple[str, str | None]] = []
    descriptions: list[str] = []
    for field in map(str, json_list(item.get("required", list(props)))):
        if field == "experiment_id":
            continue
        spec = props.get(field)
        if _is_probability(spec):
            columns.append((field, None))
            descriptions.append(f"{field} = {spec.get('description', 'a probability')}")
        elif isinstance(spec, Mapping) and spec.get("type") == "object":
            subs = json_list(spec.get("required") or list(json_object(spec.get("properties", {}))))
            sub_props = json_object(spec["properties"]) if subs else {}
            if not subs or not all(_is_probability(sub_props.get(str(s))) for s in subs):
                return None
            columns += [(field, str(s)) for s in subs]
            what = spec.get("description", field)
            descriptions.append(
                f"{', '.join(map(str, subs))} = the {field}: {what} (relative weights, "
                "rescaled to sum to 1)"
            )
        else:
            return None
    if not columns or set(props) - {"experiment_id", *(f for f, _ in columns)}:
        return None
    return PanelWire(ids, tuple(columns), tuple(descriptions))


def wire_schema_json(wire: PanelWire) -> str:
    return canonical_json(wire.schema)
