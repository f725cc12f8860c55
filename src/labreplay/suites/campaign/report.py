"""Campaign-suite report data, read only from the store.

The leaderboard itself is `suites.campaign.leaderboard`; this module adds what the report shows
around it: tie groups, replicate counts, mean learning curves per system and branch, and the
step-by-step belief trajectory of one campaign.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

import numpy as np

from labreplay.errors import StoreError
from labreplay.sdk import canonical_json
from labreplay.sdk.engine import EnvironmentSpec, RunInfo, Store, spec_from_stored
from labreplay.suites.campaign.branches import BRANCHES

if TYPE_CHECKING:
    from labreplay.suites.campaign.board_rows import SystemRow
    from labreplay.suites.campaign.leaderboard import PairwiseRow


def stored_spec(store: Store, spec_hash: str) -> EnvironmentSpec:
    """A spec from the store's `specs` table, checked against the hash it is stored under."""
    return spec_from_stored(store.get_spec(spec_hash), spec_hash, f"store {store.path}")


def tie_groups(rows: Sequence[SystemRow], pairwise: Sequence[PairwiseRow]) -> None:
    """Label each ranked row with its tie group: walking down the ranking, a system joins the
    current group unless its AUC difference from the group's leader is separable at 95%."""
    separable = {(p["a"], p["b"]): p["separable"] for p in pairwise}
    separable.update({(p["b"], p["a"]): p["separable"] for p in pairwise})
    group, leader = 0, None
    for row in rows:
        system = row["system"]
        if leader is None or separable.get((leader, system), False):
            group, leader = group + 1, system
        row["tie_group"] = group


def system_names(store: Store) -> dict[tuple[str, str], str]:
    """(agent, canonical params) -> the system name the campaign leaderboard shows, learned from
    the leaderboard's own table so the report always uses its naming."""
    from labreplay.suites.campaign.leaderboard import collect

    runs = {r.run_id: r for r in store.runs(suite="campaign")}
    names: dict[tuple[str, str], str] = {}
    for system, by_spec in collect(store)["table"].items():
        for branches in by_spec.values():
            for entry in branches.values():
                run = runs[entry["run_id"]]
                names[(run.agent, canonical_json(run.agent_params))] = system
    return names


def _name(names: Mapping[tuple[str, str], str], run: RunInfo) -> str:
    key = (run.agent, canonical_json(run.agent_params))
    return names.get(key, f"{run.agent} {key[1]}")


class SystemRuns(TypedDict):
    """A system's runs in the store (`replicates`)."""

    seeds: list[int]  # the run seeds it ran with
    complete: dict[str, int]  # branch -> complete runs (over all seeds)
    other: int  # runs not complete


def replicates(store: Store, names: Mapping[tuple[str, str], str]) -> dict[str, SystemRuns]:
    """Per system: the seeds it ran with and complete runs per branch (over all seeds)."""
    out: dict[str, SystemRuns] = {}
    seeds: dict[str, set[int]] = {}
    for run in store.runs(suite="campaign"):
        name = _name(names, run)
        entry = out.setdefault(
            name, {"seeds": [], "complete": dict.fromkeys(BRANCHES, 0), "other": 0}
        )
        seeds.setdefault(name, set()).add(run.seed)
        if run.status == "complete" and run.branch in BRANCHES:
            entry["complete"][run.branch] += 1
        elif run.status != "complete":
            entry["other"] += 1
    for name, entry in out.items():
        entry["seeds"] = sorted(seeds[name])
    return out


class CurveStats(TypedDict):
    """One branch's learning curve over the assignments of one horizon."""

    mean: list[float]  # s_0 .. s_T
    sd: list[float]  # +-1 SD over assignments (and replicates)
    n: int  # curves averaged


def mean_curves(store: Store) -> dict[str, dict[int, dict[str, CurveStats]]]:
    """system -> horizon T -> branch -> {"mean": [s_0..s_T], "n": assignments}.

    Assignments of different lengths cannot share an x axis, so curves are averaged within each
    horizon (long and short assignments separately), equal weight per assignment."""
    from labreplay.suites.campaign.branches import random_replicate
    from labreplay.suites.campaign.leaderboard import collect
    from labreplay.suites.campaign.metrics import branch_metrics
    from labreplay.suites.campaign.views import spec_body

    data = collect(store)
    acc: dict[str, dict[int, dict[str, list[list[float]]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    specs: dict[str, EnvironmentSpec] = {}
    for system, by_spec in data["table"].items():
        for spec_hash, branches in by_spec.items():
            for branch, entry in branches.items():
                if entry.get("status") != "complete":
                    continue
                curve = entry.get("curve")
                if not curve:
                    # Stores whose score rows lack the curve detail: recompute it from the
                    # stored trajectory (the same pure function the runner used).
                    if spec_hash not in specs:
                        specs[spec_hash] = stored_spec(store, spec_hash)
                    events = store.events(entry["run_id"])
                    curve = branch_metrics(events, spec_body(specs[spec_hash].body))["curve"]
                # random replicates share one band: they are draws of one control
                name = "random" if random_replicate(branch) is not None else branch
                acc[system][len(curve) - 1][name].append([float(x) for x in curve])
    out: dict[str, dict[int, dict[str, CurveStats]]] = {}
    for system, by_t in sorted(acc.items()):
        out[system] = {
            t: {
                b: {
                    "mean": np.mean(np.asarray(c), axis=0).tolist(),
                    # band: +-1 SD over assignments (and replicates), declared in the plot
                    "sd": np.std(np.asarray(c), axis=0).tolist(),
                    "n": len(c),
                }
                for b, c in sorted(by_branch.items())
            }
            for t, by_branch in sorted(by_t.items())
        }
    return out


def pick_campaign(
    store: Store,
    ranked: Sequence[str],
    names: Mapping[tuple[str, str], str],
    run_id: str | None,
) -> str | None:
    """The run shown in the trajectory viewer: the one asked for, else the adaptive run of the
    best-ranked system on the first assignment (by assignment id)."""
    if run_id is not None:
        store.run(run_id)  # raises StoreError naming the store if absent
        return run_id
    runs = [r for r in store.runs(suite="campaign", branch="adaptive", status="complete")]
    if not runs:
        return None
    order = {s: i for i, s in enumerate(ranked)}
    runs.sort(
        key=lambda r: (
            order.get(_name(names, r), len(order)),
            r.spec_id,
            r.seed,
            r.run_id,
        )
    )
    return runs[0].run_id


def _top(categories: Mapping[str, float]) -> str:
    best = max(sorted(categories), key=lambda k: categories[k])
    return f"{best} {categories[best]:.2f}"


class TrajectoryStep(TypedDict):
    """One event of a campaign as the trajectory viewer shows it."""

    seq: int
    kind: str
    action: NotRequired[str]  # set for every step, with `budgets_left` (after the event)
    budgets_left: NotRequired[dict[str, int]]
    phase: NotRequired[str | None]  # actions only, from here to `note`
    experiment: NotRequired[str | None]
    accepted: NotRequired[bool]
    evidence: NotRequired[str]  # the evidence item an accepted inspection revealed
    forecast: NotRequired[str]  # an accepted forecast, in words
    local_loss: NotRequired[float]  # that forecast's loss against the recorded outcome
    local_change: NotRequired[float]
    panel_score: NotRequired[float]  # checkpoints only
    panel_change: NotRequired[float]
    note: NotRequired[str]


class BeliefTrajectory(TypedDict):
    """One campaign, step by step (`belief_trajectory`)."""

    run_id: str
    agent: str
    seed: int
    branch: str
    assignment: str  # spec id
    spec_hash: str
    head_hash: str | None  # the run summary's (None when it has none)
    steps: list[TrajectoryStep]


def belief_trajectory(store: Store, run_id: str) -> BeliefTrajectory:
    """Each step of one campaign: action, evidence bought, the local forecast and its loss
    change, the panel score after each checkpoint, and the budgets left."""
    from labreplay.suites.campaign.metrics import panel_loss

    run = store.run(run_id)
    if run.suite != "campaign":
        raise StoreError(f"run {run_id} is a {run.suite!r} run, not a campaign")
    spec = stored_spec(store, run.spec_hash)
    evaluator, eps = spec.body["evaluator"], float(spec.body["eps"])
    budgets: dict[str, int] = dict(spec.body["budgets"])
    last_local: dict[str, float] = {}
    last_panel: float | None = None
    steps: list[TrajectoryStep] = []
    for event in store.events(run_id):
        payload = event["payload"]
        row: TrajectoryStep = {"seq": event["seq"], "kind": event["kind"]}
        if event["kind"] == "action":
            action = payload["action"]
            row["phase"] = payload.get("phase")
            row["action"] = str(action.get("type", "?"))
            row["experiment"] = action.get("experiment_id")
            row["accepted"] = bool(payload["accepted"])
            row["note"] = "" if payload["accepted"] else str(payload.get("reason", ""))
            for budget, amount in (payload.get("cost") or {}).items():
                budgets[budget] = budgets.get(budget, 0) - int(amount)
            if payload.get("revealed_item"):
                row["evidence"] = str(payload["revealed_item"])
            if payload["accepted"] and action.get("type") == "submit_forecast":
                eid = str(action["experiment_id"])
                loss, excluded = panel_loss({eid: action}, evaluator, eps)
                row["forecast"] = f"p_valid {action['p_valid']:.2f}; {_top(action['categories'])}"
                if not excluded:
                    row["local_loss"] = loss
                    if eid in last_local:
                        row["local_change"] = loss - last_local[eid]
                    last_local[eid] = loss
        elif event["kind"] == "checkpoint":
            loss, _ = panel_loss(payload["forecasts"], evaluator, eps)
            row["action"] = f"checkpoint t={payload['t']}"
            row["panel_score"] = -loss
            if last_panel is not None:
                row["panel_change"] = -loss - last_panel
            last_panel = -loss
            row["note"] = f"{payload['fallbacks']} fallback(s)" if payload["fallbacks"] else ""
        elif event["kind"] == "end":
            row["action"] = f"end ({payload.get('reason')})"
        else:
            row["action"] = event["kind"]
        row["budgets_left"] = dict(budgets)
        steps.append(row)
    return {
        "run_id": run_id,
        "agent": run.agent,
        "seed": run.seed,
        "branch": run.branch,
        "assignment": run.spec_id,
        "spec_hash": run.spec_hash,
        "head_hash": (run.summary or {}).get("head_hash"),
        "steps": steps,
    }


class CampaignSection(TypedDict):
    """What the campaign part of the report shows (`campaign_section`)."""

    board: dict[str, Any]  # `leaderboard`'s, with the call health, costs and `notes` added
    replicates: dict[str, SystemRuns]
    curves: dict[str, dict[int, dict[str, CurveStats]]]
    trajectory: BeliefTrajectory | None


def campaign_section(store: Store, run_id: str | None = None) -> CampaignSection | None:
    """Everything the campaign part of the report shows; None if the store has no campaigns."""
    from labreplay.suites.campaign.health import add_call_health
    from labreplay.suites.campaign.leaderboard import leaderboard

    if not store.runs(suite="campaign"):
        return None
    from labreplay.suites.campaign.power import power_text

    board = leaderboard(store)
    add_call_health(board, store.runs(suite="campaign"))
    from labreplay.suites.campaign.costs import add_costs

    add_costs(board, store.runs(suite="campaign"))
    for shown in board["tables"].values():  # the paper's board's rows are `board["rows"]`
        tie_groups(shown["rows"], shown["pairwise"])
    paper = "long" if board["tables"]["long"]["assignments"] else "short"
    notes = [f"Notes of the {paper} board (the paper's board is the long assignments)."]
    for r in board["rows"]:
        share = r["headroom_captured"]
        notes.append(
            f"{r['system']}: held-out gain {r['held_out_gain']:+.4f} nats; selection value "
            f"{r['selection_value']:+.4f} (the reference learner's gain from the outcomes it "
            f"chose; not an upper bound); reference model's ceiling {r['reference_ceiling']:+.4f}; "
            "headroom captured " + ("-" if share is None else f"{100 * share:.0f}%")
        )
    from labreplay.suites.campaign.board_notes import BoardNotes, notes_text
    from labreplay.suites.campaign.board_text import skill_note

    notes.append(skill_note(board["tables"][paper]))
    notes.extend(notes_text(board["tables"][paper].get("flags") or BoardNotes()))
    notes.append(power_text(board["tables"][paper]["power"]))
    if board["unverified_data"]:
        notes.append(
            "UNVERIFIED DATA (compiled with --allow-modified-data): "
            + ", ".join(board["unverified_data"])
        )
    board["notes"] = notes
    names = system_names(store)
    chosen = pick_campaign(store, [r["system"] for r in board["rows"]], names, run_id)
    return {
        "board": board,
        "replicates": replicates(store, names),
        "curves": mean_curves(store),
        "trajectory": belief_trajectory(store, chosen) if chosen else None,
    }
