"""The SDL-1 paper's published headline figures (quoted from Barnes 2026, the Dynamical-SDL-1
post; each with the section it stands in) and this tool's figures on the campaign board of a
store, side by side with the declared reasons they differ (the report's "paper beside this
store" block and the generated docs page `papers.md`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from labreplay.sdk.report import Paper, PaperComparison, Published, ci_text, num

_BOARD = "Closed-Loop Experimental Efficiency (leaderboard)"
_LIFT = "Experiment-Selection Lift"

PAPER = Paper(
    suite="campaign",
    title="Dynamical-SDL-1: Measuring How Scientific Agents Learn from Physical Experiments",
    citation="Barnes, J. (2026), Dynamical Systems",
    bibtex_key="barnes2026sdl1",
    published=(
        Published(
            "systems x campaigns", "6 systems x 6 long assignments = 36", "Behavioral Results"
        ),
        Published("adaptive AUC, Claude Opus 4.8", "-1.252", _BOARD),
        Published("adaptive AUC, GPT-5.6 Sol", "-1.286", _BOARD),
        Published("adaptive AUC, Grok 4.5", "-1.335", _BOARD),
        Published("adaptive AUC, Gemini 3.6 Flash", "-1.433", _BOARD),
        Published("adaptive AUC, GLM 5.2", "-1.528", _BOARD),
        Published("adaptive AUC, DeepSeek V4 Flash", "-6.747", _BOARD),
        Published("mean selection lift, GPT-5.6 Sol", "+0.056", _LIFT),
        Published("mean selection lift, Claude Opus 4.8", "+0.009", _LIFT),
        Published("mean selection lift, Gemini 3.6 Flash", "+0.006", _LIFT),
        Published("mean selection lift, Grok 4.5", "-0.038", _LIFT),
        Published("mean selection lift, GLM 5.2", "+0.158", _LIFT),
        Published("mean selection lift, DeepSeek V4 Flash", "+0.522", _LIFT),
        Published("selection-lift sign across assignments", "changed for every system", _LIFT),
        Published(
            "local and held-out forecasts moved in opposite directions",
            "145 of 293 closures",
            "Behavioral Results",
        ),
        Published(
            "evidence lift (call-matched, one shared assignment)",
            "Claude Opus 4.8 +0.076, Grok 4.5 +0.003",
            "Evidence Lift",
        ),
    ),
    differences=(
        "Another panel: the paper's six long assignments come from its own frozen split; this "
        "board pools the long assignments of the partition seeds compiled here (or the short "
        "ones when the store holds no long one), so absolute AUC includes how hard another "
        "query panel is. Compare systems by skill over context, not by absolute AUC.",
        "No frontier model is run here unless you run one: the paper's systems are six hosted "
        "model-harness systems; this store's rows are the agents it holds (reference agents "
        "such as bayes, random and no-evidence, or your own and openai: agents).",
        "Outcomes are the Precursor Genome's recorded expert labels, compiled by this tool's "
        "declared protocol; where the paper is silent (context visibility, the rotation of "
        "assignments, short budgets) the choices are this tool's (suites/campaign/protocol.py).",
        "Selection lift here averages K schedule-matched random replicates per assignment "
        "(--random-replicates, default 3) and shows a paired bootstrap interval; a sign is "
        "counted only where its 95% t interval (replicates - 1 df, the adaptive branch's variance "
        "included) excludes 0.",
        "Evidence lift here comes from a call-matched no-evidence branch on every assignment "
        "run with that control, not from one shared assignment.",
    ),
    command=(
        "labreplay campaign compile --record precursor-genome --protocol sdl1 --out specs/\n"
        "labreplay campaign run --specs specs/ --agent bayes --controls random,no-evidence "
        "--store runs.sqlite\n"
        "labreplay campaign leaderboard --store runs.sqlite\n"
        "labreplay report --store runs.sqlite --out report/"
    ),
    here_figures="adaptive AUC, skill over context, selection and evidence lift of every system "
    "on the paper's board",
)


def _ci(value: object) -> str:
    """A mean with its interval, or "-" where the board has none (e.g. no control ran)."""
    if isinstance(value, Mapping) and value.get("mean") is not None:
        return ci_text(value)
    return "-"


def _movements(row: Mapping[str, Any]) -> str:
    moves = row.get("movements") or {}
    changed = int(moves.get("same", 0)) + int(moves.get("opposite", 0))
    return f"{int(moves.get('opposite', 0))} of {changed}" if moves else "-"


def comparison(board: Mapping[str, Any]) -> PaperComparison:
    """The paper beside the board's ranked and reference rows (`leaderboard(store)`)."""
    kind = "long" if board["tables"]["long"]["assignments"] else "short"
    rows = []
    for row in [*board["rows"], *board["references"]]:
        lift, evidence = row.get("selection_lift"), row.get("evidence_lift")
        rows.append(
            (
                str(row["system"]),
                "reference" if row.get("reference") else "ranked",
                str(row.get("assignments", "-")),
                num(row.get("adaptive_auc")),
                _ci(row.get("skill_over_context")),
                _ci(lift),
                _ci(evidence),
                _movements(row),
            )
        )
    notes = [
        f"Board: the {kind} assignments of this store ({len(board['assignments'])} in all); "
        "skill over context, selection and evidence lift with paired bootstrap 95% intervals; "
        "evidence lift where the no-evidence control ran; opposite "
        "moves: closures whose local and held-out forecasts moved in opposite directions, of "
        "those where both changed."
    ]
    if board.get("incomplete"):
        # the board lists incomplete systems by name (their reasons are kept apart)
        names = ", ".join(
            str(r.get("system")) if isinstance(r, Mapping) else str(r) for r in board["incomplete"]
        )
        notes.append(f"Incomplete on this board, not shown: {names}.")
    return PaperComparison(
        PAPER,
        (
            "system",
            "row",
            "assignments",
            "adaptive AUC",
            "skill over context",
            "selection lift",
            "evidence lift",
            "opposite moves",
        ),
        tuple(rows),
        tuple(notes),
    )
