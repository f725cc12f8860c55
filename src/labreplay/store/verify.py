"""`labreplay store verify`: re-check every stored run against its spec.

For each run: its spec must be stored and match the hash the run is bound to, and its events
must form an unbroken chain (seq, links, hashes) under that spec hash. Reads only.
"""

from __future__ import annotations

from dataclasses import dataclass

from labreplay.compile.spec import spec_from_stored
from labreplay.errors import SpecError, StoreError
from labreplay.runtime.trajectory import Trajectory
from labreplay.store.sqlite import Store


@dataclass(frozen=True)
class VerifyReport:
    runs: int
    events: int
    problems: list[str]

    @property
    def ok(self) -> bool:
        return not self.problems


def verify_store(store: Store) -> VerifyReport:
    problems: list[str] = []
    n_events = 0
    for run in store.runs():
        where = f"run {run.run_id} ({run.suite}, {run.spec_id}, {run.branch})"
        try:
            spec_from_stored(store.get_spec(run.spec_hash), run.spec_hash, f"store {store.path}")
        except (SpecError, StoreError, ValueError, KeyError) as exc:
            problems.append(f"{where}: spec {run.spec_hash[:16]}...: {exc}")
            continue
        events = store.events(run.run_id)
        n_events += len(events)
        try:
            Trajectory.verify(events, run.spec_hash)
        except StoreError as exc:
            problems.append(f"{where}: {exc}")
    return VerifyReport(len(store.runs()), n_events, problems)


__all__ = ["VerifyReport", "verify_store"]
