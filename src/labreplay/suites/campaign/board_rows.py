"""One system's row on a campaign board (used by `leaderboard`): entry problems, per-branch
closures and stops, evidence ceilings and headroom, lifts, acceleration and seed spread."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from labreplay.scoring.curves import acceleration_factor, first_passage, sustained_passage
from labreplay.scoring.stats import paired_bootstrap_ci, sign_test
from labreplay.suites.campaign.ceiling import ceiling_best, ceiling_selected, context_score
from labreplay.suites.campaign.runner import target_tau

REQUIRED = ("adaptive", "random")


def entry_problems(branches: Mapping[str, Any]) -> list[str]:
    """Why one assignment keeps a system off the board (empty when it may enter)."""
    problems = []
    for b in REQUIRED:
        if branches.get(b, {}).get("status") != "complete":
            problems.append(f"{b} branch not complete")
    for b, entry in branches.items():
        scores = entry.get("scores") or {}
        fallbacks = int(scores.get("checkpoint_fallbacks") or 0)
        if fallbacks:
            problems.append(f"{fallbacks} checkpoint fallback(s) in the {b} branch")
        closed, checkpoints = scores.get("experiments_closed"), scores.get("checkpoints")
        if closed is not None and checkpoints is not None and checkpoints < closed + 1:
            problems.append(f"{b} branch: {int(closed + 1 - checkpoints)} checkpoint(s) missing")
    return problems


def _branch_summary(by_spec: Mapping[str, Any], specs: Sequence[str]) -> dict[str, Any]:
    out: dict[str, dict[str, float]] = {}
    for s in specs:
        for b, entry in by_spec.get(s, {}).items():
            scores = entry.get("scores") or {}
            acc = out.setdefault(
                b,
                dict.fromkeys(
                    (
                        "assignments", "experiments_closed", "early_stops",
                        "unused_experiments", "unused_evidence", "control_departures",
                        "checkpoint_fallbacks", "invalid_actions",
                    ),
                    0.0,
                ),
            )  # fmt: skip
            acc["assignments"] += 1
            acc["early_stops"] += float(scores.get("stopped_early") or 0)
            for key in (
                "experiments_closed", "unused_experiments", "unused_evidence",
                "control_departures", "checkpoint_fallbacks", "invalid_actions",
            ):  # fmt: skip
                acc[key] += float(scores.get(key) or 0)
    return {b: {k: int(v) for k, v in acc.items()} for b, acc in sorted(out.items())}


_BEST: dict[str, dict[str, Any]] = {}  # spec hash -> ceiling (b): a pure function of the spec


class Ceilings:
    """Evidence ceilings per spec (pure functions of the stored spec, so ceiling (b) is kept
    per spec hash for the life of the process)."""

    def __init__(self, bodies: Mapping[str, Mapping[str, Any]]) -> None:
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
                float(stored) if stored is not None else context_score(self.bodies[spec])
            )
        return self.score0[spec]


def _ratio(num: Sequence[float], den: Sequence[float]) -> float | None:
    total = float(np.sum(den)) if den else 0.0
    return float(np.sum(num)) / total if total > 1e-12 else None


def system_row(
    system: str,
    by_spec: Mapping[str, Any],
    specs: Sequence[str],
    data: Mapping[str, Any],
    ceilings: Ceilings,
    seed: int,
) -> tuple[dict[str, Any], dict[str, list[float]]]:
    bodies = data["bodies"]
    aucs, sel, evid, gains, ceil_a, ceil_b, overclaim, invalid = ([] for _ in range(8))
    first_af: list[float] = []
    sustained_af: list[float] = []
    estimable = {"first": 0, "sustained": 0}
    met_t0 = 0
    moves = {"same": 0, "opposite": 0, "zero": 0}
    by_seed: dict[int, list[float]] = defaultdict(list)
    sel_by_seed: dict[int, list[float]] = defaultdict(list)
    problems: dict[str, list[str]] = {}
    per: dict[str, list[float]] = {"auc": [], "selection": []}
    for s in specs:
        branches = by_spec.get(s, {})
        if found := entry_problems(branches):
            problems[data["spec_ids"][s]] = found
        if branches.get("adaptive", {}).get("status") != "complete":
            continue
        a = branches["adaptive"]["scores"]
        if a.get("adaptive_auc") is None:
            continue  # no scorable held-out query in this assignment (declared in index)
        body = bodies[s]
        aucs.append(a["adaptive_auc"])
        per["auc"].append(a["adaptive_auc"])
        by_seed[int(body["seed"])].append(a["adaptive_auc"])
        gains.append(a["held_out_gain"])
        ceil_a.append(ceiling_selected(body, branches["adaptive"]["closed"]))
        ceil_b.append(ceilings.of_best(s))
        invalid.append(a.get("invalid_actions") or 0.0)
        if a.get("overclaim_rate") is not None:
            overclaim.append(a["overclaim_rate"])
        for k, v in (branches["adaptive"].get("movements") or {}).items():
            moves[k] += int(v)
        tau = target_tau(body)
        curve = branches["adaptive"]["curve"] or []
        if tau is not None and curve and curve[0] >= tau:
            met_t0 += 1
        rnd = branches.get("random", {})
        if rnd.get("status") == "complete":
            sel.append(a["adaptive_auc"] - rnd["scores"]["adaptive_auc"])
            per["selection"].append(sel[-1])
            sel_by_seed[int(body["seed"])].append(sel[-1])
            cr = rnd.get("curve")
            if tau is not None and curve and cr:
                f = acceleration_factor(first_passage(cr, tau), first_passage(curve, tau))
                u = acceleration_factor(sustained_passage(cr, tau), sustained_passage(curve, tau))
                if f is not None:
                    first_af.append(f)
                    estimable["first"] += 1
                if u is not None:
                    sustained_af.append(u)
                    estimable["sustained"] += 1
        ne = branches.get("no-evidence", {})
        if ne.get("status") == "complete":
            evid.append(a["adaptive_auc"] - ne["scores"]["adaptive_auc"])
    seed_means = {k: float(np.mean(v)) for k, v in sorted(by_seed.items())}
    sel_seed_means = {k: float(np.mean(v)) for k, v in sorted(sel_by_seed.items())}
    fallbacks = sum(
        int((e.get("scores") or {}).get("checkpoint_fallbacks") or 0)
        for s in specs
        for e in by_spec.get(s, {}).values()
    )
    row = {
        "system": system,
        "assignments": len(aucs),
        "adaptive_auc": float(np.mean(aucs)) if aucs else None,
        "held_out_gain": float(np.mean(gains)) if gains else None,
        "evidence_ceiling": {
            "selected": float(np.mean(ceil_a)) if ceil_a else None,
            "best": float(np.mean(ceil_b)) if ceil_b else None,
        },
        "headroom_captured": _ratio(gains, ceil_a),
        "ceiling_nonpositive": sum(1 for c in ceil_a if c <= 1e-12),
        "headroom_captured_best": _ratio(gains, ceil_b),
        "selection_lift": ci(sel, seed, "selection-lift", system),
        "evidence_lift": ci(evid, seed, "evidence-lift", system),
        "evidence_lift_assignments": len(evid),
        "selection_lift_sign": sign_test(sel)[:2] if sel else None,
        "overclaim_rate": float(np.mean(overclaim)) if overclaim else None,
        "invalid_actions": float(np.sum(invalid)),
        "acceleration_first": float(np.mean(first_af)) if first_af else None,
        "acceleration_sustained": float(np.mean(sustained_af)) if sustained_af else None,
        "acceleration_estimable": estimable,
        "target_met_at_t0": met_t0,
        "movements": moves,
        "branches": _branch_summary(by_spec, specs),
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
        "complete": not problems,
        "problems": problems,
    }
    return row, per


def ci(values: list[float], seed: int, what: str, system: str) -> dict[str, float] | None:
    if not values:
        return None
    mean, lo, hi = paired_bootstrap_ci(values, seed, purpose=f"{what}:{system}")
    return {"mean": mean, "lo": lo, "hi": hi}
