"""A-Lab pipeline records (lauren-walters/alab-pipeline @ 86c4cc2): 592 experiments.

Each experiment becomes a `Record(source="alab-pipeline")` whose evidence comes from the
pipeline's own tables and files: the execution record (experiments, powder_doses,
experiment_elements, workflow_tasks), the thermal history (temperature_logs), the raw XRD
pattern (`xrd/<name>.xy.gz`) and the automated DARA refinement (`xrd/<name>_result.json`).
The same per-experiment evidence is joined onto the 191 Precursor Genome samples that the
pipeline ran (`PG_xxxx-1`), see `records_pg`.

Outcome rule (the pipeline records no reaction category, so both fields are derived from
recorded fields only; anything undecidable stays Missing with the reason):

* `valid` (physically valid and characterizable):
  - Missing when the recovered mass is not recorded, or is negative (a recording error: the
    crucible weight was not subtracted);
  - False when no powder was recovered (0 mg) or no XRD pattern was recorded: nothing to
    characterise;
  - True otherwise (powder recovered and measured by XRD).
  `xrd_met_target_mass` is kept in the execution record but not used: on the 191 runs of
  Precursor Genome samples, 54 with the flag False are valid in the ledger.
* `category`, only when `valid` is True and the DARA refinement succeeded: each refined phase's
  formula (the text before the first `_` of its name) is matched to the target and to each
  precursor by atomic fractions (every element within 0.01); weight fractions are normalised
  to their sum and a phase counts as present at >= 0.03:
  - no precursor phase, target present -> completely_reacted;
  - no precursor phase, target absent -> transformed;
  - precursor phase(s) plus target or other phases -> partially_reacted;
  - only precursor phases -> unreacted.
  Otherwise Missing: invalid run, failed refinement (its error), or undecidable validity.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from labreplay.errors import DataError
from labreplay.records import Missing, Record
from labreplay.records._types import from_json, to_json
from labreplay.records.sources import data_file
from labreplay.suites.campaign import evidence as ev

SOURCE = "alab-pipeline"
FOLDER = "alab_pipeline"
PRESENCE_THRESHOLD = 0.03

TABLE_COLUMNS: dict[str, tuple[str, ...]] = {
    "experiments": (
        "experiment_id", "name", "experiment_type", "target_formula", "status",
        "heating_method", "heating_temperature", "heating_time", "heating_atmosphere",
        "recovery_total_dosed_mass_mg", "recovery_weight_collected_mg",
        "recovery_yield_percent", "xrd_total_mass_dispensed_mg", "xrd_met_target_mass",
        "dosing_end_reason",
    ),
    "powder_doses": (
        "experiment_id", "powder_name", "target_mass", "actual_mass", "dose_sequence",
        "head_position", "dose_timestamp",
    ),
    "experiment_elements": ("experiment_id", "element_symbol"),
    "temperature_logs": ("experiment_id", "sequence_number", "time_minutes", "temperature_celsius"),
    "workflow_tasks": ("experiment_id", "task_type", "status", "started_at", "completed_at"),
}  # fmt: skip


def _read_table(data_dir: Path, name: str) -> Any:
    import pandas as pd

    path = data_file(data_dir, f"{FOLDER}/parquet/{name}.parquet")
    try:
        frame = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises several unrelated types for a corrupt file
        raise DataError(f"unreadable parquet table ({exc})", file=str(path)) from exc
    for column in TABLE_COLUMNS[name]:
        if column not in frame.columns:
            raise DataError("required column missing", file=str(path), field=column)
    frame = frame[list(TABLE_COLUMNS[name])].copy()
    frame["experiment_id"] = frame["experiment_id"].astype(str)
    return frame


def _value(raw: Any) -> Any:
    """pandas/numpy scalar -> plain Python; NaN/None/NaT -> None."""
    if raw is None:
        return None
    if isinstance(raw, float | np.floating):
        return None if not np.isfinite(raw) else float(raw)
    if isinstance(raw, bool | np.bool_):
        return bool(raw)
    if isinstance(raw, int | np.integer):
        return int(raw)
    try:
        import pandas as pd

        if pd.isna(raw):
            return None
    except (TypeError, ValueError):
        pass
    return raw


def _flag(raw: Any) -> bool | None:
    value = _value(raw)
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    return {"true": True, "false": False}.get(str(value).strip().lower())


def precursor_formula(powder_name: str) -> str:
    """Pipeline powder names carry a stock tag (`HfO2_PG`); formulas never contain `_`."""
    return powder_name.split("_", 1)[0]


def _doses(rows: list[dict[str, Any]]) -> tuple[list[str], list[dict[str, Any]], int]:
    """Precursors in dosing order and per-powder dosing accuracy.

    The export repeats every dose row 2-10 times (a join artefact: identical timestamps and
    masses), so exact duplicates are dropped; repeated doses of one powder (dose_sequence 0, 1,
    ...) are real top-ups and their actual masses add up against one target mass.
    """
    unique = {tuple(sorted((k, str(v)) for k, v in row.items())): row for row in rows}
    ordered = sorted(
        unique.values(),
        key=lambda r: (str(r["dose_timestamp"]), int(r["dose_sequence"]), str(r["powder_name"])),
    )
    per: dict[str, dict[str, Any]] = {}
    for row in ordered:
        name = str(row["powder_name"])
        entry = per.setdefault(name, {"target": float(row["target_mass"]), "actual": 0.0, "n": 0})
        entry["actual"] += float(row["actual_mass"])
        entry["n"] += 1
    doses = []
    for name, e in per.items():
        accuracy = 100.0 * e["actual"] / e["target"] if e["target"] else None
        doses.append(
            {
                "powder": name,
                "target_mass_g": ev.rounded(e["target"], 5),
                "actual_mass_g": ev.rounded(e["actual"], 5),
                "accuracy_percent": ev.rounded(accuracy, 2),
                "dose_count": e["n"],
            }
        )
    return [precursor_formula(n) for n in per], doses, len(rows) - len(unique)


def _tasks(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for row in sorted(rows, key=lambda r: (r["started_at"], str(r["task_type"]))):
        minutes = (row["completed_at"] - row["started_at"]).total_seconds() / 60.0
        out.append(
            {
                "task": str(row["task_type"]),
                "status": str(row["status"]),
                "duration_min": ev.rounded(minutes, 1),
            }
        )
    return out


def _execution_content(exp: Mapping[str, Any], doses: list[dict[str, Any]], duplicates: int,
                       elements: list[str], tasks: list[dict[str, Any]]) -> dict[str, Any]:  # fmt: skip
    deviations = [
        abs(d["accuracy_percent"] - 100.0) for d in doses if d["accuracy_percent"] is not None
    ]
    return {
        "status": exp["status"],
        "dosing": {
            "powders": doses,
            "max_abs_deviation_percent": ev.rounded(max(deviations), 2) if deviations else None,
            "duplicate_rows_dropped": duplicates,
            "end_reason": exp["dosing_end_reason"],
        },
        "recovery": {
            "total_dosed_mass_mg": ev.rounded(exp["recovery_total_dosed_mass_mg"], 1),
            "weight_collected_mg": ev.rounded(exp["recovery_weight_collected_mg"], 1),
            "yield_percent": ev.rounded(exp["recovery_yield_percent"], 2),
        },
        "xrd_total_mass_dispensed_mg": ev.rounded(exp["xrd_total_mass_dispensed_mg"], 1),
        "xrd_met_target_mass": exp["xrd_met_target_mass"],
        "recorded_elements": elements,
        "heating": {
            "method": exp["heating_method"],
            "temperature_c": ev.rounded(exp["heating_temperature"], 1),
            "time_min": ev.rounded(exp["heating_time"], 1),
            "atmosphere": exp["heating_atmosphere"],
        },
        "workflow_tasks": tasks,
    }


def _execution_line(name: str, c: Mapping[str, Any]) -> str:
    rec = c["recovery"]
    return (
        f"Run {name}: {len(c['dosing']['powders'])} powders dosed (max deviation "
        f"{c['dosing']['max_abs_deviation_percent']}%), heated {c['heating']['temperature_c']} C / "
        f"{c['heating']['time_min']} min, recovered {rec['weight_collected_mg']} mg "
        f"(yield {rec['yield_percent']}%), XRD target mass met: {c['xrd_met_target_mass']}, "
        f"elements {'-'.join(c['recorded_elements'])}"
    )


def _fingerprint(data_dir: Path) -> str:
    """Input files (manifest-style entries) plus the summarising code itself, so that a changed
    rule never reuses an old cache."""
    from labreplay._hashing import sha256_file, sha256_json

    paths = [data_file(data_dir, f"{FOLDER}/parquet/{name}.parquet") for name in TABLE_COLUMNS]
    xrd_dir = data_dir / FOLDER / "xrd"
    if xrd_dir.is_dir():
        paths += sorted(p for p in xrd_dir.iterdir() if p.name.endswith((".xy.gz", "_result.json")))
    here = Path(__file__).parent
    code = [[name, sha256_file(here / name)] for name in ("evidence.py", "records_alab.py")]
    return sha256_json([ev.input_fingerprint(data_dir, paths), code])


def _grouped(frame: Any, order: list[str]) -> dict[str, Any]:
    """experiment_id -> its rows as a DataFrame (for arrays)."""
    frame = frame.sort_values(["experiment_id", *order], kind="stable") if order else frame
    return {
        str(key): group for key, group in frame.groupby("experiment_id", sort=False, observed=True)
    }


def _rows_by_experiment(frame: Any) -> dict[str, list[dict[str, Any]]]:
    """experiment_id -> its rows as plain dicts, in table order (cheaper than DataFrames)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for row in frame.to_dict("records"):
        out.setdefault(str(row["experiment_id"]), []).append(row)
    return out


def _read_dara(path: Path) -> dict[str, Any]:
    try:
        with path.open("r", encoding="utf-8") as handle:
            result = json.load(handle)
    except (OSError, ValueError) as exc:
        raise DataError(f"unreadable automated refinement ({exc})", file=str(path)) from exc
    if not isinstance(result, dict):
        raise DataError("automated refinement must be a JSON object", file=str(path))
    return ev.summarise_dara(result, path)


def _build_runs(data_dir: Path) -> dict[str, dict[str, Any]]:
    experiments = _read_table(data_dir, "experiments")
    doses = _rows_by_experiment(_read_table(data_dir, "powder_doses"))
    elements = _rows_by_experiment(_read_table(data_dir, "experiment_elements"))
    logs = _grouped(_read_table(data_dir, "temperature_logs"), ["sequence_number"])
    tasks = _rows_by_experiment(_read_table(data_dir, "workflow_tasks"))
    table = f"{FOLDER}/parquet/experiments.parquet"
    xrd_dir = data_dir / FOLDER / "xrd"
    runs: dict[str, dict[str, Any]] = {}
    for row, raw in enumerate(experiments.to_dict("records")):
        exp = {key: _value(value) for key, value in raw.items()}
        exp["xrd_met_target_mass"] = _flag(raw["xrd_met_target_mass"])
        name, eid = str(exp["name"]), str(exp["experiment_id"])
        if name in runs:
            raise DataError(
                "duplicate experiment name", file=table, record=name, field="name", value=name
            )
        precursors, dose_list, dropped = _doses(doses[eid]) if eid in doses else ([], [], 0)
        recorded = sorted({str(r["element_symbol"]) for r in elements.get(eid, [])})
        task_list = _tasks(tasks[eid]) if eid in tasks else []
        content = _execution_content(exp, dose_list, dropped, recorded, task_list)
        evidence: dict[str, Any] = {
            "execution_record": [
                ev.make_item("execution_record", name, 0, _execution_line(name, content), content)
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
            "evidence": to_json(evidence),
        }
    return runs


def load_pipeline_runs(data_dir: Path, *, use_cache: bool = True) -> dict[str, dict[str, Any]]:
    """Experiment name -> its recorded facts and evidence (Missing restored), cached on disk."""
    cache = ev.EvidenceCache("alab-pipeline", _fingerprint(data_dir)) if use_cache else None
    runs = cache.load() if cache is not None else None
    if runs is None:
        runs = _build_runs(data_dir)
        if cache is not None:
            cache.store(runs)
    # the cache holds canonical JSON (sorted keys): restore table order from the row numbers
    ordered = sorted(runs.values(), key=lambda run: int(run["row"]))
    return {run["name"]: {**run, "evidence": _restore_missing(run["evidence"])} for run in ordered}


def _restore_missing(evidence: Mapping[str, Any]) -> dict[str, Any]:
    """Only a whole evidence kind can be Missing (items are plain JSON), so a shallow pass
    suffices; the generic recursive `from_json` costs ~1 s on 170k nodes."""
    return {
        kind: from_json(value) if isinstance(value, dict) else value
        for kind, value in evidence.items()
    }


# --------------------------------------------------------------------------- outcome rule


def _anhydrous(formula: str) -> str:
    import re

    return re.sub(r"\(H2O\)[0-9.]*", "", formula)


def derive_outcome(run: Mapping[str, Any]) -> dict[str, Any]:
    """The documented rule of this module's docstring."""
    facts = run["facts"]
    collected = facts["weight_collected_mg"]
    valid: bool | Missing
    if collected is None:
        valid = Missing("recovered mass not recorded")
    elif collected < 0:
        valid = Missing(f"negative recovered mass {float(collected):g} mg (recording error)")
    else:
        valid = collected > 0 and bool(facts["xrd_recorded"])
    if valid is not True:
        reason = "run not valid" if valid is False else f"validity undecidable: {valid.reason}"
        return {"valid": valid, "category": Missing(reason)}
    refinement = run["evidence"]["automated_refinement"]
    if isinstance(refinement, Missing):
        return {"valid": valid, "category": Missing(refinement.reason)}
    content = refinement[0]["content"]
    if not content["success"]:
        return {
            "valid": valid,
            "category": Missing(f"automated refinement failed: {content['error']}"),
        }
    return {"valid": valid, "category": _category(content["phases"], run)}


def _category(phases: list[dict[str, Any]], run: Mapping[str, Any]) -> str | Missing:
    weights = [(p["name"].split("_", 1)[0], p["weight_fraction"] or 0.0) for p in phases]
    total = sum(w for _, w in weights)
    if total <= 0:
        return Missing("automated refinement reports no phase weight")
    target = str(run["target_formula"])
    precursors = [f for p in run["precursors"] for f in {p, _anhydrous(p)}]
    has_target = has_precursor = has_other = False
    for formula, weight in weights:
        if weight / total < PRESENCE_THRESHOLD:
            continue
        if any(ev.same_composition(formula, p) for p in precursors):
            has_precursor = True
        elif ev.same_composition(formula, target):
            has_target = True
        else:
            has_other = True
    if not has_precursor:
        return "completely_reacted" if has_target else "transformed"
    return "partially_reacted" if (has_target or has_other) else "unreacted"


# --------------------------------------------------------------------------- records


def _descriptors(run: Mapping[str, Any]) -> dict[str, Any]:
    not_recorded = "not recorded in the A-Lab pipeline"
    heating = run["heating"]
    precursors = run["precursors"]
    table = f"{FOLDER}/parquet/powder_doses.parquet"

    def present(value: Any) -> Any:
        return not_recorded_missing if value is None else value

    def number(value: Any) -> Any:  # the cache's canonical JSON turns 200.0 into 200
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
