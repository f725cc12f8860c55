"""On-disk cache of the evaluation pipeline, keyed by what each stage depends on.

Root: `$LABREPLAY_CACHE_DIR/configsearch`, else the platformdirs user cache; never the data dir.
Every write goes to a temporary file first and is renamed into place, so a killed process leaves
either the old entry or the new one, never half of one. Hit/miss counts per stage are kept so the
CLI and benchmarks can print the cache hit ratio.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from pathlib import Path
from typing import TypedDict

import numpy as np

from labreplay.sdk import atomic_write_bytes
from labreplay.sdk.data import ENV_CACHE_DIR

# Bump when a stage's computation changes, so stale entries are never reused.
PIPELINE_VERSION = "cs-2"


def cache_root(explicit: Path | None = None) -> Path:
    if explicit is not None:
        root = Path(explicit)
    elif os.environ.get(ENV_CACHE_DIR):
        root = Path(os.environ[ENV_CACHE_DIR]) / "configsearch"
    else:
        from platformdirs import user_cache_path

        root = Path(user_cache_path("labreplay")) / "configsearch"
    root.mkdir(parents=True, exist_ok=True)
    return root


class StageCounts(TypedDict):
    hits: int
    misses: int
    ratio: float | None


class CacheStats:
    """Hit and miss counts per pipeline stage (features, embedding, kmeans, fits)."""

    def __init__(self) -> None:
        self.hits: Counter[str] = Counter()
        self.misses: Counter[str] = Counter()

    def hit(self, stage: str, n: int = 1) -> None:
        self.hits[stage] += n

    def miss(self, stage: str, n: int = 1) -> None:
        self.misses[stage] += n

    def ratio(self, stage: str | None = None) -> float | None:
        stages = [stage] if stage else sorted(set(self.hits) | set(self.misses))
        hits = sum(self.hits[s] for s in stages)
        total = hits + sum(self.misses[s] for s in stages)
        return hits / total if total else None

    def as_dict(self) -> dict[str, StageCounts | float | None]:
        """Counts per stage, and the hit ratio over every stage as "overall_ratio"."""
        stages = sorted(set(self.hits) | set(self.misses))
        out: dict[str, StageCounts | float | None] = {
            s: {"hits": self.hits[s], "misses": self.misses[s], "ratio": self.ratio(s)}
            for s in stages
        }
        return out | {"overall_ratio": self.ratio()}


def save_npz(path: Path, **arrays: np.ndarray) -> None:
    import io

    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # type: ignore[arg-type]
    atomic_write_bytes(path, buffer.getvalue())


# numpy parses each array header with `ast.literal_eval`; CPython 3.11 before 3.11.8 can raise
# "SystemError: AST constructor recursion depth mismatch" when two threads parse at once
# (gh-106905), which searches on `--executor threads` do. Reading caches is cheap: serialise it.
_NPZ_READ = threading.Lock()


def load_npz(path: Path) -> dict[str, np.ndarray] | None:
    """The arrays of `path`, or None when absent or unreadable (then it is recomputed)."""
    if not path.is_file():
        return None
    try:
        with _NPZ_READ, np.load(path, allow_pickle=False) as data:
            return {name: data[name] for name in data.files}
    except (OSError, ValueError, EOFError):
        return None
