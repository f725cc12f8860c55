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
from typing import Any

from labreplay.sdk import canonical_json
from labreplay.sdk.agents import extract_json_object


@dataclass(frozen=True)
class PanelWire:
    ids: tuple[str, ...]
    columns: tuple[tuple[str, str | None], ...]  # (field, sub-field of a weights object)
    descriptions: tuple[str, ...]

    @property
    def schema(self) -> dict[str, Any]:
        n, width = len(self.ids), len(self.columns)
        number = {"type": "number", "minimum": 0, "maximum": 1}
        row = {"type": "array", "items": number, "minItems": width, "maxItems": width}
        rows = {"type": "array", "items": row, "minItems": n, "maxItems": n}
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

    def decode(self, value: Any) -> dict[str, Any]:
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

    def salvage(self, text: str | None) -> dict[str, Any] | None:
        """The valid rows of a reply that broke the schema (e.g. one number above 1): each bad
        row takes the runtime's fallback, as a bad entry in the environment's format does,
        instead of the whole panel. None when the text holds no forecast rows at all."""
        value = extract_json_object(text) if text else None
        decoded = self.decode(value) if value is not None else None
        return decoded if decoded and decoded["forecasts"] else None

    def _entry(self, eid: str, row: Any) -> dict[str, Any] | None:
        if not isinstance(row, list) or len(row) != len(self.columns):
            return None
        if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in row):
            return None
        if not all(0 <= x <= 1 for x in row):
            return None  # out of range: this query takes the runtime's fallback
        entry: dict[str, Any] = {"experiment_id": eid}
        for (field, sub), x in zip(self.columns, row, strict=True):
            if sub is None:
                entry[field] = x
            else:
                entry.setdefault(field, {})[sub] = x
        for field, sub in self.columns:
            if sub is not None and isinstance(entry[field], dict):
                weights = entry[field]
                total = float(sum(weights.values()))
                if total <= 0:
                    return None
                entry[field] = {k: float(w) / total for k, w in weights.items()}
        return entry


def _is_probability(schema: Any) -> bool:
    return (
        isinstance(schema, Mapping)
        and schema.get("type") == "number"
        and schema.get("minimum") == 0
        and schema.get("maximum") == 1
    )


def panel_wire(response_schema: Any) -> PanelWire | None:
    """The row format for this panel schema, or None when its shape is not recognised."""
    try:
        item = response_schema["properties"]["forecasts"]["items"]
        props = item["properties"]
        ids = tuple(str(i) for i in props["experiment_id"]["enum"])
    except (KeyError, TypeError):
        return None
    columns: list[tuple[str, str | None]] = []
    descriptions: list[str] = []
    for field in item.get("required", list(props)):
        if field == "experiment_id":
            continue
        spec = props.get(field)
        if _is_probability(spec):
            columns.append((field, None))
            descriptions.append(f"{field} = {spec.get('description', 'a probability')}")
        elif isinstance(spec, Mapping) and spec.get("type") == "object":
            subs = spec.get("required") or list(spec.get("properties", {}))
            if not subs or not all(_is_probability(spec["properties"].get(s)) for s in subs):
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
