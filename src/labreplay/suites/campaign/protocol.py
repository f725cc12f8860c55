"""Protocol parameters and the Partition step of the `sdl1` protocol family.

Every number of the SDL-1 protocol is a parameter here, recorded verbatim in each spec:
6 evaluation precursors; the panel is every experiment containing at least one of them (255
pairs on the Precursor Genome); 6 long assignments of 32 candidates rotate 192 panel
experiments (each is a candidate in exactly one long assignment and a held-out query in the
next one); 6 short assignments rotate the rest the same way; the other experiments are context.

Declared choices where the paper is silent:
- Which panel experiments are long vs short: a seeded permutation of the panel (sorted by id).
- Held-out queries of assignment i = the candidate block of assignment i+1 (mod the count).
- Short budgets are the long budgets scaled by candidates / 32, rounded half up, at least 1.
- Context visibility: descriptors and recorded outcome (validity, category) of every context
  experiment are agent-visible; their evidence is not. By default the state shows a compact
  per-precursor summary of the context outcomes (`context_detail = "summary"`); `"rows"` puts
  every context row in the state.
- Other panel experiments of an assignment (neither candidate nor query) are withheld.
- A short block never holds more candidates than a long one: on a large panel the surplus
  beyond `short_assignments` x `long_candidates` is withheld (counted in the index).
- Records where most outcomes are Missing (the A-Lab record): only experiments with a decidable
  outcome join the panel, evaluation precursors are drawn among theirs, and 16 are drawn
  instead of 6 so that the panel can hold long assignments; the rest is context.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, TypedDict

from labreplay.errors import SpecError
from labreplay.sdk import Record, make_rng
from labreplay.sdk.events import JsonValue

EVIDENCE_KINDS: tuple[str, ...] = (
    "execution_record",
    "thermal_history",
    "xrd_scan",
    "refinement",
    "automated_refinement",
)
REVIEW_KIND = "expert_review"


class ProtocolOverrides(TypedDict, total=False):
    """What a record card's `[protocol]` section may set (its schema's `protocol`)."""

    eval_precursors: int
    long_assignments: int
    long_candidates: int
    short_assignments: int
    experiment_budget: int
    evidence_budget: int
    review_budget: int
    acceleration_target_delta: float
    context_detail: Literal["summary", "rows"]
    min_short_candidates: int
    panel_requires_outcome: bool


@dataclass(frozen=True)
class ProtocolParams:
    name: str = "sdl1"
    eval_precursors: int = 6
    long_assignments: int = 6
    long_candidates: int = 32
    short_assignments: int = 6
    experiment_budget: int = 12
    evidence_budget: int = 36
    review_budget: int = 3
    evidence_prices: Mapping[str, int] = field(
        default_factory=lambda: {kind: 1 for kind in EVIDENCE_KINDS}
    )
    eps: float = 1e-6
    # Target score tau for acceleration, declared in the spec before any run (score = -panel
    # loss): this many nats above the context-trained model's score at t = 0, so the target is
    # never met before any experiment by the reference (METRICS.md).
    acceleration_target_delta: float = 0.05
    context_detail: str = "summary"
    # A short block smaller than this cannot carry a meaningful held-out panel; when the rest of
    # the panel is too small for two such blocks, it is withheld (declared in the index).
    min_short_candidates: int = 4
    # Only experiments whose recorded outcome is decidable may join the panel (their forecasts
    # can be scored). Needed for records where most outcomes are Missing (the A-Lab record).
    panel_requires_outcome: bool = False
    expected_panel: int | None = 255  # asserted when the record is the Precursor Genome

    def to_json(self) -> dict[str, JsonValue]:
        out = asdict(self)
        out["evidence_prices"] = dict(self.evidence_prices)
        return out


def protocol_for(record_source: str, **overrides: Any) -> ProtocolParams:
    """The `sdl1` defaults for a record; the A-Lab record has no fixed panel size."""
    if record_source != "precursor-genome":
        overrides.setdefault("expected_panel", None)
        overrides.setdefault("panel_requires_outcome", True)
        # Only 93 of 592 A-Lab outcomes are decidable: 16 evaluation precursors give a panel
        # large enough for two long assignments (81 experiments at seed 0).
        overrides.setdefault("eval_precursors", 16)
    return ProtocolParams(**overrides)


@dataclass(frozen=True)
class Assignment:
    assignment_id: str
    kind: str  # "long" | "short"
    candidates: tuple[str, ...]
    queries: tuple[str, ...]
    budgets: Mapping[str, int]


@dataclass(frozen=True)
class Partition:
    eval_precursors: tuple[str, ...]
    panel: tuple[str, ...]
    context: tuple[str, ...]
    assignments: tuple[Assignment, ...]


def precursors_of(descriptors: Mapping[str, object]) -> list[str]:
    """The experiment's grouping levels: the recorded precursors, or for a record-card table
    its `groups` (`COLUMN=value` per grouping column); [] when the record holds none (a typed
    Missing). The panel's evaluation groups are drawn among these."""
    value = descriptors.get("precursors")
    if not isinstance(value, list):
        value = descriptors.get("groups")
    return [str(p) for p in value] if isinstance(value, list) else []


def decidable(record: Record) -> bool:
    valid = record.outcome.get("valid")
    return valid is False or (valid is True and isinstance(record.outcome.get("category"), str))


def _scaled(budget: int, n: int, full: int) -> int:
    """Scaled half up, at least 1; a budget of 0 (no reviews in the record) stays 0."""
    return max(1, int(budget * n / full + 0.5)) if budget else 0


def _pack(
    units: list[list[str]], sizes: Sequence[int]
) -> tuple[list[tuple[str, ...]], list[list[str]]]:
    """Blocks of `sizes` filled first-fit from `units` in order (a unit is never split: a
    replicate group), and the units left over. Single-id units give consecutive slices."""
    blocks = []
    for size in sizes:
        block: list[str] = []
        rest = []
        for unit in units:
            if len(block) + len(unit) <= size:
                block += unit
            else:
                rest.append(unit)
        blocks.append(tuple(sorted(block)))
        units = rest
    return blocks, units


def drawn_groups(groups: Sequence[str], n: int, seed: int, protocol: str) -> list[str]:
    """The `n` evaluation groups (precursors) the partition draws at `seed` among `groups`."""
    rng = make_rng(seed, protocol, "eval-precursors")
    return sorted(str(p) for p in rng.choice(groups, n, replace=False))


def partition(
    records: Sequence[Record],
    params: ProtocolParams,
    seed: int,
    together: Mapping[str, str] | None = None,
) -> Partition:
    """`together`: record id -> replicate key; rows sharing a key are kept in one role (one
    candidate block, or withheld together), never split between candidates and queries."""
    # Experiments without recorded precursors cannot join the panel: they stay context.
    eligible = [r for r in records if not params.panel_requires_outcome or decidable(r)]
    precursors = sorted({p for r in eligible for p in precursors_of(r.descriptors)})
    if len(precursors) < params.eval_precursors:
        raise SpecError(
            f"protocol {params.name}: record has {len(precursors)} precursors, "
            f"needs at least eval_precursors={params.eval_precursors}"
        )
    chosen = drawn_groups(precursors, params.eval_precursors, seed, params.name)
    chosen_set = set(chosen)
    panel = sorted(
        r.record_id
        for r in records
        if chosen_set.intersection(precursors_of(r.descriptors))
        and (not params.panel_requires_outcome or decidable(r))
    )
    in_panel = set(panel)  # built once: a set per record was quadratic (1 M rows never compiled)
    context = sorted(r.record_id for r in records if r.record_id not in in_panel)
    if params.expected_panel is not None and len(panel) != params.expected_panel:
        raise SpecError(
            f"protocol {params.name}: panel has {len(panel)} experiments, the protocol expects "
            f"{params.expected_panel} (is the record complete?)"
        )
    order = [panel[i] for i in make_rng(seed, params.name, "panel-order").permutation(len(panel))]
    n_long = min(params.long_assignments, len(panel) // params.long_candidates)
    if n_long == 1:
        n_long = 0  # a single long block cannot rotate into a held-out role
    units: dict[str, list[str]] = {}
    for i in order:  # replicates after the first member, in its place
        units.setdefault(together.get(i, i) if together else i, []).append(i)
    # a replicate group larger than a block gives one block's worth; the rest is withheld
    pieces = [unit[: params.long_candidates] for unit in units.values()]
    long_blocks, short_units = _pack(pieces, [params.long_candidates] * n_long)
    long_blocks = [b for b in long_blocks if b]  # empty only when the pieces ran out
    if len(long_blocks) < 2:
        long_blocks, short_units = [], pieces
    n_long = len(long_blocks)
    short_pool = [i for unit in short_units for i in unit]
    assignments: list[Assignment] = []
    full_budgets = {
        "experiments": params.experiment_budget,
        "evidence": params.evidence_budget,
        "reviews": params.review_budget,
    }
    for i, block in enumerate(long_blocks):
        assignments.append(
            Assignment(f"long-{i + 1}", "long", block, long_blocks[(i + 1) % n_long], full_budgets)
        )
    n_short = min(params.short_assignments, len(short_pool) // params.min_short_candidates)
    if n_short >= 2:
        base, extra = divmod(len(short_pool), n_short)
        sizes = [base + (1 if i < extra else 0) for i in range(n_short)]
        if n_long:  # a short block never exceeds a long one: the surplus is withheld
            sizes = [min(size, params.long_candidates) for size in sizes]
        short_blocks = [b for b in _pack(short_units, sizes)[0] if b]
        n_short = len(short_blocks) if len(short_blocks) >= 2 else 0
        for i, block in enumerate(short_blocks[:n_short]):
            budgets = {
                k: _scaled(v, len(block), params.long_candidates) for k, v in full_budgets.items()
            }
            budgets["experiments"] = min(budgets["experiments"], len(block))
            assignments.append(
                Assignment(
                    f"short-{i + 1}", "short", block, short_blocks[(i + 1) % n_short], budgets
                )
            )
    return Partition(tuple(chosen), tuple(panel), tuple(context), tuple(assignments))
