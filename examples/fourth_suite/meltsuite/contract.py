"""The meltsuite agent contract, its observation type and its two reference agents."""

from __future__ import annotations

from typing import Protocol, TypedDict, runtime_checkable

# Melting points (K) of the elements of groups 1, 2, 13 and 14, periods 2-6, as tabulated in
# the CRC Handbook of Chemistry and Physics (rounded as there). Real values, few rows: the
# suite is an example of the plug-in interface, not a benchmark.
ELEMENTS: tuple[tuple[str, int, int, int, float], ...] = (
    # symbol, Z, group, period, melting point (K)
    ("Li", 3, 1, 2, 453.65),
    ("Na", 11, 1, 3, 370.94),
    ("K", 19, 1, 4, 336.7),
    ("Rb", 37, 1, 5, 312.46),
    ("Cs", 55, 1, 6, 301.6),
    ("Be", 4, 2, 2, 1560.0),
    ("Mg", 12, 2, 3, 923.0),
    ("Ca", 20, 2, 4, 1115.0),
    ("Sr", 38, 2, 5, 1050.0),
    ("Ba", 56, 2, 6, 1000.0),
    ("Al", 13, 13, 3, 933.47),
    ("Ga", 31, 13, 4, 302.91),
    ("In", 49, 13, 5, 429.75),
    ("Tl", 81, 13, 6, 577.0),
    ("Si", 14, 14, 3, 1687.0),
    ("Ge", 32, 14, 4, 1211.4),
    ("Sn", 50, 14, 5, 505.08),
    ("Pb", 82, 14, 6, 600.61),
)


class Element(TypedDict):
    """What an agent sees of an element before its result."""

    id: str
    Z: int
    group: int
    period: int


class Recorded(TypedDict):
    """A context element with its recorded melting point."""

    id: str
    Z: int
    group: int
    period: int
    melting_point_k: float


class MeltObservation(TypedDict):
    """One call's input: the element to forecast and the recorded context."""

    query: Element
    context: list[Recorded]


@runtime_checkable
class MeltPredictor(Protocol):
    """A meltsuite agent: `predict` returns the melting point (K) it forecasts. Anything
    else (an exception, NaN, a string, a negative number) is an invalid prediction: recorded,
    scored as the context mean, and counted by the failed-run rule."""

    name: str

    def params(self) -> dict[str, object]: ...

    def reset(self, seed: int) -> None: ...

    def predict(self, observation: MeltObservation) -> float: ...


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


class ContextMean:
    """Reference: the mean of the recorded context (uses no property of the element)."""

    name = "context-mean"

    def params(self) -> dict[str, object]:
        return {}

    def reset(self, seed: int) -> None:
        return None

    def predict(self, observation: MeltObservation) -> float:
        return _mean([row["melting_point_k"] for row in observation["context"]])


class GroupMean:
    """Reference: the mean of the context elements of the same group (the context mean when
    the group has none)."""

    name = "group-mean"

    def params(self) -> dict[str, object]:
        return {}

    def reset(self, seed: int) -> None:
        return None

    def predict(self, observation: MeltObservation) -> float:
        group = observation["query"]["group"]
        same = [r["melting_point_k"] for r in observation["context"] if r["group"] == group]
        return _mean(same or [r["melting_point_k"] for r in observation["context"]])


REFERENCE_AGENTS: dict[str, type[ContextMean] | type[GroupMean]] = {
    "context-mean": ContextMean,
    "group-mean": GroupMean,
}
CONTRACT_REF = "meltsuite.contract:MeltPredictor"
REFERENCE_REF = "meltsuite.contract:REFERENCE_AGENTS"
