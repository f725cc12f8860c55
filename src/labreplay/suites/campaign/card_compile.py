"""Compile one partition seed of a record card: the built-in records and lab tables alike.

Built-in rules (`precursor-genome`, `alab-pipeline`) load through their own loaders, with the
sdl1 defaults, so their specs are byte-identical whether named by `--record` or by their card.
A table (rules `bins`, `columns`) gets its protocol from declared scaling rules
(`table_protocol`), which the card's `[protocol]` section may override:

- evaluation groups: a quarter of the grouping levels per grouping column (at least 1), so
  the panel holds about a quarter of the record, as on the Precursor Genome (255 of 1,035);
- long candidates: decidable rows / 48, clamped to [4, 32] (32 from 1,536 decidable rows);
- experiment budget: 3/8 of the long candidates (12 of 32, as on the Precursor Genome), at
  least 1; evidence budget: the experiment budget x min(3, evidence kinds) x the highest
  price, so every kind can be bought; review budget 0 unless a kind uses the reviews budget.
- declared instead (the card's `[scaling]`): `evidence_share` of buying every kind on every
  experiment (binds with mixed prices), `panel_share` of the decidable rows in the panel
  (stable across seeds when group sizes differ).
A partition without two assignments is refused with the numbers that fall short.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from labreplay.errors import DataError
from labreplay.sdk import Record, sha256_file, sha256_json
from labreplay.sdk.data import resolve_data_dir
from labreplay.sdk.engine import EnvironmentSpec
from labreplay.suites.campaign.card import (
    Bin,
    ClaimEntry,
    EvidenceEntry,
    RecordCard,
    builtin_card_path,
    check_sources,
    load_card,
)
from labreplay.suites.campaign.card_text import TableDeclaration
from labreplay.suites.campaign.compiler import QCScore, SpecIndex, TableQC, build_specs, index_of
from labreplay.suites.campaign.datafiles import DataProvenance
from labreplay.suites.campaign.protocol import (
    EVIDENCE_KINDS,
    REVIEW_KIND,
    Partition,
    ProtocolParams,
    protocol_for,
)

if TYPE_CHECKING:
    from labreplay.suites.campaign.alab_outcome import EvidenceRule

BUILTIN_RECORDS = ("precursor-genome", "alab-pipeline")


class CardDeclaration(TypedDict):
    """What a table's specs carry of its card (under `record`)."""

    card: str
    card_sha256: str
    outcome_rule: str
    grouping: list[str]
    evidence_kinds: list[EvidenceEntry]
    table: TableDeclaration
    outcome_from_evidence: NotRequired[EvidenceRule]


RECORDS = ("precursor-genome", "alab-pipeline")


def load_records(record: str, data_dir: str | Path | None = None) -> list[Record]:
    root = resolve_data_dir(data_dir)
    if record == "precursor-genome":
        from labreplay.suites.campaign.records_pg import load_precursor_genome

        return load_precursor_genome(root)
    if record == "alab-pipeline":
        from labreplay.suites.campaign.records_alab import load_alab_pipeline

        return load_alab_pipeline(root)
    raise DataError(f"unknown campaign record (choose from {list(RECORDS)})", value=record)


def resolve_card(record: str | None, record_card: str | Path | None) -> RecordCard:
    if record is not None and record_card is not None:
        raise DataError("give a built-in record or a record card, not both", field="record",
                        value=record)  # fmt: skip
    if record_card is not None:
        return load_card(record_card)
    name = record or "precursor-genome"
    if name not in BUILTIN_RECORDS:
        raise DataError(
            f"unknown campaign record (choose from {list(BUILTIN_RECORDS)}, or pass a record "
            "card: --record-card NAME.card.toml)",
            value=name,
        )
    return load_card(builtin_card_path(name))


def compile_card(
    card: RecordCard,
    seed: int,
    data_dir: Path,
    records: Sequence[Record] | None,
    allow_modified: bool,
    overrides: Mapping[str, object],
) -> tuple[Partition, list[EnvironmentSpec], SpecIndex]:
    if card.builtin:
        return _compile_builtin(card, seed, data_dir, records, allow_modified, overrides)
    return _compile_table(card, seed, data_dir, records, allow_modified, overrides)


def _compile_builtin(
    card: RecordCard,
    seed: int,
    data_dir: Path,
    records: Sequence[Record] | None,
    allow_modified: bool,
    overrides: Mapping[str, object],
) -> tuple[Partition, list[EnvironmentSpec], SpecIndex]:
    from labreplay.suites.campaign.datafiles import data_provenance

    kinds = [e.kind for e in card.evidence]
    if sorted(kinds) != sorted((*EVIDENCE_KINDS, REVIEW_KIND)):
        raise card.error(
            f"rule {card.rule!r} provides exactly the kinds {[*EVIDENCE_KINDS, REVIEW_KIND]}",
            "evidence", ", ".join(kinds),
        )  # fmt: skip
    if list(card.grouping) != ["precursors"]:
        raise card.error(f"rule {card.rule!r} groups by precursors", "grouping", list(card.grouping))  # fmt: skip
    data = data_provenance(card.rule, data_dir, allow_modified)
    check_sources(card, data_dir, allow_modified, known=data["files"])
    prices = {e.kind: e.price for e in card.evidence if e.budget == "evidence"}
    options: dict[str, object] = {**card.protocol, **overrides}
    if any(p != 1 for p in prices.values()):
        options.setdefault("evidence_prices", prices)
    params = protocol_for(card.rule, **options)
    recs = list(records) if records is not None else load_records(card.rule, data_dir)
    part, specs = build_specs(recs, card.name, params, seed, data)
    return part, specs, index_of(part, specs, card.name, params, seed, data)


def table_protocol(
    card: RecordCard, records: Sequence[Record], seed: int = 0, **overrides: Any
) -> ProtocolParams:
    """The declared scaling rules (module docstring; the card's `scaling` replaces two of
    them); card and caller overrides win."""
    from labreplay.suites.campaign.protocol import decidable
    from labreplay.suites.campaign.table_record import GROUPS_FIELD

    levels: dict[str, set[str]] = {c: set() for c in card.grouping}
    for r in records:
        if decidable(r):
            for g in r.descriptors[GROUPS_FIELD]:
                levels[g.split("=", 1)[0]].add(g)
    eval_groups = sum(max(1, len(v) // 4) for v in levels.values())
    n_decidable = sum(1 for r in records if decidable(r))
    long_candidates = min(32, max(4, n_decidable // 48))
    experiments = max(1, round(long_candidates * 3 / 8))
    evidence_kinds = [e for e in card.evidence if e.budget == "evidence"]
    top_price = max((e.price for e in evidence_kinds), default=1)
    evidence = experiments * min(3, len(evidence_kinds)) * top_price
    scaling = card.scaling or {}
    if "evidence_share" in scaling:  # a share of buying every kind on every experiment
        every = experiments * sum(e.price for e in evidence_kinds)
        evidence = max(top_price, round(scaling["evidence_share"] * every))
    if "panel_share" in scaling:
        eval_groups = _groups_for_share(records, levels, scaling["panel_share"], seed)
    rules: dict[str, Any] = {
        "eval_precursors": eval_groups,
        "long_candidates": long_candidates,
        "experiment_budget": experiments,
        "evidence_budget": evidence,
        "review_budget": 0,
        "evidence_prices": {e.kind: e.price for e in evidence_kinds},
        "panel_requires_outcome": True,
        "expected_panel": None,
        "context_detail": "rows",  # the reference learner reads the context rows
    }
    return ProtocolParams(**{**rules, **card.protocol, **overrides})


def _groups_for_share(
    records: Sequence[Record], levels: Mapping[str, set[str]], share: float, seed: int
) -> int:
    """The number of evaluation groups whose draw at `seed` (`protocol.drawn_groups`) puts
    closest to `share` of the decidable rows in the panel (`scaling.panel_share`; the fewest
    on a tie). Draws of k and k + 1 groups differ, so every k is tried until the panel passes
    twice the target."""
    from labreplay.suites.campaign.protocol import decidable, drawn_groups, precursors_of

    rows: dict[str, set[str]] = {}
    for r in records:
        if decidable(r):
            for g in precursors_of(r.descriptors):
                rows.setdefault(g, set()).add(r.record_id)
    groups = sorted(g for v in levels.values() for g in v)
    target = share * sum(1 for r in records if decidable(r))
    best, best_gap = 1, math.inf
    for k in range(1, len(groups) + 1):
        size = len(set().union(*(rows[g] for g in drawn_groups(groups, k, seed, "sdl1"))))
        if abs(size - target) < best_gap:
            best, best_gap = k, abs(size - target)
        if size > 2 * target:
            break
    return best


def _compile_table(
    card: RecordCard,
    seed: int,
    data_dir: Path,
    records: Sequence[Record] | None,
    allow_modified: bool,
    overrides: Mapping[str, object],
) -> tuple[Partition, list[EnvironmentSpec], SpecIndex]:
    from labreplay.suites.campaign.protocol import decidable
    from labreplay.suites.campaign.table_record import load_table_records, replicate_keys

    files, modified = check_sources(card, data_dir, allow_modified)
    recs = list(records) if records is not None else load_table_records(card, data_dir)
    bins = card.bins
    if card.quantiles is not None:
        recs, bins = context_bins(
            card, recs, seed, lambda rs: table_protocol(card, rs, seed, **overrides)
        )
    params = table_protocol(card, recs, seed, **overrides)
    if params.evidence_budget < min(params.evidence_prices.values()):
        raise card.error(
            f"the evidence budget ({params.evidence_budget}) buys no evidence (cheapest price "
            f"{min(params.evidence_prices.values())})",
            "protocol.evidence_budget", params.evidence_budget,
        )  # fmt: skip
    data: DataProvenance = {
        "dataset_hashes": {card.name: sha256_json(sorted([p, d] for p, d in files.items()))},
        "files": files,
        "verified": not modified,
        "modified": sorted(modified),
    }
    extra: CardDeclaration = {
        "card": card.file.name,
        "card_sha256": sha256_file(card.file),
        "outcome_rule": card.rule,
        "grouping": list(card.grouping),

        "evidence_kinds": [
            {"kind": e.kind, "reveals": e.reveals, "shows": e.shows, "budget": e.budget,
             "price": e.price} for e in card.evidence
        ],
        "table": table_declaration(card, bins),
    }  # fmt: skip
    deciding = [e.kind for e in card.evidence if e.reveals in (card.outcome_column, card.category_column)]  # fmt: skip
    if deciding:
        # The kinds whose reveal decides the recorded outcome under the card's rule (a measured
        # yield and its bin): declared as the A-Lab record's is, and printed on the board.
        extra["outcome_from_evidence"] = {
            "rule": f"{card.name}: {card.rule} of {card.outcome_column or card.category_column}",
            "fields": {"category": deciding},
            "note": "the outcome is read off these purchasable evidence kinds by the card's "
            "rule: buying one on a candidate reveals its recorded outcome",
        }
    part, specs = build_specs(
        recs, card.name, params, seed, data,
        categories=card.categories,
        evidence_kinds=tuple(e.kind for e in card.evidence),
        record_extra=extra,
        claims=table_claims(card, deciding),
        together=replicate_keys(recs) or None,
    )  # fmt: skip
    long = [a for a in part.assignments if a.kind == "long"]
    if len(part.assignments) < 2:
        raise card.error(
            f"record too small for protocol sdl1 at seed {seed}: panel {len(part.panel)} "
            f"decidable experiments in {len(part.eval_precursors)} evaluation group(s) gives "
            f"{len(long)} long and {len(part.assignments) - len(long)} short assignments; "
            f"needs 2 long x {params.long_candidates} or 2 short x "
            f"{params.min_short_candidates} candidates",
            "protocol", f"{sum(1 for r in recs if decidable(r))} decidable rows",
        )  # fmt: skip
    index = index_of(part, specs, card.name, params, seed, data)
    index["qc"] = table_qc(recs, part, specs)
    if card.quantiles is not None:  # the balance of the cut, on the rows it was cut on
        context = set(part.context)
        per_bin = Counter(str(r.outcome["category"]) for r in recs if r.record_id in context and decidable(r))  # fmt: skip
        index["qc"]["bins"] = {
            "below": [b.below for b in bins if b.below is not None],
            "context_rows": {b.category: per_bin[b.category] for b in bins},
        }
    return part, specs, index


def context_bins(
    card: RecordCard,
    records: list[Record],
    seed: int,
    params_of: Callable[[list[Record]], ProtocolParams],
) -> tuple[list[Record], tuple[Bin, ...]]:
    """Quantile bins (`outcome.bins = {quantiles = N}`) cut on the partition's context rows
    alone, and the records binned by them. A censored cell's decidability may move with the
    cuts, and the panel with it: repeated until the context is stable (at most 4 times)."""
    from labreplay.suites.campaign.protocol import partition
    from labreplay.suites.campaign.table_record import (
        bin_of,
        numbers,
        quantile_bins,
        rebinned,
        replicate_keys,
    )

    together = replicate_keys(records) or None

    def context_of(recs: list[Record]) -> set[str]:
        return set(partition(recs, params_of(recs), seed, together).context)  # fmt: skip

    binned = records
    for _ in range(4):
        context = context_of(binned)
        cells = [r.provenance["outcome_cell"] for r in records if r.record_id in context]
        bins = quantile_bins(card, cells)
        per_bin = Counter(bin_of(v, bins) for v in numbers(cells))
        for b in bins:
            if not per_bin[b.category]:
                raise card.error(
                    f"quantile bins leave {b.category!r} empty on the {len(cells)} context rows "
                    f"at seed {seed} (tied values: cuts {[c.below for c in bins[:-1]]})",
                    "outcome.bins", {"quantiles": card.quantiles},
                )  # fmt: skip
        binned = rebinned(card, records, bins)
        if context_of(binned) == context:
            return binned, bins
    raise card.error(f"quantile bins do not settle at seed {seed} (censored cells move the panel)",
                     "outcome.bins", {"quantiles": card.quantiles})  # fmt: skip


def table_declaration(card: RecordCard, bins: Sequence[Bin]) -> TableDeclaration:
    """What the agent reads of the card (`card_text`) and what the reference learner reads."""
    from labreplay.suites.campaign.learner import LEARNER
    from labreplay.suites.campaign.table_record import GROUPS_FIELD

    grouped_apart = any(c not in card.descriptors for c in card.grouping)
    return {
        "description": card.description,
        "descriptors": [*card.descriptors, *([GROUPS_FIELD] if grouped_apart else [])],
        "categories": category_meanings(card, bins),
        "validity": card.valid_column is not None,
        "evidence": {e.kind: e.shows for e in card.evidence},
        "learner": LEARNER,
    }


def category_meanings(card: RecordCard, bins: Sequence[Bin]) -> dict[str, str]:
    """Each category's meaning under the card's rule: its bin of the outcome column, or the
    value recorded in the category column."""
    if card.rule != "bins":
        return {k: f"recorded as {k!r} in column {card.category_column}" for k in card.categories}
    out: dict[str, str] = {}
    low, column = None, card.outcome_column
    for b in bins:
        if b.below is None:
            out[b.category] = f"{column} \u2265 {low:g}" if low is not None else f"any {column}"
        else:
            out[b.category] = (
                f"{low:g} \u2264 " if low is not None else ""
            ) + f"{column} < {b.below:g}"
        low = b.below
    return out


def table_claims(card: RecordCard, deciding: Sequence[str]) -> list[ClaimEntry]:
    """The claims a table's agent states at each closure: the card's, else one claim
    `outcome_category` ("the evidence inspected supports the outcome forecast"), supported when
    every evidence kind that reveals the outcome (else every declared kind) was inspected."""
    if card.claims is not None:
        return [{"name": n, "supported_by": list(kinds)} for n, kinds in card.claims]
    kinds = list(deciding) or [e.kind for e in card.evidence]
    return [{"name": "outcome_category", "supported_by": kinds}]


def table_qc(
    records: Sequence[Record], part: Partition, specs: Sequence[EnvironmentSpec]
) -> TableQC:
    """What compile prints about a table: decidable rows, rows per category, panel size,
    assignments, and per assignment the base-rate score of its held-out queries (mean
    log-likelihood of the recorded category under the context's category frequencies, +1
    smoothing) next to the context-trained model's score bound in the spec."""
    from collections import Counter

    from labreplay.suites.campaign.protocol import decidable
    from labreplay.suites.campaign.table_record import replicate_keys

    per_category = Counter(
        str(r.outcome["category"]) for r in records if r.outcome.get("valid") is True
    )
    scores: list[QCScore] = []
    for spec in specs:
        body = spec.body
        counts = Counter(body["context_summary"]["outcome_counts"])
        total = sum(counts[c] for c in body["categories"]) + len(body["categories"])
        outcomes = [body["evaluator"][q["experiment_id"]]["outcome"] for q in body["queries"]]
        losses = [
            -math.log((counts[o["category"]] + 1) / total)
            for o in outcomes
            if o.get("valid") is True
        ]
        target = body["acceleration_target"]["context_model_score_t0"]
        scores.append(
            {
                "assignment": body["assignment"]["id"],
                "base_rate_score": round(-sum(losses) / len(losses), 4) if losses else None,
                "context_model_score": target,
            }
        )
    qc: TableQC = {
        "decidable_rows": sum(1 for r in records if decidable(r)),
        "rows": len(records),
        "rows_per_category": dict(sorted(per_category.items())),
        "panel_size": len(part.panel),
        "assignments": len(part.assignments),
        "scores": scores,
    }
    reasons = Counter(_undecidable_reason(r) for r in records if not decidable(r))
    if reasons:
        qc["undecidable"] = dict(reasons.most_common())
    if replicates := replicate_keys(records):
        qc["replicates"] = {"rows": len(replicates), "groups": len(set(replicates.values()))}
    return qc


def _undecidable_reason(record: Record) -> str:
    """The category's Missing reason (a table's reason alone, see `table_record`), else the
    validity's."""
    from labreplay.sdk import Missing

    for key in ("category", "valid"):
        value = record.outcome.get(key)
        if isinstance(value, Missing):
            return value.reason
    return "no outcome"
