"""The executor interface: keyed, idempotent work units whose results come back to the driver.

A work unit is a picklable top-level function plus arguments, under a key that names the work
(not the attempt): submitting the same key twice computes it once, and a driver restarted after
a crash recognises finished work by its key in the store. Executors never touch the store; the
driver writes every result (SQLite has a single writer).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from labreplay.errors import LabreplayError


@dataclass(frozen=True)
class WorkUnit:
    key: str
    function: Callable[..., Any]
    args: tuple[Any, ...] = ()


@runtime_checkable
class Executor(Protocol):
    name: str

    def run(self, units: Sequence[WorkUnit]) -> Iterator[tuple[str, Any]]:
        """Compute every unit; yield (key, result) in the order the units were given."""
        ...

    def close(self) -> None: ...


def check_unique(units: Sequence[WorkUnit]) -> None:
    seen: set[str] = set()
    for unit in units:
        if unit.key in seen:
            raise LabreplayError(f"work unit key {unit.key!r} given twice in one batch")
        seen.add(unit.key)


class InProcessExecutor:
    """Runs each unit in the calling process, one after another (the default)."""

    name = "in-process"

    def run(self, units: Sequence[WorkUnit]) -> Iterator[tuple[str, Any]]:
        check_unique(units)
        for unit in units:
            yield unit.key, unit.function(*unit.args)

    def close(self) -> None:
        pass

    def __enter__(self) -> InProcessExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
