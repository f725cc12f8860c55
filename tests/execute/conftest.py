"""Fixtures of the executor tests: real sdl1 specs compiled from the Precursor Genome."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from labreplay.compile.spec import EnvironmentSpec


@pytest.fixture(scope="session")
def sdl1_specs(compiled_campaign: Callable[..., Any]) -> list[EnvironmentSpec]:
    if not os.environ.get("LABREPLAY_DATA_DIR"):
        pytest.fail("LABREPLAY_DATA_DIR must point at the shared real data")
    _, specs, _ = compiled_campaign(record="precursor-genome", seed=0)  # the sdl1 protocol
    return specs


@pytest.fixture(scope="session")
def few_specs(sdl1_specs: list[EnvironmentSpec]) -> list[EnvironmentSpec]:
    """Two short assignments and one long one: every branch kind, a few seconds to run."""
    wanted = ("short-1", "short-4", "long-2")
    return [s for w in wanted for s in sdl1_specs if s.body["assignment"]["id"] == w]


def store_rows(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """The deterministic content of a store: events, scores, run keys (not timestamps)."""
    conn = sqlite3.connect(path)
    try:
        return {
            "events": conn.execute(
                "SELECT run_id, seq, kind, payload, prev_hash, hash FROM events "
                "ORDER BY run_id, seq"
            ).fetchall(),
            "scores": conn.execute(
                "SELECT run_id, metric, value, detail FROM scores ORDER BY run_id, metric"
            ).fetchall(),
            "runs": conn.execute(
                "SELECT run_id, suite, spec_hash, spec_id, branch, parent_run_id, agent, "
                "agent_params, seed, status, summary FROM runs ORDER BY run_id"
            ).fetchall(),
            "specs": conn.execute(
                "SELECT spec_hash, body FROM specs ORDER BY spec_hash"
            ).fetchall(),
        }
    finally:
        conn.close()
