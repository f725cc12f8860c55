"""`campaign live board`: a store's live runs as their outcomes arrive, read only (`live.scores`
per run; a forecast-only twin's panel is read from its parent's posts, the same stream)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

from labreplay.sdk.engine import RunInfo, Store
from labreplay.sdk.scoring import acceleration_factor, sustained_passage
from labreplay.suites.campaign.branches import target_tau
from labreplay.suites.campaign.leaderboard import is_live
from labreplay.suites.campaign.live.episodes import TWIN
from labreplay.suites.campaign.live.panel import split_panel
from labreplay.suites.campaign.live.scores import LiveScores, live_scores
from labreplay.suites.campaign.report import stored_spec
from labreplay.suites.campaign.views import SpecBody, spec_body

REPLAY_ONLY = (
    "replay-only, cannot exist online: the schedule-matched random controls over the same "
    "experiments (selection lift, acceleration against random), since the lab ran each "
    "experiment once, under one policy; standing in: the forecast-only twin (--twin: no "
    "evidence, the same live stream), giving evidence lift and acceleration against the twin"
)

LAB_SELECTED = (
    "selected by the lab's own agent: selection lift cannot exist (the system under evaluation "
    "selected nothing); its forecasts are scored (prequential log loss, panel)"
)


class LiveRow(TypedDict):
    spec_id: str
    run_id: str
    agent: str
    status: str
    lab: object  # the run's `live` marker (which lab, its delays)
    scores: LiveScores
    twin: LiveScores | None  # its forecast-only twin's, on the same panel posts
    evidence_lift: float | None  # adaptive AUC minus the twin's (both final)
    acceleration_vs_twin: float | None  # sustained passage of tau, the twin's over its own


def live_board(store: Store) -> list[LiveRow]:
    runs = [r for r in store.runs(suite="campaign") if is_live(r)]
    twins = {r.parent_run_id: r for r in runs if r.branch == TWIN}
    rows: list[LiveRow] = []
    for run in (r for r in runs if r.parent_run_id is None):
        body = spec_body(stored_spec(store, run.spec_hash).body)
        events = store.events(run.run_id)
        scores = live_scores(events, body)
        twin_run = twins.get(run.run_id)
        twin = _twin_scores(store, twin_run, events, body) if twin_run else None
        lift = accel = None
        if twin is not None and scores["final"] and twin["final"]:
            assert scores["adaptive_auc"] is not None and twin["adaptive_auc"] is not None
            lift = scores["adaptive_auc"] - twin["adaptive_auc"]
            tau, curve, theirs = target_tau(body), scores["curve"], twin["curve"]
            if tau is not None and curve and theirs and curve[0] < tau:
                accel = acceleration_factor(
                    sustained_passage(theirs, tau), sustained_passage(curve, tau)
                )
        rows.append({
            "spec_id": run.spec_id, "run_id": run.run_id, "agent": run.agent,
            "status": run.status, "lab": run.agent_params["live"], "scores": scores,
            "twin": twin, "evidence_lift": lift, "acceleration_vs_twin": accel,
        })  # fmt: skip
    return rows


def _twin_scores(
    store: Store, twin: RunInfo, parent: Sequence[dict[str, object]], body: SpecBody
) -> LiveScores:
    """The twin's scores, its panel read from the posts its parent took (the same stream)."""
    return live_scores([*store.events(twin.run_id), *split_panel(parent)[1]], body)


def _num(value: float | None, sign: bool = False) -> str:
    return "-" if value is None else (f"{value:+.3f}" if sign else f"{value:.3f}")


def board_lines(rows: Sequence[LiveRow]) -> list[str]:
    """The board as text: per live run its running scores and what is pending."""
    lines: list[str] = []
    for row in rows:
        s = row["scores"]
        lines.append(f"{row['spec_id']} · {row['agent']} · run {row['run_id'][:12]} "
                     f"({row['status']}, campaign {'closed' if s['closed'] else 'open'})")  # fmt: skip
        scored = [o for o in s["outcomes"] if o["loss"] is not None]
        lines.append(
            f"  prequential log loss {_num(s['prequential_log_loss'])} over {len(scored)} "
            f"outcome(s) ({len(s['outcomes']) - len(scored)} unscored, "
            f"{s['deviations']} deviation(s))"
        )
        for name, sc in (("agent", s), ("twin", row["twin"])):
            if sc is None:
                continue
            state = "final" if sc["final"] else f"partial, {len(sc['panel_pending'])} pending"
            if not sc["closed"]:
                state += ", the curve so far carried to the horizon"
            if sc["panel_arrived"] == 0:
                state = "the lab has posted no panel outcome: all pending"
            lines.append(
                f"  {name}: panel {sc['panel_arrived']}/{sc['panel_size']} outcomes in; "
                f"adaptive AUC {_num(sc['adaptive_auc'])}, held-out gain "
                f"{_num(sc['held_out_gain'], True)} ({state})"
            )
        if isinstance(row["lab"], dict) and row["lab"].get("selections") == "lab":
            lines.append(f"  {LAB_SELECTED}")
        if row["twin"] is not None:
            lines.append(
                f"  evidence lift over the twin {_num(row['evidence_lift'], True)}, "
                f"acceleration against it {_num(row['acceleration_vs_twin'])}"
            )
    return [*lines, REPLAY_ONLY]


__all__ = ["REPLAY_ONLY", "LiveRow", "board_lines", "live_board"]
