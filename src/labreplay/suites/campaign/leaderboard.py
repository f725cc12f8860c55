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

from labreplay.errors import SpecError
from labreplay.scoring.stats import BOOTSTRAP_SEED, paired_bootstrap_ci
from labreplay.sdk import canonical_json, sha256_json
from labreplay.store.sqlite import Store
from labreplay.suites.campaign.agents import ORACLE_NAME
from labreplay.suites.campaign.board_rows import Ceilings, system_row
from labreplay.suites.campaign.power import power_line

BOARDS = ("long", "short")
RANDOM_POLICY = "random"
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
    runs = store.runs(suite="campaign")
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


def _board(
    data: Mapping[str, Any], specs: Sequence[str], seed: int, difference: float
) -> dict[str, Any]:
    bodies = data["bodies"]
    ceilings = Ceilings(bodies)
    rows, references, oracle, incomplete = [], [], [], []
    reasons: dict[str, dict[str, list[str]]] = {}
    per_system: dict[str, dict[str, list[float]]] = {}
    selection_diffs: dict[str, list[list[float]]] = {"ranked": [], "other": []}
    for system, by_spec in sorted(data["table"].items()):
        if not any(s in by_spec for s in specs):
            continue
        row, per = system_row(system, by_spec, specs, data, ceilings, seed)
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
        if name not in (ORACLE_NAME, RANDOM_POLICY) and len(per["selection"]) >= 2:
            selection_diffs["ranked" if row["complete"] else "other"].append(per["selection"])
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
        pair_diffs or selection_diffs["ranked"] or selection_diffs["other"],
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
    specs: Sequence[str], bodies: Mapping[str, Any], ceilings: Ceilings
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
