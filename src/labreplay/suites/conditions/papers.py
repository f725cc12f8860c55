"""The RxnOptBench paper's published headline figures (quoted from Ge et al. 2026,
arXiv:2610.02242; each with its section, table and page) and this tool's figures on the
conditions runs of a store, side by side with the declared reasons they differ."""

from __future__ import annotations

from labreplay.sdk.engine import Store
from labreplay.sdk.report import Paper, PaperComparison, Published, num

_TABLE2 = "§4.1 p. 7, Table 2 (no precedents)"

PAPER = Paper(
    suite="conditions",
    title="RxnOptBench: Benchmarking LLMs for Reaction-Condition Optimization in Organic "
    "Methodology",
    citation="Ge, L., Wang, Y., Gao, J. et al. (2026), arXiv:2610.02242",
    bibtex_key="ge2026rxnoptbench",
    published=(
        Published(
            "benchmark",
            "4,773 questions, 552 tables, 232 papers (2025); 12 models",
            "§1 p. 3",
        ),
        Published("best MC_all accuracy (Claude-Opus-4.7)", "36.8% (Score 0.725)", _TABLE2),
        Published("best FIB strict accuracy (GPT-5.5)", "16.1% (Score | Hit 0.699)", _TABLE2),
        Published("best FIB Hit", "49.6%", _TABLE2),
        Published(
            "MC_single accuracy / Score, Claude vs DeepSeek-V4-Pro",
            "48.6% / 0.764 vs 44.6% / 0.745",
            "§4.1 p. 8",
        ),
        Published("ChemLLM MC_all accuracy / Score", "20.7% / 0.545", "§4.1 p. 8"),
        Published("matched uniform-random Score floor", "about 0.54-0.67", "§3.4 pp. 6-7"),
        Published(
            "Score lost from MC_single to MC_all (frontier, delta-axis)",
            "0.030 to 0.090",
            "§4.1 p. 8",
        ),
        Published(
            "yield-only vs product scoring (Spearman, 12 models)",
            "0.965",
            "App. D pp. 17-18",
        ),
    ),
    differences=(
        "Other data: the paper's human-reviewed test set (tables from 2025 methodology papers) "
        "is not used; the suite compiles public high-throughput and optimisation-campaign "
        "tables (Ahneman, Perera, EDBO, EDBO+, Summit, Olympus, currybo) into the same question "
        "layout, or your own table (compile --table).",
        "Different filters: compile drops noise-level questions and caps any one answer's "
        "share (docs/suites/conditions.md), so question counts and random floors are this "
        "question file's own, not the paper's 0.54-0.67.",
        "No frontier model is run here unless you run one: this store's rows are the agents "
        "it holds (reference agents such as random, ranker, usual_winner, exclusion and "
        "precedent_ranker, or openai: models).",
        "Each agent here is one run on one question file; the paper queries each model once "
        "per question with sampling disabled, on its own 4,773 questions.",
    ),
    command=(
        "labreplay conditions compile --all --out questions.jsonl\n"
        "labreplay conditions run --questions questions.jsonl --agent ranker --store runs.sqlite\n"
        "labreplay conditions leaderboard --store runs.sqlite\n"
        "labreplay report --store runs.sqlite --out report/"
    ),
    here_figures="MC_single, MC_all and FIB accuracy and Score of every run, beside the "
    "question file's random floor",
)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def comparison(store: Store) -> PaperComparison:
    """The paper beside every complete conditions run's headline scores."""
    rows = []
    for run in store.runs(suite="conditions", status="complete"):
        s = store.scores(run.run_id)
        rows.append(
            (
                run.agent,
                run.spec_id,
                f"{_pct(s.get('mc_single_accuracy'))} / {num(s.get('mc_single_score'), '.3f')}",
                f"{_pct(s.get('mc_all_accuracy'))} / {num(s.get('mc_all_score'), '.3f')}",
                num(s.get("mc_all_floor_score"), ".3f"),
                f"{_pct(s.get('fib_strict'))} / {num(s.get('fib_score_given_hit'), '.3f')}",
                _pct(s.get("fib_hit")),
                num(s.get("delta_axis"), ".3f"),
            )
        )
    rows.sort(key=lambda r: (r[1], r[0]))
    notes = (
        "Accuracy / Score as the paper prints them (MC: accuracy and mean relative Score; FIB: "
        "strict accuracy and Score given a Hit); floor: the uniform-random MC_all Score of "
        "this question file.",
    )
    return PaperComparison(
        PAPER,
        (
            "agent",
            "question file",
            "MC_single acc / Score",
            "MC_all acc / Score",
            "MC_all floor Score",
            "FIB strict / Score | Hit",
            "FIB Hit",
            "delta-axis",
        ),
        tuple(rows),
        notes,
    )
