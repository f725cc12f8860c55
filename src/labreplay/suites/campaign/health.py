"""Model-call health on the campaign boards: which systems' runs failed outright (every model
call failed, so the run measured its endpoint, not its agent: never ranked) and each ranked
system's share of failed calls."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from labreplay.sdk.engine import RunInfo
from labreplay.suites.campaign.leaderboard import _system_keys, system_of


def add_call_health(board: dict[str, Any], runs: Sequence[RunInfo]) -> None:
    """Each ranked system's failed-call share, and the systems with failed (unranked) runs.

    A run whose every model call failed measured its endpoint, not its agent: it ends `failed`
    and the board never ranks it; a run with some failed calls is ranked, with its share shown.
    """
    names = _system_keys(runs)
    calls: dict[str, list[int]] = {}
    failed_systems = set()
    kinds: dict[str, str] = {}
    for r in runs:
        system = system_of(names, r)
        summary = r.summary or {}
        if r.status == "failed":
            failed_systems.add(system)
            # the named cause of the rule (`labreplay.runtime.failure`), first seen
            kinds.setdefault(system, str(summary.get("cause_kind") or summary.get("cause") or ""))
        total = calls.setdefault(system, [0, 0])
        total[0] += int(summary.get("failed_calls", 0))
        total[1] += int(summary.get("llm_calls", 0))
    tables = board.get("tables") or {"board": {"rows": board["rows"]}}
    for table in tables.values():
        for row in table["rows"]:
            n_failed, n_calls = calls.get(row["system"], [0, 0])
            row["failed_call_share"] = n_failed / n_calls if n_calls else None
    board["failed"] = sorted(failed_systems)
    board["failed_causes"] = {s: kinds[s] for s in sorted(failed_systems) if kinds.get(s)}
