"""The executor interface: keyed, idempotent work units whose results come back to the driver.

A work unit is a picklable top-level function plus arguments, under a key that names the work
(not the attempt): submitting the same key twice computes it once, and a driver restarted after
a crash recognises finished work by its key in the store. Executors never touch the store; the
driver writes every result (SQLite has a single writer).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar, runtime_checkable

from labreplay._closing import Closing
from labreplay.errors import LabreplayError

R = TypeVar("R")  # what a unit's function returns


@dataclass(frozen=True)
class WorkUnit(Generic[R]):
    key: str
    function: Callable[..., R]
    args: tuple[object, ...] = ()


@runtime_checkable
class Executor(Protocol):
    name: str

    def run(self, units: Sequence[WorkUnit[R]]) -> Iterator[tuple[str, R]]:
        """Compute every unit; yield (key, result) in the order the units were given."""
        ...

    def close(self) -> None: ...


def check_unique(units: Sequence[WorkUnit[R]]) -> None:
    seen: set[str] = set()
    for unit in units:
        if unit.key in seen:
            raise LabreplayError(f"work unit key {unit.key!r} given twice in one batch")
        seen.add(unit.key)


class InProcessExecutor(Closing):
    """Runs each unit in the calling process, one after another (the default)."""

    name = "in-process"

    def run(self, units: Sequence[WorkUnit[R]]) -> Iterator[tuple[str, R]]:
        check_unique(units)
        for unit in units:
            yield unit.key, unit.function(*unit.args)

    def close(self) -> None:
        pass


class ThreadedExecutor(Closing):
    """Runs up to `max_workers` units at once in threads of the calling process.

    For work that waits on a model server (LLM campaigns): a leaderboard run is then limited by
    the server, not by the harness. Results still come back in submission order and only the
    driver writes the store. CPU-bound reference agents gain nothing here (use Dask)."""

    name = "threads"

    def __init__(self, max_workers: int) -> None:
        if max_workers < 1:
            raise LabreplayError(f"max_workers must be at least 1, got {max_workers}")
        from concurrent.futures import ThreadPoolExecutor

        self.max_workers = max_workers
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="labreplay")

    def run(self, units: Sequence[WorkUnit[R]]) -> Iterator[tuple[str, R]]:
        check_unique(units)
        futures = [(u.key, self._pool.submit(u.function, *u.args)) for u in units]
        for key, future in futures:
            yield key, future.result()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
