"""A-Lab Precursor Genome records: 1,035 pairwise reactions, joined with pipeline evidence.

Reads `precursor_genome/pg_samples.jsonl` (a per-sample reconstruction of the official ledger)
and, for the 191 samples the A-Lab pipeline ran as `PG_xxxx-1`, attaches that run's execution
record, thermal history, raw XRD scan and automated refinement (`records_alab`). Nothing is
generated or repaired: absent fields become `Missing(reason)`.

Outcome: `valid` is False for the 26 samples whose reaction category is null (the ledger's
unclassified physical failures) and True otherwise; `category` is the recorded category, or
Missing for a physical failure.

Refinement evidence (kind `refinement`, items in ledger order: first refinement case of the
first scan, then the active one). How `selected` is decided from the reconstruction:

* 500 samples carry the active (expert-selected) refinement (`active_*`): that item has
  `selected=True` with its origin and rank.
* The snapshot refinement (`snapshot_refinement_rwp`, the first case of the first scan, and
  the recorded phase list `phases_full`) is the same refinement when both its Rwp and its
  phase list equal the active one: then it is not listed twice. Otherwise it is listed with
  `selected=False`. In 65 samples only the Rwp differs while `phases_full` equals the active
  phases: the phase list then belongs to the active refinement, not to the first case, so the
  first case's `phases` is null (unknown), not a copy.
* Without `active_*` fields the reconstruction does not say whether the snapshot refinement
  is the selected one: `selected` is None (unknown), origin and rank null.

Expert review (kind `expert_review`): from `human_quality_score` (the final tier on the
paper's three-tier scale) and its history. Tier 1 or 2 counts as accepted, tier 3 as rejected:
the paper's support rule needs "an accepted tier 1 or tier 2 review". Missing for the 535
samples without a recorded score.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NotRequired, TypedDict, TypeVar, cast

from labreplay.errors import DataError
from labreplay.sdk import Missing, Record, read_file
from labreplay.sdk.data import data_file, loads_strict
from labreplay.sdk.events import JsonValue
from labreplay.suites.campaign import evidence as ev

if TYPE_CHECKING:
    from labreplay.suites.campaign.records_alab import PipelineRun

SOURCE = "precursor-genome"
PG_FILE = "precursor_genome/pg_samples.jsonl"
CATEGORIES = ("completely_reacted", "transformed", "partially_reacted", "unreacted")
PIPELINE_KINDS = ("execution_record", "thermal_history", "xrd_scan", "automated_refinement")
REQUIRED_FIELDS = (
    "sample_id", "precursor_1", "precursor_2", "target", "target_stoichiometry",
    "temperature_c", "time_min", "reaction_energy_ev_per_atom", "reaction_category",
    "snapshot_refinement_rwp", "phases_full",
)  # fmt: skip
# fields read as more than an opaque value: their JSON types are checked on load
TEXT_FIELDS = ("sample_id", "precursor_1", "precursor_2")
NUMBER_FIELDS = ("temperature_c", "time_min", "snapshot_refinement_rwp", "active_refinement_rwp")
NOT_IN_LEDGER = "not recorded in ledger"
T = TypeVar("T")


class PgRow(TypedDict):
    """One line of `pg_samples.jsonl`, as far as this loader reads it (`read_pg_rows` checks
    the required fields and the types of `TEXT_FIELDS` and `NUMBER_FIELDS`)."""

    sample_id: str
    precursor_1: str
    precursor_2: str
    target: JsonValue
    target_stoichiometry: JsonValue
    temperature_c: float | None
    time_min: float | None
    reaction_energy_ev_per_atom: JsonValue
    reaction_category: JsonValue
    snapshot_refinement_rwp: float | None
    phases_full: JsonValue
    active_refinement_rwp: NotRequired[float | None]
    active_phases: NotRequired[JsonValue]
    active_refinement_origin: NotRequired[JsonValue]
    active_refinement_rank: NotRequired[JsonValue]
    human_quality_score: NotRequired[JsonValue]
    human_quality_score_history: NotRequired[JsonValue]
    source: NotRequired[JsonValue]
    replay_split: NotRequired[JsonValue]
    active_scan_original_file: NotRequired[JsonValue]
    active_scan_filename_temp_c: NotRequired[JsonValue]
    active_scan_filename_time_min: NotRequired[JsonValue]


# --------------------------------------------------------------------------- shared sample form
# Both this reconstruction and the official ledger (`records_ledger`) are first brought into one
# plain "sample" dict, and one function turns a sample into a Record, so the two loaders cannot
# drift apart:
#   {"sample_id", "precursors", "target", "target_stoichiometry", "temperature_c", "time_min",
#    "reaction_energy_ev_per_atom", "reaction_category",
#    "refinements": [{"rwp", "phases" (list or None), "selected", "origin", "rank"}],
#    "review": {"tier", "history"} or None}


class Phase(TypedDict):
    name: str
    weight_fraction: float | None


class Refinement(TypedDict):
    """One refinement case of the shared sample form (and the content of its evidence item,
    with `rwp` rounded)."""

    rwp: float | None
    phases: list[Phase] | None  # None: not recorded for this case
    selected: bool | None  # None: the record does not say
    origin: JsonValue
    rank: JsonValue


class Review(TypedDict):
    tier: int  # the final tier on the paper's three-tier scale
    history: list[int]


class Sample(TypedDict):
    """The shared sample form of the comment above."""

    sample_id: str
    precursors: list[str]
    target: JsonValue
    target_stoichiometry: JsonValue
    temperature_c: float | None
    time_min: float | None
    reaction_energy_ev_per_atom: JsonValue
    reaction_category: JsonValue
    refinements: list[Refinement]
    review: Review | None


class ReviewContent(TypedDict):
    accepted: bool
    final_quality_tier: int
    score_history: list[int]


class SampleDescriptors(TypedDict):
    precursors: list[str]
    target: JsonValue
    target_stoichiometry: JsonValue | Missing
    temperature_c: float | Missing
    time_min: float | Missing
    reaction_energy_ev_per_atom: JsonValue | Missing
    elements: list[str]


class Outcome(TypedDict):
    """A record's outcome: Missing where the record does not decide it."""

    valid: bool | Missing
    category: str | Missing


class Conflict(TypedDict):
    kind: Literal["values_differ", "ledger_not_recorded"]
    field: str
    ledger: float | None
    pipeline: float
    pipeline_run: str


def phase_list(raw: JsonValue, *, file: str, record: str, field: str) -> list[Phase]:
    """[{name, weight_fraction}] with fractions rounded to 4 decimals."""
    if not isinstance(raw, list):
        raise DataError(
            "expected a list of phases", file=file, record=record, field=field, value=raw
        )
    out: list[Phase] = []
    for phase in raw:
        if not isinstance(phase, Mapping) or "name" not in phase:
            raise DataError(
                "phase without a name", file=file, record=record, field=field, value=phase
            )
        fraction = phase.get("weight_fraction")
        if fraction is not None and (
            isinstance(fraction, bool) or not isinstance(fraction, int | float)
        ):
            raise DataError(
                "phase weight is not a number", file=file, record=record, field=field, value=phase
            )
        out.append({"name": str(phase["name"]), "weight_fraction": ev.rounded(fraction, 4)})
    return out


def _refinement_line(sample_id: str, c: Refinement) -> str:
    state = {True: "selected", False: "not selected", None: "selection unknown"}[c["selected"]]
    if c["phases"] is None:
        phases = "phases not recorded"
    else:
        phases = ", ".join(f"{p['name'].split('_')[0]} {p['weight_fraction']}" for p in c["phases"])
    return f"Refinement of {sample_id} ({state}) Rwp {c['rwp']}%: {phases or 'no phases'}"


def refinement_evidence(
    sample_id: str, refinements: list[Refinement]
) -> list[dict[str, object]] | Missing:
    if not refinements:
        return Missing("no refinement recorded for this sample")
    items = []
    for index, refinement in enumerate(refinements):
        content: Refinement = {
            "rwp": ev.rounded(refinement["rwp"], 2),
            "phases": refinement["phases"],
            "selected": refinement["selected"],
            "origin": refinement["origin"],
            "rank": refinement["rank"],
        }
        items.append(
            ev.make_item(
                "refinement", sample_id, index, _refinement_line(sample_id, content), content
            )
        )
    return items


def review_evidence(sample_id: str, review: Review | None) -> list[dict[str, object]] | Missing:
    if review is None:
        return Missing("no expert review recorded for this sample")
    tier = int(review["tier"])
    content: ReviewContent = {
        "accepted": tier in (1, 2),
        "final_quality_tier": tier,
        "score_history": list(review["history"]),
    }
    verdict = "accepted" if content["accepted"] else "rejected"
    line = f"Expert review of {sample_id}: {verdict}, final quality tier {tier} (scores {content['score_history']})"
    return [ev.make_item("expert_review", sample_id, 0, line, content)]


def _recorded(value: T | None) -> T | Missing:
    return Missing(NOT_IN_LEDGER) if value is None else value


def sample_descriptors(sample: Sample, *, file: str) -> SampleDescriptors:
    precursors = list(sample["precursors"])
    return {
        "precursors": precursors,
        "target": sample["target"],
        "target_stoichiometry": _recorded(sample["target_stoichiometry"]),
        "temperature_c": _recorded(sample["temperature_c"]),
        "time_min": _recorded(sample["time_min"]),
        "reaction_energy_ev_per_atom": _recorded(sample["reaction_energy_ev_per_atom"]),
        "elements": ev.element_symbols(precursors, file=file, record=sample["sample_id"]),
    }


def sample_outcome(sample: Sample, *, file: str) -> Outcome:
    category = sample["reaction_category"]
    if category is None:
        return {"valid": False, "category": Missing("physical failure: not classified in ledger")}
    if not isinstance(category, str) or category not in CATEGORIES:
        raise DataError(
            f"unknown reaction category (expected one of {', '.join(CATEGORIES)})",
            file=file, record=sample["sample_id"], field="reaction_category", value=category,
        )  # fmt: skip
    return {"valid": True, "category": category}


def sample_record(sample: Sample, *, file: str, provenance: Mapping[str, JsonValue]) -> Record:
    """One ledger sample -> Record; pipeline evidence kinds start Missing (joined later)."""
    sid = sample["sample_id"]
    evidence: dict[str, list[dict[str, object]] | Missing] = {
        kind: Missing("pipeline evidence not loaded") for kind in PIPELINE_KINDS
    }
    evidence["refinement"] = refinement_evidence(sid, sample["refinements"])
    evidence["expert_review"] = review_evidence(sid, sample["review"])
    return Record(
        record_id=sid,
        source=SOURCE,
        descriptors=sample_descriptors(sample, file=file),
        outcome=sample_outcome(sample, file=file),
        evidence=evidence,
        provenance={"file": file, "conflicts": [], **provenance},
    )


# --------------------------------------------------------------------------- reconstruction


def _same_phases(a: list[Phase], b: list[Phase]) -> bool:
    def key(phases: list[Phase]) -> list[tuple[str, float]]:
        return sorted((p["name"], p["weight_fraction"] or 0.0) for p in phases)

    return key(a) == key(b)


def _refinements(row: PgRow, file: str) -> list[Refinement]:
    sid = row["sample_id"]
    snapshot_rwp = row["snapshot_refinement_rwp"]
    full = phase_list(row["phases_full"] or [], file=file, record=sid, field="phases_full")
    if row.get("active_refinement_rwp") is None:
        if snapshot_rwp is None and not full:
            return []
        return [
            {"rwp": snapshot_rwp, "phases": full, "selected": None, "origin": None, "rank": None}
        ]
    active_phases = phase_list(
        row.get("active_phases") or [], file=file, record=sid, field="active_phases"
    )
    active: Refinement = {
        "rwp": row.get("active_refinement_rwp"),
        "phases": active_phases,
        "selected": True,
        "origin": row.get("active_refinement_origin"),
        "rank": row.get("active_refinement_rank"),
    }
    same_phases = _same_phases(full, active_phases)
    if snapshot_rwp == active["rwp"] and same_phases:
        return [active]
    first: Refinement = {
        "rwp": snapshot_rwp,
        "phases": None if same_phases else full,
        "selected": False,
        "origin": None,
        "rank": None,
    }
    return [first, active]


def _review(row: PgRow, file: str) -> Review | None:
    sid, score = row["sample_id"], row.get("human_quality_score")
    if score is None:
        return None
    if isinstance(score, bool) or not isinstance(score, int) or score not in (1, 2, 3):
        raise DataError("quality tier must be 1, 2 or 3", file=file, record=sid,
                        field="human_quality_score", value=score)  # fmt: skip
    history = row.get("human_quality_score_history") or [score]
    where = {"file": file, "record": sid, "field": "human_quality_score_history"}
    return {"tier": score, "history": tier_history(history, **where)}


def tier_history(raw: JsonValue, *, file: str, record: str, field: str) -> list[int]:
    """A review's recorded tiers in order: a list of numbers, read as integers."""
    out: list[int] = []
    for tier in raw if isinstance(raw, list) else [None]:  # not a list: refused below
        if isinstance(tier, bool) or not isinstance(tier, int | float):
            raise DataError("quality tier history must be a list of tiers", file=file,
                            record=record, field=field, value=raw)  # fmt: skip
        out.append(int(tier))
    return out


def pg_sample(row: PgRow, file: str) -> Sample:
    """Reconstruction row -> the shared sample form."""
    return {
        "sample_id": row["sample_id"],
        "precursors": [row["precursor_1"], row["precursor_2"]],
        "target": row["target"],
        "target_stoichiometry": row["target_stoichiometry"],
        "temperature_c": row["temperature_c"],
        "time_min": row["time_min"],
        "reaction_energy_ev_per_atom": row["reaction_energy_ev_per_atom"],
        "reaction_category": row["reaction_category"],
        "refinements": _refinements(row, file),
        "review": _review(row, file),
    }


def read_pg_rows(path: Path) -> list[tuple[int, PgRow]]:
    """(line number, row) for every line; a bad line is a DataError naming it."""
    rows: list[tuple[int, PgRow]] = []
    seen: set[str] = set()
    try:
        lines = read_file(path, "record file").decode("utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"unreadable file ({exc})", file=str(path)) from exc
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:  # depth-limited, NaN/Infinity refused (JsonLimitError is a ValueError)
            row = loads_strict(line)
        except ValueError as exc:
            raise DataError(f"corrupt or truncated JSON line ({exc.args[0]})", file=str(path),
                            record=f"line {number}", value=line[:60]) from exc  # fmt: skip
        if not isinstance(row, dict):
            raise DataError(
                "line is not a JSON object",
                file=str(path),
                record=f"line {number}",
                value=line[:60],
            )
        sid = str(row.get("sample_id", f"line {number}"))
        for field in REQUIRED_FIELDS:
            if field not in row:
                raise DataError("required field missing", file=str(path), record=sid, field=field)
        _check_types(row, file=str(path), record=sid)
        if sid in seen:
            raise DataError(
                "duplicate sample id", file=str(path), record=sid, field="sample_id", value=sid
            )
        seen.add(sid)
        rows.append((number, cast(PgRow, row)))  # required fields and their types checked above
    return rows


def _check_types(row: Mapping[str, JsonValue], *, file: str, record: str) -> None:
    for field in TEXT_FIELDS:
        if not isinstance(row[field], str):
            raise DataError("expected a string", file=file, record=record, field=field,
                            value=row[field])  # fmt: skip
    for field in NUMBER_FIELDS:
        value = row.get(field)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise DataError("expected a number or null", file=file, record=record, field=field,
                            value=value)  # fmt: skip


def _pg_provenance(row: PgRow, number: int) -> dict[str, JsonValue]:
    out: dict[str, JsonValue] = {
        "row": number,
        "upstream": row.get("source"),
        "replay_split": row.get("replay_split"),
    }
    scan: dict[str, JsonValue] = {
        "active_scan_original_file": row.get("active_scan_original_file"),
        "active_scan_filename_temp_c": row.get("active_scan_filename_temp_c"),
        "active_scan_filename_time_min": row.get("active_scan_filename_time_min"),
    }
    out.update((key, value) for key, value in scan.items() if value is not None)
    return out


def _conflicts(sample: Sample, run: PipelineRun) -> list[Conflict]:
    """Where the pipeline's recorded heating differs from the ledger's.

    Two kinds: `values_differ` (both recorded, different) and `ledger_not_recorded` (the
    pipeline holds a value where the ledger has none). The descriptor keeps the ledger's value
    or its Missing either way: a conflict is shown, never resolved.
    """
    out: list[Conflict] = []
    heating = run["heating"]
    pairs = (
        ("temperature_c", sample["temperature_c"], heating["temperature_c"]),
        ("time_min", sample["time_min"], heating["time_min"]),
    )
    for field, ledger, pipeline in pairs:
        kind: Literal["values_differ", "ledger_not_recorded"]
        if pipeline is None:
            continue
        if ledger is None:  # the descriptor is Missing
            kind, ledger_value = "ledger_not_recorded", None
        elif float(ledger) != float(pipeline):
            kind, ledger_value = "values_differ", ledger
        else:
            continue
        out.append(
            {
                "kind": kind,
                "field": field,
                "ledger": ledger_value,
                "pipeline": pipeline,
                "pipeline_run": run["name"],
            }
        )
    return out


def load_precursor_genome(
    data_dir: Path, *, with_pipeline: bool = True, use_cache: bool = True
) -> list[Record]:
    """All 1,035 samples in file order; with_pipeline joins the 191 `PG_xxxx-1` runs."""
    path = data_file(data_dir, PG_FILE)
    samples, records = [], []
    for number, row in read_pg_rows(path):
        sample = pg_sample(row, PG_FILE)
        samples.append(sample)
        records.append(sample_record(sample, file=PG_FILE, provenance=_pg_provenance(row, number)))
    if not with_pipeline:
        return records
    from labreplay.suites.campaign.records_alab import load_pipeline_runs

    runs = load_pipeline_runs(data_dir, use_cache=use_cache)
    joined = []
    for sample, record in zip(samples, records, strict=True):
        run = runs.get(f"{record.record_id}-1")
        evidence = dict(record.evidence)
        provenance = dict(record.provenance)
        if run is None:
            for kind in PIPELINE_KINDS:
                evidence[kind] = Missing("no A-Lab pipeline run of this sample in the data release")
            provenance["pipeline_run"] = None
        else:
            for kind in PIPELINE_KINDS:
                evidence[kind] = run["evidence"][kind]
            provenance["pipeline_run"] = run["name"]
            provenance["conflicts"] = _conflicts(sample, run)
        joined.append(
            Record(
                record.record_id,
                record.source,
                record.descriptors,
                record.outcome,
                evidence,
                provenance,
            )
        )
    return joined
