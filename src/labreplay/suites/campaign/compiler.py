"""Bind: turn a partition of real records into one frozen EnvironmentSpec per assignment.

Each spec carries the agent-visible part (candidates and queries with descriptors only, the
declared context view, budgets, prices, rules) and an `evaluator` section with the recorded
outcomes and evidence of its candidates and queries. The runtime keeps the evaluator section
behind the firewall; the spec hash covers both, so neither can be edited unnoticed.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NotRequired, TypedDict

from labreplay.sdk import Missing, Record, atomic_write_text, normalised, sha256_json, to_json
from labreplay.sdk.engine import EnvironmentSpec, write_spec
from labreplay.sdk.events import JsonValue
from labreplay.sdk.scoring import CATEGORIES
from labreplay.suites.campaign.datafiles import DataProvenance
from labreplay.suites.campaign.json_values import json_object
from labreplay.suites.campaign.model import label_of
from labreplay.suites.campaign.protocol import (
    EVIDENCE_KINDS,
    REVIEW_KIND,
    Partition,
    ProtocolParams,
    partition,
    precursors_of,
)
from labreplay.suites.campaign.views import EvaluatorRecord, PanelItem, SpecBody, spec_body

if TYPE_CHECKING:
    from labreplay.suites.campaign.alab_outcome import EvidenceRule
    from labreplay.suites.campaign.card import ClaimEntry
    from labreplay.suites.campaign.card_compile import CardDeclaration


class IndexEntry(TypedDict):
    id: str
    kind: str
    candidates: int
    queries: int
    budgets: dict[str, int]
    spec_hash: str  # sealed (evaluator-side): kept in sealed/index.sealed.json
    file: str
    scorable_queries: int  # sealed: read from the held-out outcomes


class QCScore(TypedDict):
    assignment: str
    base_rate_score: float | None
    context_model_score: float | None


class TableQC(TypedDict):
    """What compile prints about a record card's table (`card_compile.table_qc`)."""

    decidable_rows: int
    rows: int
    rows_per_category: dict[str, int]
    panel_size: int
    assignments: int
    scores: list[QCScore]
    undecidable: NotRequired[dict[str, int]]  # rows per reason their outcome is undecidable
    replicates: NotRequired[dict[str, int]]  # rows sharing all descriptor values, and groups
    bins: NotRequired[QCBins]  # quantile bins: their cuts and context rows per bin


class QCBins(TypedDict):
    below: list[float]
    context_rows: dict[str, int]


class SpecIndex(TypedDict):
    """A compile's index.json (its sealed entries included until `write_specs` splits them:
    `split_index`, by the allow-lists at the end of this module)."""

    suite: str
    data_verified: bool | None
    modified_files: list[str] | None
    data_files: dict[str, str] | None  # sealed: the sha256 of the files read
    record: str
    protocol: str
    seed: int
    protocol_params: dict[str, JsonValue]
    eval_precursors: list[str]
    panel_size: int
    context_size: int
    assignments: list[IndexEntry]
    withheld_panel_experiments: int
    long_experiments: int
    short_experiments: int
    qc: NotRequired[TableQC]  # a record card's table (sealed: read from held-out outcomes)


class ContextSummary(TypedDict):
    """Outcome counts of the context experiments (a spec's `context_summary`)."""

    n_experiments: int  # context experiments (neither candidates nor queries)
    outcome_counts: dict[str, int]  # experiments per outcome ("physical_failure" or a category)
    per_precursor: dict[str, dict[str, int]]  # the same counts per precursor used


class AccelerationTarget(TypedDict):
    tau: float | None
    context_model_score_t0: float | None
    delta: float
    rule: str


class OutcomeFromEvidence(TypedDict, total=False):
    """What a built-in record adds to a spec's `record` section (nothing, for most)."""

    outcome_from_evidence: EvidenceRule


SUITE = "campaign"
SPEC_VERSION = "1"


def context_summary(records: Sequence[Record]) -> ContextSummary:
    """Per-precursor outcome counts and overall base rates of the context experiments."""
    return outcome_summary([(r.descriptors, r.outcome) for r in records])


def outcome_summary(
    rows: Sequence[tuple[Mapping[str, object], Mapping[str, object]]],
) -> ContextSummary:
    """The counts of `context_summary` over (descriptors, outcome) pairs: a record's, or a
    context row's as the agent sees it (the LLM prompt summarises long context rows)."""
    per: dict[str, Counter[str]] = {}
    overall: Counter[str] = Counter()
    for descriptors, outcome in rows:
        valid, category = outcome.get("valid"), outcome.get("category")
        if valid is not True:
            label = "physical_failure" if valid is False else "missing"
        else:
            label = category if isinstance(category, str) else "valid_uncategorised"
        overall[label] += 1
        for p in precursors_of(descriptors):
            per.setdefault(p, Counter())[label] += 1
    return {
        "n_experiments": len(rows),
        "outcome_counts": dict(sorted(overall.items())),
        "per_precursor": {p: dict(sorted(c.items())) for p, c in sorted(per.items())},
    }


def _visible(record: Record) -> PanelItem:
    descriptors = json_object(to_json(record.descriptors), "descriptors")
    return {"experiment_id": record.record_id, "descriptors": dict(descriptors)}


def _private(record: Record, kinds: Sequence[str]) -> EvaluatorRecord:
    evidence = {kind: to_json(record.evidence.get(kind, _missing_kind(kind))) for kind in kinds}
    private: EvaluatorRecord = {
        "outcome": dict(json_object(to_json(record.outcome), "outcome")),
        "evidence": evidence,
    }
    if "secondary" in record.provenance:  # a card's secondary outcomes (`outcome.secondary`)
        private["secondary"] = dict(json_object(record.provenance["secondary"], "secondary"))
    return private


def _missing_kind(kind: str) -> Missing:
    return Missing(f"the record holds no {kind.replace('_', ' ')}")


def _outcome_declaration(record_source: str) -> OutcomeFromEvidence:
    """Where a record's outcome is computed from evidence an agent can buy, the spec says so
    (`outcome_from_evidence`, printed on the board); other records' specs are unchanged."""
    if record_source != "alab-pipeline":
        return {}
    from labreplay.suites.campaign.alab_outcome import OUTCOME_FROM_EVIDENCE

    return {"outcome_from_evidence": OUTCOME_FROM_EVIDENCE}


def build_specs(
    records: Sequence[Record],
    record_source: str,
    params: ProtocolParams,
    seed: int,
    data: DataProvenance,
    *,
    categories: Sequence[str] = CATEGORIES,
    evidence_kinds: Sequence[str] = EVIDENCE_KINDS,
    record_extra: CardDeclaration | None = None,
    claims: Sequence[ClaimEntry] | None = None,
    together: Mapping[str, str] | None = None,
) -> tuple[Partition, list[EnvironmentSpec]]:
    """`data`: the real hashes of the files read (`datafiles.data_provenance`). A record card's
    table passes its own categories, evidence kinds, claims (name and the evidence kinds that
    support each) and what the card declares (`record_extra`, under `record`); the built-in
    records keep their bodies unchanged (no `claims` key: the four SDL-1 claims). `together`:
    replicate keys (`protocol.partition`)."""
    kinds = (*evidence_kinds, REVIEW_KIND) if REVIEW_KIND not in evidence_kinds else evidence_kinds
    by_id = {r.record_id: r for r in records}
    if len(by_id) != len(records):
        raise ValueError("duplicate record ids")
    part = partition(records, params, seed, together)
    context_records = [by_id[i] for i in part.context]
    summary = context_summary(context_records)
    context_rows = (  # one list shared by every spec of the seed: normalised once
        normalised([{**_visible(r), "outcome": to_json(r.outcome)} for r in context_records])
        if params.context_detail == "rows"
        else []
    )
    specs = []
    for a in part.assignments:
        body: dict[str, object] = {
            "record": {
                "source": record_source,
                "dataset_hashes": dict(data["dataset_hashes"]),
                "n_records": len(records),
                "data_files": len(data["files"]),
                "data_files_sha256": sha256_json(data["files"]),
                "data_verified": bool(data["verified"]),
                "modified_files": list(data["modified"]),
                **_outcome_declaration(record_source),
                **dict(record_extra or {}),
            },
            "protocol_params": params.to_json(),
            "seed": seed,
            "assignment": {"id": a.assignment_id, "kind": a.kind},
            "eval_precursors": list(part.eval_precursors),
            "budgets": dict(a.budgets),
            "prices": dict(params.evidence_prices),
            "eps": params.eps,
            "acceleration_target": None,  # bound below, from the context-trained model
            "categories": list(categories),
            "candidates": [_visible(by_id[i]) for i in a.candidates],
            "queries": [_visible(by_id[i]) for i in a.queries],
            **({"claims": [dict(c) for c in claims]} if claims is not None else {}),
            "context_summary": summary,
            "context_rows": context_rows,
            "evaluator": {i: _private(by_id[i], kinds) for i in (*a.candidates, *a.queries)},
            "roles": {
                "context": len(part.context),
                "candidates": len(a.candidates),
                "queries": len(a.queries),
                "withheld": len(part.panel) - len(a.candidates) - len(a.queries),
            },
        }
        body["acceleration_target"] = _acceleration_target(spec_body(body), params)
        specs.append(
            EnvironmentSpec(
                suite=SUITE,
                protocol=params.name,
                version=SPEC_VERSION,
                spec_id=f"{record_source}/{params.name}/seed{seed}/{a.assignment_id}",
                body=body,
            )
        )
    return part, specs


def _acceleration_target(body: SpecBody, params: ProtocolParams) -> AccelerationTarget:
    """tau = the context-trained model's t = 0 score + delta (None without a scorable panel)."""
    import math

    from labreplay.suites.campaign.ceiling import context_score

    score = context_score(body)
    tau = round(score + params.acceleration_target_delta, 6) if math.isfinite(score) else None
    return {
        "tau": tau,
        "context_model_score_t0": round(score, 6) if math.isfinite(score) else None,
        "delta": params.acceleration_target_delta,
        "rule": "context-trained model score at t = 0 plus delta",
    }


def _scorable(spec: EnvironmentSpec) -> int:
    """Held-out queries whose recorded outcome is known (the others are excluded, counted)."""
    evaluator = spec.body["evaluator"]
    return sum(
        1 for q in spec.body["queries"] if label_of(evaluator[q["experiment_id"]]["outcome"])
    )


def index_of(
    part: Partition,
    specs: Sequence[EnvironmentSpec],
    record_source: str,
    params: ProtocolParams,
    seed: int,
    data: DataProvenance | None = None,
) -> SpecIndex:
    return {
        "suite": SUITE,
        "data_verified": None if data is None else bool(data["verified"]),
        "modified_files": None if data is None else list(data["modified"]),
        "data_files": None if data is None else dict(data["files"]),
        "record": record_source,
        "protocol": params.name,
        "seed": seed,
        "protocol_params": params.to_json(),
        "eval_precursors": list(part.eval_precursors),
        "panel_size": len(part.panel),
        "context_size": len(part.context),
        "assignments": [
            {
                "id": s.body["assignment"]["id"],
                "kind": s.body["assignment"]["kind"],
                "candidates": len(s.body["candidates"]),
                "queries": len(s.body["queries"]),
                "budgets": s.body["budgets"],
                "spec_hash": s.spec_hash,
                "file": f"{s.body['assignment']['id']}.json",
                "scorable_queries": _scorable(s),
            }
            for s in specs
        ],
        "withheld_panel_experiments": len(part.panel)
        - sum(len(s.body["candidates"]) for s in specs),
        "long_experiments": sum(
            len(s.body["candidates"]) for s in specs if s.body["assignment"]["kind"] == "long"
        ),
        "short_experiments": sum(
            len(s.body["candidates"]) for s in specs if s.body["assignment"]["kind"] == "short"
        ),
    }


# The firewall, as allow-lists: what an agent may read is named here, and everything else a
# compile path puts in a spec body or an index (a new field included) goes to `sealed/`. Every
# name below is a function of the context experiments, the protocol and the card alone; the
# recorded outcomes of the panel and anything computed from them (the evaluator, the
# acceleration target, a table's QC scores, the count of scorable queries, the spec hash) and
# the sha256 of the data files and of the card (which cover the held-out outcomes) are sealed.
VISIBLE_BODY_FIELDS = frozenset(
    {
        "record",  # its keys in VISIBLE_RECORD_KEYS only
        "protocol_params",
        "seed",
        "assignment",
        "eval_precursors",
        "budgets",
        "prices",
        "eps",
        "categories",
        "candidates",
        "queries",
        "claims",
        "context_summary",
        "context_rows",
        "roles",
    }
)
VISIBLE_RECORD_KEYS = frozenset(
    {
        "source",
        "n_records",
        "data_files",  # a count
        "data_verified",
        "modified_files",  # paths (with --allow-modified-data), no hash
        "outcome_from_evidence",
        "card",  # its file name
        "outcome_rule",
        "grouping",
        "evidence_kinds",
        "table",  # what the card says of its table, and what the reference learner reads
    }
)
VISIBLE_INDEX_KEYS = frozenset(
    {
        "suite",
        "record",
        "protocol",
        "seed",
        "protocol_params",
        "eval_precursors",
        "panel_size",
        "context_size",
        "assignments",  # each entry's keys in VISIBLE_ASSIGNMENT_KEYS only
        "withheld_panel_experiments",
        "long_experiments",
        "short_experiments",
        "data_verified",
        "modified_files",
    }
)
VISIBLE_ASSIGNMENT_KEYS = frozenset({"id", "kind", "candidates", "queries", "budgets", "file"})


def sealed_fields(body: Mapping[str, JsonValue]) -> list[str]:
    """The body fields (and `record.KEY`s) that `write_spec` seals: all but the visible ones."""
    sealed = [k for k in body if k not in VISIBLE_BODY_FIELDS]
    record = body.get("record")
    if isinstance(record, Mapping):
        sealed += [f"record.{k}" for k in record if k not in VISIBLE_RECORD_KEYS]
    return sorted(sealed)


def split_index(index: SpecIndex) -> tuple[dict[str, object], dict[str, object]]:
    """(index.json, sealed/index.sealed.json): the sealed part keeps the shape of the visible
    one, its assignment entries keyed by assignment id."""
    entries: Sequence[Mapping[str, object]] = index["assignments"]
    visible: dict[str, object] = {k: v for k, v in index.items() if k in VISIBLE_INDEX_KEYS}
    sealed: dict[str, object] = {k: v for k, v in index.items() if k not in VISIBLE_INDEX_KEYS}
    visible["assignments"] = [
        {k: v for k, v in a.items() if k in VISIBLE_ASSIGNMENT_KEYS} for a in entries
    ]
    sealed["assignments"] = {
        str(a["id"]): {k: v for k, v in a.items() if k not in VISIBLE_ASSIGNMENT_KEYS}
        for a in entries
    }
    return visible, sealed


def write_specs(out_dir: str | Path, index: SpecIndex, specs: Sequence[EnvironmentSpec]) -> None:
    """Agent-visible specs and index.json (byte-identical whatever the held-out outcomes), and
    the sealed part under sealed/ (outcomes, targets, data hashes, spec hashes, QC)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for spec in specs:
        path = out_dir / f"{spec.body['assignment']['id']}.json"
        write_spec(spec, path, seal=sealed_fields(spec.body))
    visible, sealed = split_index(index)
    atomic_write_text(out_dir / "index.json", json.dumps(visible, indent=2, sort_keys=True) + "\n")
    (out_dir / "sealed").mkdir(exist_ok=True)
    atomic_write_text(
        out_dir / "sealed" / "index.sealed.json",
        json.dumps(sealed, indent=2, sort_keys=True) + "\n",
    )
