"""Campaign leaderboards, read only from the store (METRICS.md "Leaderboard").

Two boards: the paper's board of long assignments (T = 12) and a separate board of short ones;
equal weight per assignment within a board; several partition seeds pool their assignments and
the between-seed spread is reported. Entry rule: a system is ranked only with its adaptive and
schedule-matched random branches complete on every assignment of the board and every
post-closure checkpoint answered without fallback (any fallback lists it as incomplete, with the
count). Intervals: paired bootstrap 95% over assignments (10,000 resamples, seed recorded);
leave-one-assignment-out ranks. Under every board: the reference model's ceiling and headroom
captured, with where that ceiling is exceeded or negative, where the oracle is beaten and where
a ranked system scores below a reference row (`flags`), the power line (`power`) and the
acceleration target count. Beside adaptive AUC, the panel-relative skill over context.

Never ranked, shown as reference rows with the number of assignments each covers: the reference
agents (random policy, no-evidence, the oracle, which reads outcomes and is not an upper bound)
and the flat references (base-rate forecaster and context-trained model at t = 0).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

import numpy as np

from labreplay.errors import SpecError
from labreplay.sdk import canonical_json, sha256_json
from labreplay.sdk.engine import RunInfo, Store, run_isolation
from labreplay.sdk.scoring import BOOTSTRAP_SEED, paired_bootstrap_ci
from labreplay.suites.campaign.agents import ORACLE_NAME
from labreplay.suites.campaign.board_notes import BoardNotes, board_notes
from labreplay.suites.campaign.board_rows import (
    BranchEntry,
    Ceilings,
    PairedScores,
    SystemRow,
    system_row,
)
from labreplay.suites.campaign.json_values import json_number
from labreplay.suites.campaign.power import PowerLine, power_line, power_pairs
from labreplay.suites.campaign.views import SpecBody, spec_body

BOARDS = ("long", "short")
RANDOM_POLICY = "random"
NO_EVIDENCE = "no-evidence"
DEFAULT_DIFFERENCE = 0.01


ISOLATED_MODES = ("subprocess", "model-endpoint")


class BoardData(TypedDict):
    """What the boards are built from (`collect`): per system and spec, the stored branches."""

    specs: list[str]  # spec hashes, in spec-id order
    spec_ids: dict[str, str]  # spec hash -> spec id
    # system -> spec hash -> branch -> entry, at the smallest run seed (single-seed readers)
    table: dict[str, dict[str, dict[str, BranchEntry]]]
    # system -> spec hash -> run seed -> branch -> entry: every run seed, which boards pool
    pooled: dict[str, dict[str, dict[int, dict[str, BranchEntry]]]]
    bodies: dict[str, SpecBody]  # spec hash -> body
    isolation: dict[str, str]  # system -> isolation mode of its adaptive runs
    not_isolated: list[str]  # agents left out by `require_isolated`
    live_left_out: int  # live runs, never on a board (`board_runs`)


class PairwiseRow(TypedDict):
    """Two ranked systems' adaptive-AUC difference a - b, paired bootstrap 95%."""

    a: str
    b: str
    auc_diff: float
    lo: float
    hi: float
    separable: bool  # the interval excludes 0


class Board(TypedDict):
    """One board (`long` or `short`) of `leaderboard`."""

    assignments: list[str]  # spec ids
    seeds: list[int]  # partition seeds
    rows: list[SystemRow]  # ranked
    references: list[SystemRow]  # never ranked
    incomplete: list[str]
    incomplete_reasons: dict[str, dict[str, list[str]]]
    pairwise: list[PairwiseRow]
    loao_ranks: dict[str, list[int]]
    power: PowerLine
    reference_ceiling: float | None
    flags: BoardNotes
    acceleration_target: str
    # a card's board: what the context-trained model read (`ceiling.context_reading`)
    context_model: str | None


def isolation_mode(run: RunInfo) -> str:
    """How a run's agent was kept from the evaluator: "subprocess" (`--isolate`),
    "model-endpoint" (an LLM agent: only the rendered state reaches the model) or
    "in-process" (shares memory with the environment: trusted reference agents only)."""
    mode = run_isolation(run.provenance)
    if mode == "in-process" and run.model is not None:
        return "model-endpoint"
    return mode


def _system_keys(runs: Sequence[RunInfo]) -> dict[tuple[str, str, str], str]:
    """Display name per (agent, params, isolation): the agent name, plus a short parameter hash
    only when one agent name appears with several parameter sets, plus `#isolated` for a
    `--isolate` run (an isolated run and an in-process one are different systems)."""
    params_by_agent: dict[str, set[str]] = defaultdict(set)
    for r in runs:
        params_by_agent[r.agent].add(canonical_json(r.agent_params))
    keys = {}
    for r in runs:
        v, mode = canonical_json(r.agent_params), run_isolation(r.provenance)
        variants = params_by_agent[r.agent]
        name = r.agent if len(variants) == 1 else f"{r.agent}#{sha256_json(v)[:6]}"
        keys[(r.agent, v, mode)] = name + ("#isolated" if mode == "subprocess" else "")
    return keys


def system_of(names: Mapping[tuple[str, str, str], str], run: RunInfo) -> str:
    """A run's system name on the board (`names` from `_system_keys`)."""
    return names[(run.agent, canonical_json(run.agent_params), run_isolation(run.provenance))]


def _check_protocols(runs: Sequence[RunInfo]) -> None:
    hashes: dict[str, set[str]] = defaultdict(set)
    for r in runs:
        hashes[r.spec_id].add(r.spec_hash)
    for spec_id, found in sorted(hashes.items()):
        if len(found) > 1:
            raise SpecError(
                f"spec id {spec_id} is stored under {len(found)} different spec hashes "
                "(different protocols or data); select one protocol with --specs DIR"
            )


def is_live(run: RunInfo) -> bool:
    """A `campaign live` run (its agent params carry the `live` marker: which lab)."""
    return "live" in run.agent_params


def board_runs(store: Store, spec_hashes: Sequence[str] | None = None) -> tuple[list[RunInfo], int]:
    """The campaign runs a board reads (those of `spec_hashes` only, where given) and how many
    live runs it leaves out: a live run has no schedule-matched random control (the lab ran each
    experiment once), so it could only be listed as incomplete, under a name that would split
    its agent's replay system in two; `campaign live board` scores it."""
    runs = store.runs(suite="campaign")
    if spec_hashes is not None:
        wanted = set(spec_hashes)
        runs = [r for r in runs if r.spec_hash in wanted]
    live = sum(1 for r in runs if is_live(r))
    return [r for r in runs if not is_live(r)], live


def collect(
    store: Store, spec_hashes: Sequence[str] | None = None, require_isolated: bool = False
) -> BoardData:
    """Per system and spec: the branches' stored scores, curves and closed experiments. Refuses
    (SpecError) a store where one spec id has several spec hashes, unless `spec_hashes` picks.
    `require_isolated` leaves out every run whose agent ran in-process (listed apart); live
    runs are left out and counted (`board_runs`)."""
    runs, live = board_runs(store, spec_hashes)
    left_out = sorted(
        {r.agent for r in runs if isolation_mode(r) not in ISOLATED_MODES}
        if require_isolated
        else set()
    )
    if require_isolated:
        runs = [r for r in runs if isolation_mode(r) in ISOLATED_MODES]
    _check_protocols(runs)
    names = _system_keys(runs)
    modes: dict[str, str] = {}
    table: dict[str, dict[str, dict[str, BranchEntry]]] = defaultdict(lambda: defaultdict(dict))
    # Every run seed of a system on a spec: system -> spec -> run seed -> branch -> entry. The
    # board pools them (replicates, counted); `table` keeps the smallest seed for readers of
    # the single-seed layout (report curves, system names).
    pooled: dict[str, dict[str, dict[int, dict[str, BranchEntry]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(dict))
    )
    spec_ids: dict[str, str] = {}
    bodies: dict[str, SpecBody] = {}
    for r in sorted(runs, key=lambda r: (-r.seed, r.run_id)):
        spec_ids[r.spec_hash] = r.spec_id
        if r.spec_hash not in bodies:
            bodies[r.spec_hash] = spec_body(json.loads(store.get_spec(r.spec_hash))["body"])
        system = system_of(names, r)
        modes[system] = isolation_mode(r) if r.branch == "adaptive" else modes.get(system, "")
        details = store.score_details(r.run_id)
        closed = details.get("closed")
        if closed is None and r.status == "complete":
            events = store.events(r.run_id)
            closed = events[-1]["payload"].get("closed", []) if events else []
        entry: BranchEntry = {
            "status": r.status,
            "seed": r.seed,
            "run_id": r.run_id,
            "scores": store.scores(r.run_id),
            "curve": details.get("curve"),
            "movements": details.get("movements"),
            "closed": closed or [],
        }
        table[system][r.spec_hash][r.branch] = entry
        pooled[system][r.spec_hash][r.seed][r.branch] = entry
    specs = sorted(spec_ids, key=lambda h: spec_ids[h])
    return {
        "specs": specs,
        "spec_ids": spec_ids,
        "table": table,
        "pooled": pooled,
        "bodies": bodies,
        "isolation": modes,
        "not_isolated": left_out,
        "live_left_out": live,
    }


def leaderboard(
    store: Store,
    seed: int = BOOTSTRAP_SEED,
    spec_hashes: Sequence[str] | None = None,
    difference: float = DEFAULT_DIFFERENCE,
    require_isolated: bool = False,
) -> dict[str, Any]:
    data = collect(store, spec_hashes, require_isolated)
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
        # `--require-isolated`: agents left out because they ran in-process.
        "not_isolated": data["not_isolated"],
        "live_left_out": data["live_left_out"],
        # The paper's board, also at the top level for readers of the single-board layout.
        "assignments": paper["assignments"],
        "rows": paper["rows"],
        "incomplete": paper["incomplete"],
        "pairwise": paper["pairwise"],
        "power": paper["power"],
        "flags": paper["flags"],
        "loao_ranks": paper["loao_ranks"],
        "references": paper["references"],
    }


REFERENCE_AGENTS = {
    RANDOM_POLICY: "random policy (samples the permitted actions; base-rate forecasts)",
    NO_EVIDENCE: "no-evidence agent (the context-trained model, never buys evidence)",
    ORACLE_NAME: "oracle, a labelled reference (not an upper bound): the context-trained model "
    "told every candidate's outcome (reads them)",
}


def _board(data: BoardData, specs: Sequence[str], seed: int, difference: float) -> Board:
    bodies = data["bodies"]
    ceilings = Ceilings(bodies)
    rows: list[SystemRow] = []
    references: list[SystemRow] = []
    incomplete: list[str] = []
    reasons: dict[str, dict[str, list[str]]] = {}
    paired: dict[str, PairedScores] = {}
    reference_aucs: dict[str, dict[str, float]] = {}
    for system, runs_by_spec in sorted(data["pooled"].items()):
        if not any(s in runs_by_spec for s in specs):
            continue
        row, per = system_row(system, runs_by_spec, specs, data, ceilings, seed)
        row["isolation"] = data["isolation"].get(system) or "in-process"
        name = system.split("#")[0]
        if name in REFERENCE_AGENTS:
            # A reference agent is a reference row, never ranked, and says what it covers.
            references.append(
                {
                    **row,
                    "reference": REFERENCE_AGENTS[name],
                    "covers": f"{row['assignments']} of {len(specs)} assignments",
                }
            )
            reference_aucs[system] = _by_spec(per)
        elif row["complete"]:
            rows.append(row)
            paired[system] = per
        else:
            incomplete.append(system)
            reasons[system] = row["problems"]
    rows.sort(key=lambda r: -(r["adaptive_auc"] if r["adaptive_auc"] is not None else -1e9))
    for rank, row in enumerate(rows, 1):
        row["rank"] = rank
    aucs = {s: p["auc"] for s, p in paired.items()}
    pairwise = _pairwise(aucs, seed)
    flat = _flat_references(specs, bodies, ceilings, data["spec_ids"], seed)
    references.extend(flat)
    for r in flat:
        reference_aucs[r["system"]] = {
            p["assignment"]: p["adaptive_auc"] for p in r["per_assignment"]
        }
    ranked_aucs = {s: _by_spec(p) for s, p in paired.items()}
    n_seeds = len({int(bodies[s]["seed"]) for s in specs})
    power = power_line(
        power_pairs(ranked_aucs, reference_aucs),
        len(specs),
        difference,
        max(1, len(specs) // max(n_seeds, 1)),
        len(rows),
    )
    best = [ceilings.of_best(s) for s in specs]
    return {
        "assignments": [data["spec_ids"][s] for s in specs],
        "seeds": sorted({int(bodies[s]["seed"]) for s in specs}),
        "rows": rows,
        "references": references,
        "incomplete": incomplete,
        "incomplete_reasons": reasons,
        "pairwise": pairwise,
        "loao_ranks": _loao(aucs),
        "power": power,
        # The reference model's ceiling: a greedy best-T gain of the context-trained model,
        # not an upper bound on other learners (where it is exceeded or negative: `flags`).
        "reference_ceiling": float(np.mean(best)) if specs else None,
        "flags": board_notes(rows, references, [bodies[s] for s in specs], seed),
        "acceleration_target": "context-trained model score at t = 0 + 0.05 nats (per spec)",
        "context_model": _context_reading([bodies[s] for s in specs]),
    }


def _context_reading(bodies: Sequence[SpecBody]) -> str | None:
    """What the context-trained model read on a card's board, one clause per distinct reading
    (a store may hold several cards); None on the built-in records' boards."""
    from labreplay.suites.campaign.ceiling import context_reading

    readings = sorted({r for b in bodies if (r := context_reading(b)) is not None})
    return " | ".join(readings) or None


def _by_spec(per: PairedScores) -> dict[str, float]:
    """A system's adaptive AUC per assignment (spec id), from `system_row`'s paired lists."""
    return {str(s): json_number(a) for s, a in zip(per["spec"], per["auc"], strict=True)}


def _flat_references(
    specs: Sequence[str],
    bodies: Mapping[str, SpecBody],
    ceilings: Ceilings,
    spec_ids: Mapping[str, str],
    seed: int,
) -> list[SystemRow]:
    """Base-rate forecaster and context-trained model: their t = 0 panel score, held flat.
    Each assignment is labelled by its spec id (which names the partition seed) and carries
    its partition seed: short ids repeat when seeds are pooled."""
    from labreplay.suites.campaign.agents import base_rate_forecast
    from labreplay.suites.campaign.board_rows import ci
    from labreplay.suites.campaign.card_text import table_of
    from labreplay.suites.campaign.metrics import panel_loss

    base, context = [], []
    for s in specs:
        body = bodies[s]
        # the random reference's forecast (`RandomAgent.forecast`): the same for every query
        f = base_rate_forecast(
            body["context_rows"] or body["context_summary"],
            body["categories"],
            table_of(body["record"]),
        )
        loss, _ = panel_loss(
            {q["experiment_id"]: f for q in body["queries"]}, body["evaluator"], float(body["eps"])
        )
        base.append(-loss)
        context.append(ceilings.context_score(s))
    out: list[SystemRow] = []
    for label, values in (("base-rate forecaster", base), ("context-trained model", context)):
        skill = [v - c for v, c in zip(values, context, strict=True)]
        out.append(
            {
                "system": label,
                "reference": "flat: its t = 0 panel score at every t",
                "assignments": len(values),
                "covers": f"{len(values)} of {len(specs)} assignments",
                "adaptive_auc": float(np.mean(values)) if values else None,
                "skill_over_context": ci(skill, seed, "skill-over-context", label),
                "held_out_gain": 0.0,
                "selection_value": None,
                "reference_ceiling": None,
                "headroom_captured": 0.0 if values else None,
                "per_assignment": [
                    {
                        "assignment": spec_ids[s],
                        "partition_seed": int(bodies[s]["seed"]),
                        "assignment_id": bodies[s]["assignment"]["id"],
                        "adaptive_auc": v,
                        "skill_over_context": k,
                    }
                    for s, v, k in zip(specs, values, skill, strict=True)
                ],
            }
        )
    return out


def _pairwise(aucs: Mapping[str, list[float]], seed: int) -> list[PairwiseRow]:
    systems = sorted(aucs)
    out: list[PairwiseRow] = []
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
