"""Loader for the official Precursor Genome ledger (Zenodo 10.5281/zenodo.21285546).

`ledger_precursor_genome.json` is not reachable from the development machines, so this reads
the layout documented in the data README (inferred from public parsing code):

    {"samples": [{"sample_id", "target_compound", "target_stoichiometry",
                  "precursors": [{"formula"} or {"name"}],
                  "synthesis": {"heating_temperature", "heating_time"},
                  "reaction_energy_ev_per_atom",
                  "outcome": {"reaction_category", "phases": [{"name", "weight_percent"}]},
                  "active_scan_index",
                  "characterization": {"xrd": {"scans": [
                      {"active_case_index", "is_active", "status",
                       "refinement_cases": [{"rank", "origin", "rwp", "phase_weights",
                                             "verification": {"human_quality_score",
                                                              "human_quality_score_history"}}]}]}}}]}

Every refinement case of every scan becomes one `refinement` item, in scan then case order.
`selected` is True for the case at (`active_scan_index`, that scan's `active_case_index`),
False for the others, and None (unknown) when the sample does not name its active case.
`phase_weights` (name -> weight, or a list of {name, weight_fraction|weight_percent}) is read
as fractions; values are taken as percent and divided by 100 when any exceeds 1 or they sum
above 1.5 (the rule of the public parser). A case without `phase_weights` has `phases` null.
The expert review comes from the active case's `verification` (`human_quality_score_history`
is our assumption of the history field's name; without it the history is the final score).
Records are built by the same function as `records_pg`, so both loaders agree on descriptors,
outcome, refinement and review evidence.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from labreplay.errors import DataError
from labreplay.sdk import Record, read_file
from labreplay.sdk.data import JsonLimitError, loads_strict
from labreplay.sdk.events import JsonValue
from labreplay.suites.campaign import evidence as ev
from labreplay.suites.campaign.records_pg import (
    Phase,
    Refinement,
    Review,
    Sample,
    sample_record,
    tier_history,
)

_NAN = "expected a number or null"
REQUIRED_FIELDS = (
    "sample_id", "target_compound", "precursors", "synthesis",
    "reaction_energy_ev_per_atom", "outcome",
)  # fmt: skip


class _Where:
    """File and record named by every error raised while reading one sample."""

    def __init__(self, file: str, record: str) -> None:
        self.file, self.record = file, record

    def error(self, message: str, field: str, value: object = None) -> DataError:
        return DataError(message, file=self.file, record=self.record, field=field, value=value)

    def mapping(self, raw: JsonValue, field: str) -> Mapping[str, JsonValue]:
        if raw is None:
            return {}
        if not isinstance(raw, Mapping):
            raise self.error("expected a JSON object", field, raw)
        return raw

    def listing(self, raw: JsonValue, field: str) -> list[JsonValue]:
        if raw is None:
            return []
        if not isinstance(raw, list):
            raise self.error("expected a JSON list", field, raw)
        return raw

    def number(self, raw: JsonValue, field: str, message: str) -> float | None:
        if raw is not None and (isinstance(raw, bool) or not isinstance(raw, int | float)):
            raise self.error(message, field, raw)
        return raw


def _weights(raw: JsonValue, where: _Where, field: str) -> list[Phase] | None:
    if raw is None:
        return None
    if isinstance(raw, Mapping):
        pairs = [(str(name), value) for name, value in raw.items()]
    elif isinstance(raw, list):
        pairs = []
        for item in raw:
            phase = where.mapping(item, field)
            value = phase.get("weight_fraction", phase.get("weight_percent"))
            pairs.append((str(phase.get("name")), value))
    else:
        raise where.error("phase weights must be an object or a list", field, raw)
    values = []
    for name, value in pairs:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise where.error(f"phase weight of {name} is not a number", field, value)
        values.append(float(value))
    if any(v > 1.0 for v in values) or sum(values) > 1.5:
        values = [v / 100.0 for v in values]
    return [
        {"name": n, "weight_fraction": ev.rounded(v, 4)}
        for (n, _), v in zip(pairs, values, strict=True)
    ]


def _refinements_and_review(
    sample: Mapping[str, JsonValue], where: _Where
) -> tuple[list[Refinement], Review | None]:
    xrd = where.mapping(
        where.mapping(sample.get("characterization"), "characterization").get("xrd"),
        "characterization.xrd",
    )
    scans = where.listing(xrd.get("scans"), "characterization.xrd.scans")
    active_scan = sample.get("active_scan_index")
    refinements: list[Refinement] = []
    review: Review | None = None
    for i, raw_scan in enumerate(scans):
        scan = where.mapping(raw_scan, f"scans[{i}]")
        active_case = scan.get("active_case_index")
        known = isinstance(active_scan, int) and isinstance(active_case, int)
        cases = where.listing(scan.get("refinement_cases"), f"scans[{i}].refinement_cases")
        for j, raw_case in enumerate(cases):
            field = f"scans[{i}].refinement_cases[{j}]"
            case = where.mapping(raw_case, field)
            selected = (i == active_scan and j == active_case) if known else None
            rwp = where.number(case.get("rwp"), f"{field}.rwp", "rwp is not a number")
            refinements.append(
                {
                    "rwp": rwp,
                    "phases": _weights(case.get("phase_weights"), where, f"{field}.phase_weights"),
                    "selected": selected,
                    "origin": case.get("origin"),
                    "rank": case.get("rank"),
                }
            )
            verification = where.mapping(case.get("verification"), f"{field}.verification")
            score = verification.get("human_quality_score")
            if selected and score is not None:
                if (
                    isinstance(score, bool)
                    or not isinstance(score, int | float)
                    or score not in (1, 2, 3)
                ):
                    raise where.error(
                        "quality tier must be 1, 2 or 3", f"{field}.verification", score
                    )
                history = verification.get("human_quality_score_history") or [score]
                at = f"{field}.verification.human_quality_score_history"
                tiers = tier_history(history, file=where.file, record=where.record, field=at)
                review = {"tier": int(score), "history": tiers}
    return refinements, review


def _precursors(sample: Mapping[str, JsonValue], where: _Where) -> list[str]:
    out = []
    for k, raw in enumerate(where.listing(sample["precursors"], "precursors")):
        entry = where.mapping(raw, f"precursors[{k}]")
        formula = entry.get("formula") or entry.get("name")
        if not isinstance(formula, str) or not formula:
            raise where.error("precursor has neither formula nor name", f"precursors[{k}]", raw)
        out.append(formula)
    if not out:
        raise where.error("sample has no precursors", "precursors", sample["precursors"])
    return out


def ledger_sample(sample: Mapping[str, JsonValue], where: _Where) -> Sample:
    synthesis = where.mapping(sample["synthesis"], "synthesis")
    outcome = where.mapping(sample["outcome"], "outcome")
    refinements, review = _refinements_and_review(sample, where)
    temperature, time = synthesis.get("heating_temperature"), synthesis.get("heating_time")
    return {
        "sample_id": where.record,
        "precursors": _precursors(sample, where),
        "target": sample["target_compound"],
        "target_stoichiometry": sample.get("target_stoichiometry"),
        "temperature_c": where.number(temperature, "synthesis.heating_temperature", _NAN),
        "time_min": where.number(time, "synthesis.heating_time", _NAN),
        "reaction_energy_ev_per_atom": sample["reaction_energy_ev_per_atom"],
        "reaction_category": outcome.get("reaction_category"),
        "refinements": refinements,
        "review": review,
    }


def load_official_ledger(path: Path) -> list[Record]:
    """Every sample of an official ledger file, in file order."""
    file = str(path)
    try:
        payload = loads_strict(read_file(path, "ledger file").decode("utf-8"))
    except JsonLimitError as exc:  # invalid, truncated, too deep, or NaN/Infinity
        reason = str(exc).removeprefix("invalid JSON ")  # "at line L column C: why"
        raise DataError(f"corrupt or truncated JSON {reason}", file=file) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"unreadable ledger ({exc})", file=file) from exc
    if not isinstance(payload, Mapping) or not isinstance(payload.get("samples"), list):
        raise DataError("expected an object with a 'samples' list", file=file, field="samples")
    records = []
    seen: set[str] = set()
    for index, raw in enumerate(payload["samples"]):
        if not isinstance(raw, Mapping):
            raise DataError("sample is not a JSON object", file=file, record=f"samples[{index}]")
        record_name = str(raw.get("sample_id", f"samples[{index}]"))
        for field in REQUIRED_FIELDS:
            if field not in raw:
                raise DataError(
                    "required field missing", file=file, record=record_name, field=field
                )
        if record_name in seen:
            raise DataError("duplicate sample id", file=file, record=record_name, field="sample_id")
        seen.add(record_name)
        sample = ledger_sample(raw, _Where(file, record_name))
        records.append(sample_record(sample, file=path.name, provenance={"row": index}))
    return records
