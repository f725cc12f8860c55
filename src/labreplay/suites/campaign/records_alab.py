"""A-Lab pipeline records (lauren-walters/alab-pipeline @ 86c4cc2): 592 experiments.

Each experiment becomes a `Record(source="alab-pipeline")` whose evidence comes from the
pipeline's own tables and files: the execution record (experiments, powder_doses,
experiment_elements, workflow_tasks), the thermal history (temperature_logs), the raw XRD
pattern (`xrd/<name>.xy.gz`) and the automated DARA refinement (`xrd/<name>_result.json`).
The same per-experiment evidence is joined onto the 191 Precursor Genome samples that the
pipeline ran (`PG_xxxx-1`), see `records_pg`.

This module is the loader; `alab_tables` reads and summarises the tables, `alab_outcome`
holds the documented outcome rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from labreplay.errors import DataError
from labreplay.sdk import Missing, Record, from_json, to_json
from labreplay.sdk.data import loads_strict
from labreplay.sdk.events import JsonValue
from labreplay.suites.campaign import evidence as ev
from labreplay.suites.campaign.alab_outcome import derive_outcome
from labreplay.suites.campaign.alab_tables import (
    FOLDER,
    Heating,
    doses_of,
    execution_content,
    execution_line,
    flag_of,
    input_paths,
    read_table,
    tasks_of,
    value_of,
)

if TYPE_CHECKING:
    import pandas as pd

SOURCE = "alab-pipeline"
__all__ = ["SOURCE", "load_alab_pipeline", "load_pipeline_runs"]


class RunFacts(TypedDict):
    """What the outcome rule reads besides the evidence (`alab_outcome`)."""

    weight_collected_mg: float | None
    xrd_met_target_mass: bool | None
    xrd_recorded: bool


class PipelineRun(TypedDict):
    """One pipeline experiment: its recorded facts and, per evidence kind, its items or why
    there are none."""

    name: str
    experiment_id: str
    row: int
    experiment_type: JsonValue
    target_formula: JsonValue
    precursors: list[str]
    heating: Heating
    facts: RunFacts
    evidence: dict[str, list[dict[str, object]] | Missing]


class AlabDescriptors(TypedDict):
    precursors: list[str] | Missing
    target: JsonValue
    target_stoichiometry: Missing
    temperature_c: float | Missing
    time_min: float | Missing
    reaction_energy_ev_per_atom: Missing
    elements: list[str] | Missing
    atmosphere: JsonValue | Missing
    heating_method: JsonValue | Missing


def _fingerprint(data_dir: Path) -> str:
    """Input files (manifest-style entries) plus the summarising code itself, so that a changed
    rule never reuses an old cache."""
    from labreplay.sdk import sha256_file, sha256_json

    here = Path(__file__).parent
    modules = ("evidence.py", "records_alab.py", "alab_tables.py", "alab_outcome.py")
    code = [[name, sha256_file(here / name)] for name in modules]
    return sha256_json([ev.input_fingerprint(data_dir, input_paths(data_dir)), code])


def _grouped(frame: pd.DataFrame, order: list[str]) -> dict[str, pd.DataFrame]:
    """experiment_id -> its rows as a DataFrame (for arrays)."""
    frame = frame.sort_values(["experiment_id", *order], kind="stable") if order else frame
    return {
        str(key): group for key, group in frame.groupby("experiment_id", sort=False, observed=True)
    }


def _rows_by_experiment(frame: pd.DataFrame) -> dict[str, list[dict[str, Any]]]:
    """experiment_id -> its rows as plain dicts, in table order (cheaper than DataFrames)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for row in frame.to_dict("records"):
        out.setdefault(str(row["experiment_id"]), []).append({str(k): v for k, v in row.items()})
    return out


def _read_dara(path: Path) -> dict[str, Any]:
    try:
        with path.open("r", encoding="utf-8") as handle:
            result = loads_strict(handle.read())
    except (OSError, ValueError) as exc:  # JsonLimitError is a ValueError
        raise DataError(f"unreadable automated refinement ({exc})", file=str(path)) from exc
    if not isinstance(result, dict):
        raise DataError("automated refinement must be a JSON object", file=str(path))
    return ev.summarise_dara(result, path)


def _build_runs(data_dir: Path) -> dict[str, PipelineRun]:
    experiments = read_table(data_dir, "experiments")
    doses = _rows_by_experiment(read_table(data_dir, "powder_doses"))
    elements = _rows_by_experiment(read_table(data_dir, "experiment_elements"))
    logs = _grouped(read_table(data_dir, "temperature_logs"), ["sequence_number"])
    tasks = _rows_by_experiment(read_table(data_dir, "workflow_tasks"))
    table = f"{FOLDER}/parquet/experiments.parquet"
    xrd_dir = data_dir / FOLDER / "xrd"
    runs: dict[str, PipelineRun] = {}
    for row, raw in enumerate(experiments.to_dict("records")):
        exp = {str(key): value_of(value) for key, value in raw.items()}
        exp["xrd_met_target_mass"] = flag_of(raw["xrd_met_target_mass"])
        name, eid = str(exp["name"]), str(exp["experiment_id"])
        if name in runs:
            raise DataError(
                "duplicate experiment name", file=table, record=name, field="name", value=name
            )
        precursors, dose_list, dropped = doses_of(doses[eid]) if eid in doses else ([], [], 0)
        recorded = sorted({str(r["element_symbol"]) for r in elements.get(eid, [])})
        task_list = tasks_of(tasks[eid]) if eid in tasks else []
        content = execution_content(exp, dose_list, dropped, recorded, task_list)
        evidence: dict[str, list[dict[str, object]] | Missing] = {
            "execution_record": [
                ev.make_item("execution_record", name, 0, execution_line(name, content), content)
            ]
        }
        if eid in logs:
            log = logs[eid]
            thermal = ev.summarise_thermal(
                log["time_minutes"].to_numpy(np.float64),
                log["temperature_celsius"].to_numpy(np.float64),
                exp["heating_temperature"],
            )
            evidence["thermal_history"] = [
                ev.make_item("thermal_history", name, 0, ev.thermal_summary_line(thermal), thermal)
            ]
        else:
            evidence["thermal_history"] = Missing("no temperature log recorded for this run")
        xy = xrd_dir / f"{name}.xy.gz"
        if xy.is_file():
            scan = ev.summarise_xrd(*ev.read_xy_gz(xy))
            evidence["xrd_scan"] = [
                ev.make_item("xrd_scan", name, 0, ev.xrd_summary_line(scan), scan)
            ]
        else:
            evidence["xrd_scan"] = Missing("no XRD pattern file in the pipeline export")
        result = xrd_dir / f"{name}_result.json"
        if result.is_file():
            dara = _read_dara(result)
            evidence["automated_refinement"] = [
                ev.make_item("automated_refinement", name, 0, ev.dara_summary_line(dara), dara)
            ]
        else:
            evidence["automated_refinement"] = Missing(
                "no automated refinement in the pipeline export"
            )
        runs[name] = {
            "name": name,
            "experiment_id": eid,
            "row": row,
            "experiment_type": exp["experiment_type"],
            "target_formula": exp["target_formula"],
            "precursors": precursors,
            "heating": content["heating"],
            "facts": {
                "weight_collected_mg": exp["recovery_weight_collected_mg"],
                "xrd_met_target_mass": exp["xrd_met_target_mass"],
                "xrd_recorded": xy.is_file(),
            },
            "evidence": evidence,
        }
    return runs


def load_pipeline_runs(data_dir: Path, *, use_cache: bool = True) -> dict[str, PipelineRun]:
    """Experiment name -> its recorded facts and evidence (Missing restored), cached on disk."""
    cache = ev.EvidenceCache("alab-pipeline", _fingerprint(data_dir)) if use_cache else None
    stored = cache.load() if cache is not None else None
    if stored is None:
        runs = _build_runs(data_dir)
        if cache is not None:
            cache.store(
                {name: {**run, "evidence": to_json(run["evidence"])} for name, run in runs.items()}
            )
        return runs
    # the cache holds canonical JSON (sorted keys): restore table order from the row numbers
    ordered = sorted(stored.values(), key=lambda run: int(run["row"]))
    for run in ordered:
        run["evidence"] = _restore_missing(run["evidence"])
    return {run["name"]: run for run in ordered}


def _restore_missing(
    evidence: Mapping[str, list[dict[str, object]] | dict[str, str]],
) -> dict[str, list[dict[str, object]] | Missing]:
    """Only a whole evidence kind can be Missing (items are plain JSON), so a shallow pass
    suffices; the generic recursive `from_json` costs ~1 s on 170k nodes."""
    return {
        kind: from_json(value) if isinstance(value, dict) else value
        for kind, value in evidence.items()
    }


# --------------------------------------------------------------------------- records


def _descriptors(run: PipelineRun) -> AlabDescriptors:
    not_recorded = "not recorded in the A-Lab pipeline"
    heating = run["heating"]
    precursors = run["precursors"]
    table = f"{FOLDER}/parquet/powder_doses.parquet"

    def present(value: JsonValue) -> JsonValue | Missing:
        return not_recorded_missing if value is None else value

    def number(value: float | None) -> float | Missing:  # canonical JSON turns 200.0 into 200
        return not_recorded_missing if value is None else float(value)

    not_recorded_missing = Missing(not_recorded)
    return {
        "precursors": list(precursors) if precursors else Missing("no powder doses recorded"),
        "target": run["target_formula"],
        "target_stoichiometry": Missing(not_recorded),
        "temperature_c": number(heating["temperature_c"]),
        "time_min": number(heating["time_min"]),
        "reaction_energy_ev_per_atom": Missing(not_recorded),
        "elements": ev.element_symbols(precursors, file=table, record=run["name"])
        if precursors
        else Missing("no powder doses recorded"),
        "atmosphere": present(heating["atmosphere"]),
        "heating_method": present(heating["method"]),
    }


def load_alab_pipeline(data_dir: Path, *, use_cache: bool = True) -> list[Record]:
    """All 592 pipeline experiments as records, in table order."""
    runs = load_pipeline_runs(data_dir, use_cache=use_cache)
    records = []
    for name, run in runs.items():
        evidence = dict(run["evidence"])
        evidence["refinement"] = Missing("no expert-selected refinement in the pipeline export")
        evidence["expert_review"] = Missing("no expert review in the pipeline export")
        records.append(
            Record(
                record_id=name,
                source=SOURCE,
                descriptors=_descriptors(run),
                outcome=derive_outcome(run),
                evidence=evidence,
                provenance={
                    "file": f"{FOLDER}/parquet/experiments.parquet",
                    "row": run["row"],
                    "experiment_id": run["experiment_id"],
                    "experiment_type": run["experiment_type"],
                    "conflicts": [],
                },
            )
        )
    return records
