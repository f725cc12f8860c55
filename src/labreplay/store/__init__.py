"""The results store: an embedded SQLite database that every report reads from."""

from labreplay.store.sqlite import RunInfo, Store, run_key

__all__ = ["RunInfo", "Store", "run_key"]
