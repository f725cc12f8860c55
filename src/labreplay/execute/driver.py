"""The one execution driver: `run_units(suite, units, store, executor)`.

Every suite turns its work into keyed `Unit`s. The driver skips units whose results the store
already holds, sends the rest to any executor (in-process, threads, Dask), and writes each
result with the unit's own `persist` in submission order, so the store is written by the driver
alone and in the same order whatever the executor.

Every run path goes through `run_units`: the CLI (in-process or on an executor), the Python
API (`labreplay.run`), the demos and the suites' own APIs. In-process, a unit with `in_place`
runs it against the store directly, so a long unit's progress is written as it happens (and a
killed run resumes from its last written event); on other executors `compute` runs without the
store and the driver writes the result with `persist`.

The LLM response cache is consulted in every mode: in-process the store itself is the cache
(new responses are kept the moment they arrive); on threads and Dask workers a unit gets an
in-memory snapshot of the store's cache, and the responses it adds come back with its result
and are written by the driver. A resumed LLM run therefore repeats no completed call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from labreplay.agents.base import ResponseCache
from labreplay.errors import LabreplayError
from labreplay.execute.base import Executor, InProcessExecutor, WorkUnit, check_unique
from labreplay.store.sqlite import Store

if TYPE_CHECKING:
    from collections.abc import Iterator

    from labreplay.runtime.event_types import JsonObject

# what a unit computes (anywhere), and what the driver makes of it (in the driver)
ComputedT = TypeVar("ComputedT")
ResultT = TypeVar("ResultT")

EXECUTORS = ("in-process", "threads", "dask")


class MemoryCache:
    """A response cache over a read-only snapshot; what is added is kept in `added`."""

    def __init__(self, snapshot: Mapping[str, JsonObject]) -> None:
        self._snapshot = snapshot
        self.added: dict[str, tuple[str, JsonObject]] = {}

    def cached_response(self, key: str) -> JsonObject | None:
        if key in self.added:
            return self.added[key][1]
        return self._snapshot.get(key)

    def cache_response(self, key: str, model: str, response: JsonObject) -> None:
        self.added[key] = (model, dict(response))


def _nothing_stored(store: Store) -> None:
    return None


@dataclass(frozen=True)
class Unit(Generic[ComputedT, ResultT]):
    """One keyed, idempotent piece of a suite's work.

    `compute(cache)` runs anywhere the package is installed and never sees the store (it must
    be picklable for Dask: a top-level function or a functools.partial of one); `persist(store,
    value)` runs in the driver and returns the unit's result; `stored(store)` returns the result
    of a unit already finished in the store, or None. `in_place(store)`, when given, is what
    the in-process executor runs instead of compute + persist: the same rows, written while the
    unit runs.
    """

    key: str
    compute: Callable[[ResponseCache | None], ComputedT]
    persist: Callable[[Store, ComputedT], ResultT]
    stored: Callable[[Store], ResultT | None] = _nothing_stored
    uses_llm: bool = False
    in_place: Callable[[Store], ResultT] | None = None


def _compute_with_snapshot(
    compute: Callable[[ResponseCache | None], ComputedT],
    snapshot: Mapping[str, JsonObject] | None,
) -> tuple[ComputedT, dict[str, tuple[str, JsonObject]]]:
    if snapshot is None:
        return compute(None), {}
    cache = MemoryCache(snapshot)
    return compute(cache), cache.added


def _compute_with_store(
    compute: Callable[[ResponseCache | None], ComputedT], store: Store
) -> tuple[ComputedT, dict[str, tuple[str, JsonObject]]]:
    return compute(store), {}


def run_units(
    suite: str,
    units: Sequence[Unit[ComputedT, ResultT]],
    store: Store,
    executor: Executor | None = None,
    progress: Callable[[], None] | None = None,
) -> list[ResultT]:
    """Run `units` of `suite` and return their results in unit order (finished units are read
    back with `stored`, not recomputed). `progress()` is called once per unit done."""
    check_unique([WorkUnit(u.key, _nothing_stored) for u in units])
    runner = executor if executor is not None else InProcessExecutor()
    results: dict[str, ResultT] = {}
    todo: list[Unit[ComputedT, ResultT]] = []
    for unit in units:
        found = unit.stored(store)
        if found is not None:
            results[unit.key] = found
            if progress is not None:
                progress()
        else:
            todo.append(unit)
    in_process = isinstance(runner, InProcessExecutor)
    if in_process:
        here = [u for u in todo if u.in_place is not None]
        for unit in here:
            assert unit.in_place is not None
            results[unit.key] = unit.in_place(store)
            if progress is not None:
                progress()
        todo = [u for u in todo if u.in_place is None]
    snapshot = store.cached_responses() if any(u.uses_llm for u in todo) else None
    work: list[WorkUnit[tuple[ComputedT, dict[str, tuple[str, JsonObject]]]]] = [
        WorkUnit(u.key, _compute_with_store, (u.compute, store))
        if in_process and u.uses_llm
        else WorkUnit(u.key, _compute_with_snapshot, (u.compute, snapshot if u.uses_llm else None))
        for u in todo
    ]
    by_key = {u.key: u for u in todo}
    for key, (value, added) in runner.run(work):
        for cache_key, (model, response) in added.items():
            store.cache_response(cache_key, model, response)
        results[key] = by_key[key].persist(store, value)
        if progress is not None:
            progress()
    missing = [u.key for u in units if u.key not in results]
    if missing:
        raise LabreplayError(f"{suite}: executor returned no result for unit(s) {missing[:3]}")
    return [results[u.key] for u in units]


@contextmanager
def open_executor(
    name: str, scheduler: str | None = None, workers: int | None = None
) -> Iterator[Executor]:
    """`--executor in-process|threads|dask [--scheduler ADDR] [--workers N]` as an executor.

    Dask without a scheduler address starts a LocalCluster of worker processes (one thread
    each; `workers` of them, default one per core) and closes it afterwards.

    A scheduler address with another executor would be silently unused (the work would run
    here, not on the cluster the user named): refused in one line, before any store exists.
    """
    if scheduler is not None and name != "dask":
        raise LabreplayError(
            f"--scheduler: value {scheduler!r} is only used with --executor dask "
            f"(got --executor {name}); drop it or add --executor dask"
        )
    if name == "in-process":
        yield InProcessExecutor()
        return
    if name == "threads":
        from labreplay.execute.base import ThreadedExecutor

        with ThreadedExecutor(workers or 4) as threads:
            yield threads
        return
    if name != "dask":
        raise LabreplayError(f"--executor must be one of {', '.join(EXECUTORS)}, got {name!r}")
    from labreplay.execute.dask_executor import DaskExecutor

    cluster = None
    if scheduler is None:
        try:
            from dask.distributed import LocalCluster
        except ImportError as exc:
            raise LabreplayError(
                "the Dask executor needs dask.distributed: pip install 'labreplay[dist]'"
            ) from exc
        cluster = LocalCluster(  # type: ignore[no-untyped-call]
            n_workers=workers, threads_per_worker=1, dashboard_address=None
        )
    try:
        with DaskExecutor(scheduler, cluster=cluster) as dask:
            yield dask
    finally:
        if cluster is not None:
            cluster.close()


__all__ = ["EXECUTORS", "MemoryCache", "Unit", "open_executor", "run_units"]
