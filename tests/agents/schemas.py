"""The campaign-shaped action schema the LLM client tests send (a `oneOf` of two actions:
what a structured-output endpoint must receive unchanged)."""

from __future__ import annotations

from typing import Any

ACTION_SCHEMA: dict[str, Any] = {
    "oneOf": [
        {
            "type": "object",
            "properties": {
                "type": {"type": "string", "const": "select_experiment"},
                "experiment_id": {"type": "string", "enum": ["PG_0001", "PG_0002"]},
            },
            "required": ["type", "experiment_id"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {"type": {"type": "string", "const": "stop"}},
            "required": ["type"],
            "additionalProperties": False,
        },
    ]
}
