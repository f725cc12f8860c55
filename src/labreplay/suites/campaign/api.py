"""Python API of the campaign suite (the CLI is a thin layer over these functions)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from labreplay.errors import SpecError
from labreplay.sdk import Record, path_kind
from labreplay.sdk.data import resolve_data_dir
from labreplay.sdk.engine import EnvironmentSpec, load_spec, read_spec_text
from labreplay.suites.campaign.card_compile import load_records
from labreplay.suites.campaign.compiler import SpecIndex
from labreplay.suites.campaign.options import CONTROLS, parse_controls
from labreplay.suites.campaign.protocol import Partition
from labreplay.suites.campaign.resolve import (
    agent_factory,
    resolve_campaign_agent,
)
from labreplay.suites.campaign.runner import run_assignment

if TYPE_CHECKING:
    pass


def compile_specs(
    record: str | None = None,
    protocol: str = "sdl1",
    seed: int = 0,
    data_dir: str | Path | None = None,
    records: Sequence[Record] | None = None,
    allow_modified_data: bool = False,
    record_card: str | Path | None = None,
    **overrides: object,
) -> tuple[Partition, list[EnvironmentSpec], SpecIndex]:
    """Compile one partition seed of a record card: `record_card` (a NAME.card.toml or .yaml
    file), or the packaged card of a built-in `record` (default precursor-genome): both go
    through `card_compile.compile_card`. The files read are hashed and checked first (a
    modified file stops here unless `allow_modified_data`)."""
    from labreplay.suites.campaign.card_compile import compile_card, resolve_card

    if protocol != "sdl1":
        raise SpecError(f"unknown campaign protocol {protocol!r} (available: ['sdl1'])")
    card = resolve_card(record, record_card)
    if overrides.get("context_detail") == "record":  # the record's own (`table_protocol`)
        overrides = {k: v for k, v in overrides.items() if k != "context_detail"}
    return compile_card(
        card, seed, resolve_data_dir(data_dir), records, allow_modified_data, overrides
    )


def parse_seeds(text: str) -> list[int]:
    """`0-4`, `0,2,5` or `3` -> the partition seeds; anything else names the value. At most
    `MAX_SEED_COUNT` (1,000) seeds, checked from the text before any seed is expanded."""
    from labreplay.sdk.options import seed_range

    seeds = seed_range("--seeds", text)
    if len(seeds) != sum(1 for _ in _seed_parts(text)):
        raise SpecError(f"--seeds: a seed is repeated in {text!r}")
    return seeds


def _seed_parts(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        lo, dash, hi = part.strip().partition("-")
        out.extend(range(int(lo), int(hi) + 1) if dash else [int(lo)])
    return out


# Top-level body fields a campaign run reads, with their JSON types: a spec that is
# self-consistent (its hash matches) but lacks one is refused before any run row is opened.
_BODY_FIELDS: dict[str, type | tuple[type, ...]] = {
    "record": dict,
    "assignment": dict,
    "budgets": dict,
    "prices": dict,
    "eps": (int, float),
    "acceleration_target": dict,
    "candidates": list,
    "queries": list,
    "context_summary": dict,
    "context_rows": list,
    "evaluator": dict,
    "eval_precursors": list,
}
_NESTED_FIELDS = {
    "budgets": ("experiments", "evidence", "reviews"),
    "assignment": ("id", "kind"),
    "record": ("dataset_hashes",),
}


def check_campaign_spec(spec: EnvironmentSpec, origin: str) -> None:
    """Refuse a spec whose body lacks what a campaign run needs (one line naming the field)."""
    if spec.suite != "campaign":
        raise SpecError(f"spec {origin}: suite {spec.suite!r} is not a campaign spec")
    body = spec.body
    for name, kind in _BODY_FIELDS.items():
        if name not in body:
            raise SpecError(f"spec {origin}: body has no field {name!r}")
        if not isinstance(body[name], kind) or isinstance(body[name], bool):
            raise SpecError(f"spec {origin}: body field {name!r} has the wrong type")
    for name, keys in _NESTED_FIELDS.items():
        for key in keys:
            if key not in body[name]:
                raise SpecError(f"spec {origin}: body field '{name}.{key}' is missing")
    from labreplay.suites.campaign.spec_schema import check_body_schema

    check_body_schema(body, origin)


def load_specs(spec_dir: str | Path) -> list[EnvironmentSpec]:
    """The specs of a `campaign compile` directory; a multi-seed directory (`--seeds`) holds
    one `seed<N>/` subdirectory per partition seed, read in seed order."""
    from labreplay.sdk.data import JsonLimitError, loads_strict

    spec_dir = Path(spec_dir)
    kind = path_kind(spec_dir)
    if kind not in (None, "a directory"):
        raise SpecError(f"{spec_dir}: is {kind}, not a spec directory")
    index_path = spec_dir / "index.json"
    if path_kind(index_path) is None:
        subdirs = sorted(
            (p for p in spec_dir.glob("seed*") if (p / "index.json").is_file()),
            key=lambda p: int(p.name[4:]) if p.name[4:].isdigit() else -1,
        )
        if subdirs:
            return [spec for sub in subdirs for spec in load_specs(sub)]
        raise SpecError(f"{index_path}: not found (run `labreplay campaign compile` first)")
    try:
        index = loads_strict(read_spec_text(index_path, "spec index"))
    except JsonLimitError as exc:  # invalid, too deep, or NaN/Infinity
        reason = str(exc).replace("invalid JSON", "not valid JSON", 1)
        raise SpecError(f"{index_path}: {reason}") from exc
    entries = index.get("assignments") if isinstance(index, dict) else None
    if not isinstance(entries, list):
        raise SpecError(f"{index_path}: field 'assignments' is missing or not a list")
    if not entries:
        raise SpecError(f"{index_path}: field 'assignments' is empty (no spec to run)")
    specs = []
    for n, entry in enumerate(entries):
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("file"), str)
            and isinstance(entry.get("spec_hash", ""), str)
        ):
            raise SpecError(f"{index_path}: assignments[{n}] needs a string field file")
        path = spec_dir / entry["file"]
        if Path(entry["file"]).is_absolute() or ".." in Path(entry["file"]).parts:
            raise SpecError(f"{index_path}: assignments[{n}].file {entry['file']!r} leaves the dir")
        spec = load_spec(path)
        # The spec hash is evaluator-side (sealed/index.sealed.json); an older index holds it.
        if "spec_hash" in entry and spec.spec_hash != entry["spec_hash"]:
            raise SpecError(f"{path}: hash differs from index.json")
        check_campaign_spec(spec, str(path))
        specs.append(spec)
    return specs


def select_specs(specs: Sequence[EnvironmentSpec], only: str | None) -> list[EnvironmentSpec]:
    """The specs whose assignment id (e.g. `long-1`) or full spec id is listed in `only`
    (None: all of them; an empty list is refused, not read as "all")."""
    from labreplay.sdk.options import id_set

    if only is None:
        return list(specs)
    ids = sorted({s.body["assignment"]["id"] for s in specs})
    wanted = id_set("--only", only, [*ids, *sorted({s.spec_id for s in specs})])
    return [s for s in specs if s.body["assignment"]["id"] in wanted or s.spec_id in wanted]


__all__ = [
    "CONTROLS",
    "agent_factory",
    "compile_specs",
    "load_records",
    "load_specs",
    "parse_controls",
    "parse_seeds",
    "resolve_campaign_agent",
    "run_assignment",
    "select_specs",
]
