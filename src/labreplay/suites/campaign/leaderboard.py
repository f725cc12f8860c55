"""Campaign leaderboard, read only from the store.

Equal weight per assignment; a system enters only when its adaptive branch and both control
branches completed on every assignment of the spec set (every checkpoint present). Intervals are
paired bootstrap 95% over assignments (10,000 resamples, seed recorded); leave-one-assignment-out
ranks show rank stability. The oracle is a ceiling, shown apart and never ranked. Reference rows:
the base-rate forecaster and the context-trained model (their panel score at t = 0, held flat).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from labreplay._hashing import canonical_json, sha256_json
from labreplay.scoring.curves import (
    acceleration_factor,
    adaptive_auc,
    first_passage,
    sustained_passage,
)
from labreplay.scoring.stats import BOOTSTRAP_SEED, paired_bootstrap_ci, sign_test
from labreplay.store.sqlite import Store
from labreplay.suites.campaign.agents import ORACLE_NAME
from labreplay.suites.campaign.metrics import panel_loss


def _system_keys(runs: Sequence[Any]) -> dict[tuple[str, str], str]:
    """Display name per (agent, params): the agent name, plus a short parameter hash only when
    one agent name appears with several parameter sets."""
    params_by_agent: dict[str, set[str]] = defaultdict(set)
    for r in runs:
        params_by_agent[r.agent].add(canonical_json(r.agent_params))
    keys = {}
    for agent, variants in params_by_agent.items():
        for v in variants:
            keys[(agent, v)] = agent if len(variants) == 1 else f"{agent}#{sha256_json(v)[:6]}"
    return keys


def collect(store: Store, spec_hashes: Sequence[str] | None = None) -> dict[str, Any]:
    """Per system and spec: the three branches' stored scores and curves."""
    runs = store.runs(suite="campaign")
    specs = sorted({r.spec_hash for r in runs} if spec_hashes is None else set(spec_hashes))
    names = _system_keys(runs)
    table: dict[str, dict[str, dict[str, Any]]] = defaultdict(lambda: defaultdict(dict))
    spec_ids: dict[str, str] = {}
    targets: dict[str, float] = {}
    for r in runs:
        if r.spec_hash not in specs:
            continue
        spec_ids[r.spec_hash] = r.spec_id
        system = names[(r.agent, canonical_json(r.agent_params))]
        if r.spec_hash not in targets:
            body = json.loads(store.get_spec(r.spec_hash))["body"]
            targets[r.spec_hash] = float(body["acceleration_target"])
        details = store.score_details(r.run_id)
        entry = {
            "status": r.status,
            "seed": r.seed,
            "run_id": r.run_id,
            "scores": store.scores(r.run_id),
            "curve": details.get("curve"),
            "movements": details.get("movements"),
        }
        table[system][r.spec_hash][r.branch] = entry
    return {"specs": specs, "spec_ids": spec_ids, "table": table, "targets": targets}


def leaderboard(store: Store, seed: int = BOOTSTRAP_SEED) -> dict[str, Any]:
    data = collect(store)
    specs: list[str] = data["specs"]
    rows, incomplete, ceiling = [], [], []
    per_system_auc: dict[str, list[float]] = {}
    for system, by_spec in sorted(data["table"].items()):
        complete = all(
            all(
                by_spec.get(s, {}).get(b, {}).get("status") == "complete"
                for b in ("adaptive", "random", "no-evidence")
            )
            for s in specs
        )
        if not complete and system.split(" ")[0] != ORACLE_NAME:
            incomplete.append(system)
        aucs, sel, evid, gains, overclaim, invalid = [], [], [], [], [], []
        first_af, sustained_af, estimable = [], [], {"first": 0, "sustained": 0}
        moves = {"same": 0, "opposite": 0, "zero": 0}
        stops = {"early_stops": 0, "unused_experiments": 0.0}
        for s in specs:
            branches = by_spec.get(s, {})
            if "adaptive" not in branches:
                continue
            a = branches["adaptive"]["scores"]
            if a.get("adaptive_auc") is None:
                continue  # no scorable held-out query in this assignment (declared in index)
            aucs.append(a["adaptive_auc"])
            gains.append(a["held_out_gain"])
            invalid.append(a.get("invalid_actions") or 0.0)
            if a.get("overclaim_rate") is not None:
                overclaim.append(a["overclaim_rate"])
            for k, v in (branches["adaptive"].get("movements") or {}).items():
                moves[k] += int(v)
            stops["early_stops"] += int(a.get("stopped_early") or 0)
            stops["unused_experiments"] += float(a.get("unused_experiments") or 0.0)
            if "random" in branches:
                sel.append(a["adaptive_auc"] - branches["random"]["scores"]["adaptive_auc"])
                tau = data["targets"][s]
                ca, cr = branches["adaptive"]["curve"], branches["random"]["curve"]
                if ca and cr:
                    f = acceleration_factor(first_passage(cr, tau), first_passage(ca, tau))
                    u = acceleration_factor(sustained_passage(cr, tau), sustained_passage(ca, tau))
                    if f is not None:
                        first_af.append(f)
                        estimable["first"] += 1
                    if u is not None:
                        sustained_af.append(u)
                        estimable["sustained"] += 1
            if "no-evidence" in branches:
                evid.append(a["adaptive_auc"] - branches["no-evidence"]["scores"]["adaptive_auc"])
        row = {
            "system": system,
            "assignments": len(aucs),
            "adaptive_auc": float(np.mean(aucs)) if aucs else None,
            "held_out_gain": float(np.mean(gains)) if gains else None,
            "selection_lift": _ci(sel, seed, "selection-lift", system),
            "evidence_lift": _ci(evid, seed, "evidence-lift", system),
            "selection_lift_sign": sign_test(sel)[:2] if sel else None,
            "overclaim_rate": float(np.mean(overclaim)) if overclaim else None,
            "invalid_actions": float(np.sum(invalid)),
            "acceleration_first": float(np.mean(first_af)) if first_af else None,
            "acceleration_sustained": float(np.mean(sustained_af)) if sustained_af else None,
            "acceleration_estimable": estimable,
            "movements": moves,
            "stops": stops,
            "complete": complete,
        }
        if system.split(" ")[0] == ORACLE_NAME:
            ceiling.append(row)
        elif complete:
            rows.append(row)
            per_system_auc[system] = aucs
    rows.sort(key=lambda r: -(r["adaptive_auc"] if r["adaptive_auc"] is not None else -1e9))
    for rank, row in enumerate(rows, 1):
        row["rank"] = rank
    return {
        "assignments": [data["spec_ids"][s] for s in specs],
        "rows": rows,
        "ceiling": ceiling,
        "incomplete": incomplete,
        "pairwise": _pairwise(per_system_auc, seed),
        "loao_ranks": _loao(per_system_auc),
        "bootstrap": {"resamples": 10_000, "seed": seed, "level": 0.95},
    }


def _ci(values: list[float], seed: int, what: str, system: str) -> dict[str, float] | None:
    if not values:
        return None
    mean, lo, hi = paired_bootstrap_ci(values, seed, purpose=f"{what}:{system}")
    return {"mean": mean, "lo": lo, "hi": hi}


def _pairwise(aucs: Mapping[str, list[float]], seed: int) -> list[dict[str, Any]]:
    systems = sorted(aucs)
    out = []
    for i, a in enumerate(systems):
        for b in systems[i + 1 :]:
            diff = [x - y for x, y in zip(aucs[a], aucs[b], strict=True)]
            mean, lo, hi = paired_bootstrap_ci(diff, seed, purpose=f"pair:{a}:{b}")
            out.append(
                {
                    "a": a,
                    "b": b,
                    "auc_diff": mean,
                    "lo": lo,
                    "hi": hi,
                    "separable": bool(lo > 0 or hi < 0),
                }
            )
    return out


def _loao(aucs: Mapping[str, list[float]]) -> dict[str, list[int]]:
    """Rank of each system when each assignment in turn is left out."""
    systems = sorted(aucs)
    if not systems:
        return {}
    n = len(next(iter(aucs.values())))
    ranks: dict[str, list[int]] = {s: [] for s in systems}
    for leave in range(n):
        means = {s: np.mean([v for i, v in enumerate(aucs[s]) if i != leave]) for s in systems}
        order = sorted(systems, key=lambda s: -means[s])
        for r, s in enumerate(order, 1):
            ranks[s].append(r)
    return ranks


def reference_rows(store: Store) -> list[dict[str, Any]]:
    """Base-rate and context-model panel scores per assignment, from the stored specs."""
    from labreplay.compile.spec import spec_from_stored
    from labreplay.suites.campaign.agents import BayesAgent, RandomAgent
    from labreplay.suites.campaign.env import CampaignEnv

    out: dict[str, list[float]] = {"base-rate forecaster": [], "context-trained model": []}
    hashes = sorted({r.spec_hash for r in store.runs(suite="campaign")})
    for h in hashes:
        spec = spec_from_stored(store.get_spec(h), h)
        env = CampaignEnv(spec)
        env.reset(0)
        snap = env.checkpoint_snapshot()
        for label, agent in (
            ("base-rate forecaster", RandomAgent()),
            ("context-trained model", BayesAgent()),
        ):
            agent.reset(0)
            forecasts = {f["experiment_id"]: f for f in agent.forecast(snap)["forecasts"]}
            loss, _ = panel_loss(forecasts, spec.body["evaluator"], float(spec.body["eps"]))
            out[label].append(adaptive_auc([-loss, -loss]))
    return [{"system": k, "adaptive_auc": float(np.mean(v)) if v else None} for k, v in out.items()]
