"""What an agent reads about a record card's table, written from the card: the rules, the
forecast instruction and the forecast fields' descriptions name the card's description,
descriptors, outcome categories with their meaning, evidence kinds with what each shows, and
claims. The built-in records keep their own text (`env.RULES`, the solid-state wording).

The card's part of a spec is `record.table` (`TableDeclaration`), shown to the agent as the
state's `table`; the texts are functions of the visible state, so the LLM prompt writes the
same rules as the observation without being handed them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypedDict, cast

from labreplay.suites.campaign.json_values import json_list, json_number, json_object


class TableDeclaration(TypedDict):
    """A card table's declaration in its spec (`record.table`) and state (`table`)."""

    description: str
    descriptors: list[str]  # what the reference learner reads (plus `groups` if declared)
    categories: dict[str, str]  # category -> its meaning under the card's outcome rule
    validity: bool  # the card declares a validity column (else no failure is recorded)
    evidence: dict[str, str]  # kind -> what it shows
    learner: str  # the reference learner, in words


BUILTIN_INSTRUCTION = (
    "Forecast every held-out query: P(physically valid and characterizable) and, if "
    "valid, a distribution over the reaction categories. This does not advance the "
    "campaign or spend budget."
)
BUILTIN_P_VALID = "P(physically valid and characterizable)"
BUILTIN_CATEGORIES = "distribution over reaction categories if valid (sums to 1)"


def table_of(holder: Mapping[str, object]) -> TableDeclaration | None:
    """A spec's `record.table` or a state's `table` (the compiler wrote it), if any."""
    table = holder.get("table")
    return cast(TableDeclaration, table) if isinstance(table, Mapping) else None


def _meanings(table: TableDeclaration) -> str:
    return "; ".join(f"{k}: {v}" for k, v in table["categories"].items())


def p_valid_text(table: TableDeclaration | None) -> str:
    if table is None:
        return BUILTIN_P_VALID
    if table["validity"] is True:
        return "P(the experiment is recorded valid; an invalid one has no category)"
    return "P(the experiment is valid): this table records no invalid experiments, so 1"


def categories_text(table: TableDeclaration | None) -> str:
    if table is None:
        return BUILTIN_CATEGORIES
    return f"distribution over the outcome categories if valid (sums to 1): {_meanings(table)}"


def instruction(table: TableDeclaration | None) -> str:
    if table is None:
        return BUILTIN_INSTRUCTION
    return (
        f"Forecast every held-out query: p_valid = {p_valid_text(table)}, and a distribution "
        f"over the outcome categories ({_meanings(table)}). This does not advance the campaign "
        "or spend budget."
    )


def table_rules(
    table: TableDeclaration, claims: Sequence[Mapping[str, object]], prices: Mapping[str, int]
) -> str:
    kinds = "; ".join(
        f"{k} (price {prices.get(k, 1)}): {shows}" for k, shows in table["evidence"].items()
    )
    stated = "; ".join(
        f"{c['name']} (supported by {', '.join(map(str, json_list(c['supported_by'])))})"
        for c in claims
    )
    description = str(table["description"]).rstrip(".")
    return (
        f"{description + '. ' if description else ''}Each experiment is one row of the lab's "
        f"table, described by {', '.join(table['descriptors'])}. Its "
        f"outcome is one category: {_meanings(table)}. "
        + ("" if table["validity"] is True else "Every recorded experiment is valid. ")
        + "One experiment is open at a time. select_experiment opens a candidate and reveals "
        "nothing. Submit a prior forecast for the open experiment before any of its evidence. "
        "Each evidence inspection reveals one recorded value of the open experiment (or the fact "
        f"that none is recorded) and must be followed by an updated forecast. Evidence: {kinds}. "
        "close_experiment ends work on it, with your probability that the evidence you inspected "
        f"supports each claim: {stated}. Experiments and evidence have separate budgets; stop "
        "ends the campaign."
    )


def rules_of(state: Mapping[str, object], builtin: str) -> str:
    """The rules an agent reads in this state: a card table's, else the built-in `builtin`."""
    table = table_of(state)
    if table is None:
        return builtin
    claims = state.get("claims")
    prices = json_object(state.get("evidence_prices", {}))
    return table_rules(
        table,
        [json_object(c) for c in json_list(claims)] if isinstance(claims, list) else [],
        {k: int(json_number(v)) for k, v in prices.items()},
    )
