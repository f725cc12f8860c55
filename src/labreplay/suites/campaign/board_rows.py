"""One system's row on a campaign board (used by `leaderboard`): entry problems, per-branch
closures and stops, evidence ceilings and headroom, lifts, acceleration and seed spread."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Literal, NotRequired, TypeAlias, TypedDict

import numpy as np
from scipy.stats import t as student_t

from labreplay.sdk.scoring import (
    acceleration_factor,
    first_passage,
    paired_bootstrap_ci,
    sign_test,
    sustained_passage,
)
from labreplay.suites.campaign.branches import random_replicate, target_tau
from labreplay.suites.campaign.ceiling import (
    Ceiling,
    ceiling_best,
    ceiling_selected,
    context_score,
)
from labreplay.suites.campaign.json_values import json_number
from labreplay.suites.campaign.views import SpecBody

if TYPE_CHECKING:
    from labreplay.sdk.report import Interval
    from labreplay.suites.campaign.leaderboard import BoardData

REQUIRED = ("adaptive", "random")


class BranchEntry(TypedDict):
    """One stored branch as the boards read it (`leaderboard.collect`)."""

    status: str
    seed: int
    run_id: str
    scores: dict[str, float | None]
    curve: list[float] | None  # s_0 .. s_T, where the score details hold it
    movements: dict[str, int] | None
    closed: list[str]  # experiment ids, in the order closed


# A system's runs on one spec: run seed -> branch -> entry.
SeedRuns: TypeAlias = Mapping[int, Mapping[str, BranchEntry]]


class AssignmentRow(TypedDict):
    """One system on one assignment (`pooled_assignment`); a flat reference row fills only
    the first five keys."""

    assignment: str  # the spec id, which names the partition seed
    partition_seed: int
    assignment_id: str
    adaptive_auc: float
    skill_over_context: float | None
    run_seeds: NotRequired[list[int]]
    held_out_gain: NotRequired[float]
    random_auc: NotRequired[float | None]
    random_aucs: NotRequired[list[float]]
    random_replicates: NotRequired[int]
    no_evidence_auc: NotRequired[float | None]
    selection_lift: NotRequired[float | None]
    selection_lift_se: NotRequired[float | None]
    selection_lift_half_width: NotRequired[float | None]  # of its 95% t interval
    selection_lift_sign: NotRequired[str | None]
    evidence_lift: NotRequired[float | None]
    selection_value: NotRequired[float | None]
    reference_ceiling: NotRequired[float]
    context_model_auc: NotRequired[float]
    policy_calls: NotRequired[dict[str, float | None]]
    forecast_calls: NotRequired[dict[str, float | None]]
    target_met_at_t0: NotRequired[int]
    acceleration_first: NotRequired[float | None]
    acceleration_sustained: NotRequired[float | None]
    acceleration_estimable: NotRequired[dict[str, int]]
    overclaim_rate: NotRequired[float | None]
    invalid_actions: NotRequired[float]
    movements: NotRequired[list[dict[str, int]]]  # pooling only: not in a row's list


class SystemRow(TypedDict):
    """A row of a board (`system_row`), ranked or a reference row; a flat reference
    (`leaderboard._flat_references`) has only the required keys and `reference`, `covers`."""

    system: str
    assignments: int
    adaptive_auc: float | None
    skill_over_context: Interval | None
    held_out_gain: float | None
    selection_value: float | None
    reference_ceiling: float | None
    headroom_captured: float | None
    per_assignment: list[AssignmentRow]
    run_seeds: NotRequired[list[int]]
    random_replicates: NotRequired[dict[str, int] | None]  # {"min", "max"} per assignment
    random_noise_sd: NotRequired[float | None]
    selection_value_range: NotRequired[list[float] | None]
    selection_value_nonpositive: NotRequired[int]
    gain_above_selection_value: NotRequired[int]
    selection_lift: NotRequired[Interval | None]
    evidence_lift: NotRequired[Interval | None]
    evidence_lift_assignments: NotRequired[int]
    selection_lift_sign: NotRequired[tuple[int, int] | None]
    selection_lift_signs: NotRequired[dict[str, int | str]]
    overclaim_rate: NotRequired[float | None]
    invalid_actions: NotRequired[float]
    acceleration_first: NotRequired[float | None]
    acceleration_sustained: NotRequired[float | None]
    acceleration_estimable: NotRequired[dict[str, int]]
    target_met_at_t0: NotRequired[int]
    movements: NotRequired[dict[str, int]]
    branches: NotRequired[dict[str, dict[str, int]]]
    checkpoint_fallbacks: NotRequired[int]
    seed_means: NotRequired[dict[int, float]]
    between_seed_sd: NotRequired[float | None]
    selection_lift_seed_means: NotRequired[dict[int, float]]
    selection_lift_between_seed_sd: NotRequired[float | None]
    complete: NotRequired[bool]
    problems: NotRequired[dict[str, list[str]]]  # assignment -> why it keeps the row off
    isolation: NotRequired[str]  # how the agent was kept from the evaluator (`_board`)
    rank: NotRequired[int]  # ranked rows only
    tie_group: NotRequired[int]  # ranked rows, in the report (`report.tie_groups`)
    reference: NotRequired[str]  # reference rows only: what the reference is
    covers: NotRequired[str]  # reference rows only: "k of n assignments"
    failed_call_share: NotRequired[float | None]  # added by `health.add_call_health`


class PairedScores(TypedDict):
    """A system's per-assignment AUCs, in the board's assignment order (`system_row`)."""

    auc: list[float]
    context: list[float]
    spec: list[str]


def entry_problems(branches: Mapping[str, BranchEntry]) -> list[str]:
    """Why one assignment keeps a system off the board (empty when it may enter)."""
    problems = []
    for b in REQUIRED:
        if not _complete(branches.get(b)):
            problems.append(f"{b} branch not complete")
    for b, entry in branches.items():
        scores = entry.get("scores") or {}
        fallbacks = int(scores.get("checkpoint_fallbacks") or 0)
        if fallbacks:
            problems.append(f"{fallbacks} checkpoint fallback(s) in the {b} branch")
        closed, checkpoints = scores.get("experiments_closed"), scores.get("checkpoints")
        if closed is not None and checkpoints is not None and checkpoints < closed + 1:
            problems.append(f"{b} branch: {int(closed + 1 - checkpoints)} checkpoint(s) missing")
    # An unmatched no-evidence control (issue 37) keeps the system off the board, named.
    adaptive, ne = branches.get("adaptive"), branches.get("no-evidence")
    if adaptive and ne and _complete(adaptive) and _complete(ne):
        mine = (adaptive.get("scores") or {}).get("policy_calls")
        theirs = (ne.get("scores") or {}).get("policy_calls")
        if mine is not None and theirs is not None and int(mine) != int(theirs):
            problems.append(
                f"no-evidence control not call-matched: {int(theirs)} policy calls vs "
                f"{int(mine)} in the adaptive branch"
            )
    return problems


def _branch_summary(
    runs_by_spec: Mapping[str, SeedRuns], specs: Sequence[str]
) -> dict[str, dict[str, int]]:
    """Per branch (random replicates together): runs, closures, early stops, unused budget,
    departures (events and experiments), fallbacks, invalid and evidence actions, summed."""
    keys = (
        "experiments_closed", "unused_experiments", "unused_evidence", "control_departures",
        "departure_experiments", "checkpoint_fallbacks", "invalid_actions", "evidence_actions",
    )  # fmt: skip
    out: dict[str, dict[str, float]] = {}
    for s in specs:
        for branches in runs_by_spec.get(s, {}).values():
            for b, entry in branches.items():
                scores = entry.get("scores") or {}
                name = "random" if random_replicate(b) is not None else b
                acc = out.setdefault(name, dict.fromkeys(("runs", "early_stops", *keys), 0.0))
                acc["runs"] += 1
                acc["early_stops"] += float(scores.get("stopped_early") or 0)
                for key in keys:
                    acc[key] += float(scores.get(key) or 0)
                if "evidence_actions" not in scores:  # a run stored before it was counted
                    acc["evidence_unrecorded"] = acc.get("evidence_unrecorded", 0.0) + 1
    return {b: {k: int(v) for k, v in acc.items()} for b, acc in sorted(out.items())}


_BEST: dict[str, Ceiling] = {}  # spec hash -> ceiling (b): a pure function of the spec


class Ceilings:
    """Evidence ceilings per spec (pure functions of the stored spec, so ceiling (b) is kept
    per spec hash for the life of the process)."""

    def __init__(self, bodies: Mapping[str, SpecBody]) -> None:
        self.bodies = bodies
        self.score0: dict[str, float] = {}

    def of_best(self, spec: str) -> float:
        if spec not in _BEST:
            _BEST[spec] = ceiling_best(self.bodies[spec])
        return float(_BEST[spec]["gain"])

    def context_score(self, spec: str) -> float:
        if spec not in self.score0:
            target = self.bodies[spec].get("acceleration_target")
            stored = target.get("context_model_score_t0") if isinstance(target, Mapping) else None
            self.score0[spec] = (
                json_number(stored) if stored is not None else context_score(self.bodies[spec])
            )
        return self.score0[spec]


def _ratio(num: Sequence[float], den: Sequence[float]) -> float | None:
    total = float(np.sum(den)) if den else 0.0
    return float(np.sum(num)) / total if total > 1e-12 else None


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if len(values) else None


def _complete(entry: BranchEntry | None) -> bool:
    return entry is not None and bool(entry) and entry.get("status") == "complete"


def _score(entry: BranchEntry, key: str) -> float:
    """A stored score the board needs (TypeError naming it when it is missing)."""
    return json_number(entry["scores"][key], key)


def pooled_assignment(
    runs: SeedRuns, body: SpecBody, ceilings: Ceilings, spec: str, assignment: str
) -> AssignmentRow | None:
    """One system on one assignment (`assignment`: its spec id), its run seeds pooled: the
    adaptive values are averaged over run seeds, every schedule-matched random branch of every
    run seed is one replicate (averaged before the lift is taken), acceleration only where the
    target was not met at t = 0 (the branches share that forecast). None when no adaptive
    branch is complete."""
    adaptive = {k: b["adaptive"] for k, b in runs.items() if _complete(b.get("adaptive"))}
    adaptive = {k: e for k, e in adaptive.items() if e["scores"].get("adaptive_auc") is not None}
    if not adaptive:
        return None
    seeds = sorted(adaptive)
    replicates = [
        e
        for k in seeds
        for name, e in sorted(runs[k].items())
        if random_replicate(name) is not None and _complete(e)
    ]
    no_evidence = [runs[k]["no-evidence"] for k in seeds if _complete(runs[k].get("no-evidence"))]
    auc = float(np.mean([_score(adaptive[k], "adaptive_auc") for k in seeds]))
    random_aucs = [_score(e, "adaptive_auc") for e in replicates]
    random_auc = _mean(random_aucs)
    ne_auc = _mean([_score(e, "adaptive_auc") for e in no_evidence])
    tau = target_tau(body)
    first: list[float] = []
    sustained: list[float] = []
    met_t0 = 0
    for k in seeds:
        curve = adaptive[k]["curve"] or []
        if tau is None or not curve:
            continue
        if curve[0] >= tau:
            met_t0 += 1  # a trivial pass: never an acceleration factor
            continue
        for name, e in runs[k].items():
            cr = e.get("curve") if random_replicate(name) is not None and _complete(e) else None
            if not cr:
                continue
            f = acceleration_factor(first_passage(cr, tau), first_passage(curve, tau))
            u = acceleration_factor(sustained_passage(cr, tau), sustained_passage(curve, tau))
            first.extend([f] if f is not None else [])
            sustained.extend([u] if u is not None else [])

    lift = None if random_auc is None else auc - random_auc
    lift_se, lift_half = lift_uncertainty(
        [_score(adaptive[k], "adaptive_auc") for k in seeds], random_aucs
    )

    def calls(entries: Sequence[BranchEntry], key: str) -> float | None:
        values = [e["scores"].get(key) for e in entries]
        return _mean([float(v) for v in values if v is not None])

    return {
        "assignment": assignment,
        "partition_seed": int(body["seed"]),
        "assignment_id": body["assignment"]["id"],
        "run_seeds": seeds,
        "adaptive_auc": auc,
        # Panel-relative: the context-trained model's (flat) AUC on the same assignment.
        "skill_over_context": auc - ceilings.context_score(spec),
        "held_out_gain": float(np.mean([_score(adaptive[k], "held_out_gain") for k in seeds])),
        "random_auc": random_auc,
        "random_aucs": random_aucs,
        "random_replicates": len(random_aucs),
        "no_evidence_auc": ne_auc,
        "selection_lift": lift,
        "selection_lift_se": lift_se,
        "selection_lift_half_width": lift_half,
        "selection_lift_sign": lift_sign(lift, lift_half),
        "evidence_lift": None if ne_auc is None else auc - ne_auc,
        "selection_value": _mean([ceiling_selected(body, adaptive[k]["closed"]) for k in seeds]),
        "reference_ceiling": ceilings.of_best(spec),
        "context_model_auc": ceilings.context_score(spec),
        "policy_calls": {
            "adaptive": calls(list(adaptive.values()), "policy_calls"),
            "no-evidence": calls(no_evidence, "policy_calls"),
        },
        "forecast_calls": {
            "adaptive": calls(list(adaptive.values()), "forecast_calls"),
            "no-evidence": calls(no_evidence, "forecast_calls"),
        },
        "target_met_at_t0": met_t0,
        "acceleration_first": _mean(first),
        "acceleration_sustained": _mean(sustained),
        "acceleration_estimable": {"first": len(first), "sustained": len(sustained)},
        "overclaim_rate": _mean(
            [
                _score(adaptive[k], "overclaim_rate")
                for k in seeds
                if adaptive[k]["scores"].get("overclaim_rate") is not None
            ]
        ),
        "invalid_actions": float(
            sum(float(adaptive[k]["scores"].get("invalid_actions") or 0) for k in seeds)
        ),
        "movements": [adaptive[k].get("movements") or {} for k in seeds],
    }


def _without_movements(p: AssignmentRow) -> AssignmentRow:
    """A pooled assignment as a row lists it (the movements are summed into the row)."""
    out = p.copy()
    out.pop("movements", None)
    return out


# The per-assignment numbers a row pools (each a float, or None where not estimable).
_Numeric: TypeAlias = Literal[
    "adaptive_auc", "skill_over_context", "held_out_gain", "selection_value",
    "reference_ceiling", "selection_lift", "evidence_lift", "acceleration_first",
    "acceleration_sustained", "overclaim_rate", "invalid_actions",
]  # fmt: skip


RESOLVED_LEVEL = 0.95  # a per-assignment lift sign is shown only where its t interval excludes 0


def lift_uncertainty(
    adaptive: Sequence[float], random: Sequence[float]
) -> tuple[float | None, float | None]:
    """The SE of one assignment's selection lift (mean adaptive AUC minus the mean of the
    random replicates) and the half-width of its 95% interval, Student t with (replicates - 1)
    degrees of freedom (issue 49: a normal cut-off of 2 SE of the replicate mean alone resolved
    42% of signs under the exact null). The adaptive branch's own per-run variance is the
    replicates' variance (exact under the null, where the adaptive branch is one more random
    selection), or its own across run seeds where that is larger. (None, None) with fewer than
    two replicates."""
    if len(random) < 2:
        return None, None
    v_random = float(np.var(random, ddof=1))
    v_adaptive = max(v_random, float(np.var(adaptive, ddof=1)) if len(adaptive) > 1 else 0.0)
    se = math.sqrt(v_random / len(random) + v_adaptive / len(adaptive))
    return se, float(student_t.ppf(0.5 + RESOLVED_LEVEL / 2, len(random) - 1)) * se


def lift_sign(lift: float | None, half_width: float | None) -> str | None:
    """ "+" or "-" where the per-assignment selection lift is resolved (its 95% interval,
    `lift_uncertainty`, excludes 0), else "unresolved" (also with a single replicate)."""
    if lift is None:
        return None
    if half_width is None or abs(lift) <= half_width:
        return "unresolved"
    return "+" if lift > 0 else "-"


def _noise_sd(per: Sequence[AssignmentRow]) -> float | None:
    """The random-branch noise SD: within-assignment SD of replicate AUCs, pooled (root mean of
    the within-assignment variances) over assignments with at least two replicates."""
    variances = [float(np.var(p["random_aucs"], ddof=1)) for p in per if len(p["random_aucs"]) > 1]
    return math.sqrt(float(np.mean(variances))) if variances else None


def system_row(
    system: str,
    runs_by_spec: Mapping[str, SeedRuns],
    specs: Sequence[str],
    data: BoardData,
    ceilings: Ceilings,
    seed: int,
) -> tuple[SystemRow, PairedScores]:
    """One system's row. The per-system columns are all built here (one place to add more)."""
    bodies = data["bodies"]
    problems: dict[str, list[str]] = {}
    per_assignment: list[AssignmentRow] = []
    for s in specs:
        runs = runs_by_spec.get(s, {})
        found = [
            (f"run seed {k}: " if len(runs) > 1 else "") + problem
            for k, branches in sorted(runs.items())
            for problem in entry_problems(branches)
        ] or ([] if runs else [f"{b} branch not complete" for b in REQUIRED])
        if found:
            problems[data["spec_ids"][s]] = found
        pooled = pooled_assignment(runs, bodies[s], ceilings, s, data["spec_ids"][s])
        if pooled is not None:
            per_assignment.append(pooled)
    per = per_assignment

    def col(key: _Numeric) -> list[float]:
        return [float(v) for p in per if (v := p[key]) is not None]

    sel, evid = col("selection_lift"), col("evidence_lift")
    gains, values, ceil_b = col("held_out_gain"), col("selection_value"), col("reference_ceiling")
    by_seed: dict[int, list[float]] = defaultdict(list)
    sel_by_seed: dict[int, list[float]] = defaultdict(list)
    moves = {"same": 0, "opposite": 0, "zero": 0}
    for p in per:
        by_seed[p["partition_seed"]].append(p["adaptive_auc"])
        if p["selection_lift"] is not None:
            sel_by_seed[p["partition_seed"]].append(p["selection_lift"])
        for m in p["movements"]:
            for k, v in m.items():
                moves[k] += int(v)
    seed_means = {k: float(np.mean(v)) for k, v in sorted(by_seed.items())}
    sel_seed_means = {k: float(np.mean(v)) for k, v in sorted(sel_by_seed.items())}
    fallbacks = sum(
        int((e.get("scores") or {}).get("checkpoint_fallbacks") or 0)
        for s in specs
        for branches in runs_by_spec.get(s, {}).values()
        for e in branches.values()
    )
    reps = [p["random_replicates"] for p in per]
    first, sustained = col("acceleration_first"), col("acceleration_sustained")
    row: SystemRow = {
        "system": system,
        "assignments": len(per),
        "run_seeds": sorted({k for p in per for k in p["run_seeds"]}),
        "random_replicates": {"min": min(reps), "max": max(reps)} if reps else None,
        "random_noise_sd": _noise_sd(per),
        "adaptive_auc": _mean(col("adaptive_auc")),
        # Skill over context (METRICS.md, fourth round): adaptive AUC minus the context-trained
        # model's AUC on the same assignments, paired bootstrap 95% interval.
        "skill_over_context": ci(col("skill_over_context"), seed, "skill-over-context", system),
        "held_out_gain": _mean(gains),
        # Selection value (formerly "ceiling (a)", not an upper bound) and the reference
        # model's ceiling (formerly "ceiling (b)"); headroom is measured against the latter.
        "selection_value": _mean(values),
        "selection_value_range": [min(values), max(values)] if values else None,
        "selection_value_nonpositive": sum(1 for v in values if v <= 1e-12),
        "gain_above_selection_value": sum(
            1
            for p in per
            if p["selection_value"] is not None and p["held_out_gain"] > p["selection_value"]
        ),
        "reference_ceiling": _mean(ceil_b),
        "headroom_captured": _ratio(gains, ceil_b),
        "selection_lift": ci(sel, seed, "selection-lift", system),
        "evidence_lift": ci(evid, seed, "evidence-lift", system),
        "evidence_lift_assignments": len(evid),
        "selection_lift_sign": sign_test(sel)[:2] if sel else None,
        # Per-assignment signs only where resolved (`lift_uncertainty`), counted.
        "selection_lift_signs": {
            "positive": sum(1 for p in per if p["selection_lift_sign"] == "+"),
            "negative": sum(1 for p in per if p["selection_lift_sign"] == "-"),
            "unresolved": sum(1 for p in per if p["selection_lift_sign"] == "unresolved"),
            "rule": "95% t interval (replicates - 1 df, adaptive variance included) excludes 0",
        },
        "overclaim_rate": _mean(col("overclaim_rate")),
        "invalid_actions": float(sum(col("invalid_actions"))),
        "acceleration_first": _mean(first),
        "acceleration_sustained": _mean(sustained),
        "acceleration_estimable": {"first": len(first), "sustained": len(sustained)},
        "target_met_at_t0": sum(1 for p in per if p["target_met_at_t0"]),
        "movements": moves,
        "branches": _branch_summary(runs_by_spec, specs),
        "checkpoint_fallbacks": fallbacks,
        "seed_means": seed_means,
        "between_seed_sd": (
            float(np.std(list(seed_means.values()), ddof=1)) if len(seed_means) > 1 else None
        ),
        "selection_lift_seed_means": sel_seed_means,
        "selection_lift_between_seed_sd": (
            float(np.std(list(sel_seed_means.values()), ddof=1))
            if len(sel_seed_means) > 1
            else None
        ),
        "per_assignment": [_without_movements(p) for p in per],
        "complete": not problems,
        "problems": problems,
    }
    paired: PairedScores = {
        "auc": [p["adaptive_auc"] for p in per],
        "context": [p["context_model_auc"] for p in per],
        "spec": [p["assignment"] for p in per],
    }
    return row, paired


def ci(values: list[float], seed: int, what: str, system: str) -> Interval | None:
    if not values:
        return None
    mean, lo, hi = paired_bootstrap_ci(values, seed, purpose=f"{what}:{system}")
    return {"mean": mean, "lo": lo, "hi": hi}
