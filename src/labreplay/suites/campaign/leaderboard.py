"""Campaign leaderboards, read only from the store (METRICS.md "Leaderboard").

Two boards: the paper's board of long assignments (T = 12) and a separate board of short ones;
equal weight per assignment within a board; several partition seeds pool their assignments and
the between-seed spread is reported. Entry rule: a system is ranked only with its adaptive and
schedule-matched random branches complete on every assignment of the board and every
post-closure checkpoint answered without fallback (any fallback lists it as incomplete, with the
count). Intervals: paired bootstrap 95% over assignments (10,000 resamples, seed recorded);
leave-one-assignment-out ranks. Under every board: evidence ceilings and headroom captured
(`ceiling`), the power line (`power`) and the acceleration target count.

Not ranked, shown apart: the oracle (a ceiling that sees outcomes), the random-policy agent and
the flat references (base-rate forecaster and context-trained model at t = 0).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from labreplay._hashing import canonical_json, sha256_json
from labreplay.errors import SpecError
from labreplay.scoring.curves import acceleration_factor, first_passage, sustained_passage
from labreplay.scoring.stats import paired_bootstrap_ci, sign_test
from labreplay.store.sqlite import Store
from labreplay.suites.campaign.agents import ORACLE_NAME
from labreplay.suites.campaign.ceiling import ceiling_best, ceiling_selected, context_score
from labreplay.suites.campaign.power import power_line
from labreplay.suites.campaign.runner import target_tau

BOOTSTRAP_SEED = 20261129
BOARDS = ("long", "short")
RANDOM_POLICY = "random"
REQUIRED = ("adaptive", "random")
DEFAULT_DIFFERENCE = 0.01


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


def _check_protocols(runs: Sequence[Any]) -> None:
    hashes: dict[str, set[str]] = defaultdict(set)
    for r in runs:
        hashes[r.spec_id].add(r.spec_hash)
    for spec_id, found in sorted(hashes.items()):
        if len(found) > 1:
            raise SpecError(
                f"spec id {spec_id} is stored under {len(found)} different spec hashes "
                "(different protocols or data); select one protocol with --specs DIR"
            )


def collect(store: Store, spec_hashes: Sequence[str] | None = None) -> dict[str, Any]:
    """Per system and spec: the branches' stored scores, curves and closed experiments. Refuses
    (SpecError) a store where one spec id has several spec hashes, unless `spec_hashes` picks."""
    runs = store.runs(where="suite='campaign'")
    if spec_hashes is not None:
        wanted = set(spec_hashes)
        runs = [r for r in runs if r.spec_hash in wanted]
    _check_protocols(runs)
    names = _system_keys(runs)
    table: dict[str, dict[str, dict[str, Any]]] = defaultdict(lambda: defaultdict(dict))
    spec_ids: dict[str, str] = {}
    bodies: dict[str, dict[str, Any]] = {}
    # Several run seeds of one system on one spec: the smallest seed is the one shown.
    for r in sorted(runs, key=lambda r: (-r.seed, r.run_id)):
        spec_ids[r.spec_hash] = r.spec_id
        if r.spec_hash not in bodies:
            bodies[r.spec_hash] = json.loads(store.get_spec(r.spec_hash))["body"]
        system = names[(r.agent, canonical_json(r.agent_params))]
        details = store.score_details(r.run_id)
        closed = details.get("closed")
        if closed is None and r.status == "complete":
            events = store.events(r.run_id)
            closed = events[-1]["payload"].get("closed", []) if events else []
        table[system][r.spec_hash][r.branch] = {
            "status": r.status,
            "seed": r.seed,
            "run_id": r.run_id,
            "scores": store.scores(r.run_id),
            "curve": details.get("curve"),
            "movements": details.get("movements"),
            "closed": closed or [],
        }
    specs = sorted(spec_ids, key=lambda h: spec_ids[h])
    return {"specs": specs, "spec_ids": spec_ids, "table": table, "bodies": bodies}


def leaderboard(
    store: Store,
    seed: int = BOOTSTRAP_SEED,
    spec_hashes: Sequence[str] | None = None,
    difference: float = DEFAULT_DIFFERENCE,
) -> dict[str, Any]:
    data = collect(store, spec_hashes)
    bodies = data["bodies"]
    tables = {}
    for kind in BOARDS:
        specs = [s for s in data["specs"] if bodies[s]["assignment"]["kind"] == kind]
        tables[kind] = _board(data, specs, seed, difference)
    unverified = sorted(
        data["spec_ids"][s]
        for s in data["specs"]
        if not bodies[s]["record"].get("data_verified", True)
    )
    paper = tables["long"] if tables["long"]["assignments"] else tables["short"]
    return {
        "tables": tables,
        "unverified_data": unverified,
        "bootstrap": {"resamples": 10_000, "seed": seed, "level": 0.95},
        # The paper's board, also at the top level for readers of the single-board layout.
        **{k: paper[k] for k in ("assignments", "rows", "ceiling", "incomplete", "pairwise")},
        "loao_ranks": paper["loao_ranks"],
        "references": paper["references"],
    }


def _entry_problems(branches: Mapping[str, Any]) -> list[str]:
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


class _Ceilings:
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


def _system_row(
    system: str,
    by_spec: Mapping[str, Any],
    specs: Sequence[str],
    data: Mapping[str, Any],
    ceilings: _Ceilings,
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
        if found := _entry_problems(branches):
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
        "selection_lift": _ci(sel, seed, "selection-lift", system),
        "evidence_lift": _ci(evid, seed, "evidence-lift", system),
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


def _board(
    data: Mapping[str, Any], specs: Sequence[str], seed: int, difference: float
) -> dict[str, Any]:
    bodies = data["bodies"]
    ceilings = _Ceilings(bodies)
    rows, references, oracle, incomplete = [], [], [], []
    reasons: dict[str, dict[str, list[str]]] = {}
    per_system: dict[str, dict[str, list[float]]] = {}
    selection_diffs: list[list[float]] = []
    for system, by_spec in sorted(data["table"].items()):
        if not any(s in by_spec for s in specs):
            continue
        row, per = _system_row(system, by_spec, specs, data, ceilings, seed)
        name = system.split("#")[0]
        if name == ORACLE_NAME:
            oracle.append(row)
        elif name == RANDOM_POLICY:
            references.append({**row, "reference": "random policy (samples the permitted actions)"})
        elif row["complete"]:
            rows.append(row)
            per_system[system] = per
        else:
            incomplete.append(system)
            reasons[system] = row["problems"]
        if name not in (ORACLE_NAME,) and len(per["selection"]) >= 2:
            selection_diffs.append(per["selection"])
    rows.sort(key=lambda r: -(r["adaptive_auc"] if r["adaptive_auc"] is not None else -1e9))
    for rank, row in enumerate(rows, 1):
        row["rank"] = rank
    aucs = {s: p["auc"] for s, p in per_system.items()}
    pairwise = _pairwise(aucs, seed)
    pair_diffs = [
        [x - y for x, y in zip(aucs[p["a"]], aucs[p["b"]], strict=True)] for p in pairwise
    ]
    n_seeds = len({int(bodies[s]["seed"]) for s in specs})
    source = (
        "pairs of ranked systems" if pair_diffs else "adaptive vs schedule-matched random branches"
    )
    power = power_line(
        pair_diffs or selection_diffs,
        len(specs),
        difference,
        max(1, len(specs) // max(n_seeds, 1)),
        source,
    )
    references.extend(_flat_references(specs, bodies, ceilings))
    return {
        "assignments": [data["spec_ids"][s] for s in specs],
        "seeds": sorted({int(bodies[s]["seed"]) for s in specs}),
        "rows": rows,
        "references": references,
        "ceiling": oracle,
        "incomplete": incomplete,
        "incomplete_reasons": reasons,
        "pairwise": pairwise,
        "loao_ranks": _loao(aucs),
        "power": power,
        "evidence_ceiling_best": (
            float(np.mean([ceilings.of_best(s) for s in specs])) if specs else None
        ),
        "acceleration_target": "context-trained model score at t = 0 + 0.05 nats (per spec)",
    }


def _flat_references(
    specs: Sequence[str], bodies: Mapping[str, Any], ceilings: _Ceilings
) -> list[dict[str, Any]]:
    """Base-rate forecaster and context-trained model: their t = 0 panel score, held flat."""
    from labreplay.suites.campaign.agents import RandomAgent
    from labreplay.suites.campaign.metrics import panel_loss

    base, context = [], []
    for s in specs:
        body = bodies[s]
        state = {"context": body["context_rows"] or body["context_summary"]}
        forecast = RandomAgent().forecast({"state": state, "panel": body["queries"]})["forecasts"]
        loss, _ = panel_loss(
            {f["experiment_id"]: f for f in forecast}, body["evaluator"], float(body["eps"])
        )
        base.append(-loss)
        context.append(ceilings.context_score(s))
    out = []
    for label, values in (("base-rate forecaster", base), ("context-trained model", context)):
        out.append(
            {
                "system": label,
                "reference": "flat: its t = 0 panel score at every t",
                "assignments": len(values),
                "adaptive_auc": float(np.mean(values)) if values else None,
                "held_out_gain": 0.0,
                "evidence_ceiling": {"selected": 0.0, "best": None},
                "headroom_captured": 0.0 if values else None,
            }
        )
    return out


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
    if n < 2:
        return {}  # leaving out the only assignment leaves nothing to rank
    ranks: dict[str, list[int]] = {s: [] for s in systems}
    for leave in range(n):
        means = {s: np.mean([v for i, v in enumerate(aucs[s]) if i != leave]) for s in systems}
        order = sorted(systems, key=lambda s: -means[s])
        for r, s in enumerate(order, 1):
            ranks[s].append(r)
    return ranks


def reference_rows(store: Store) -> list[dict[str, Any]]:
    """The paper board's reference rows (kept for readers of the single-board layout)."""
    return list(leaderboard(store)["references"])
