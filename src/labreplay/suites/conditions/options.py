"""The conditions suite's options: one class per command, the same for the CLI and the API.

The CLI's flags are generated from these classes (and the shared groups: `LlmOptions`,
`IsolationOptions`, ...); `labreplay.run("conditions", ...)` and `labreplay.compile(
"conditions", ...)` build the same classes from their keyword arguments, so both doors have
one set of defaults and refuse a bad value with the same line.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from labreplay.sdk import writable_file
from labreplay.sdk.options import (
    BuilderKwargs,
    Checked,
    Floats,
    Ints,
    IsolationOptions,
    LlmOptions,
    OptionError,
    Rule,
    counts,
    finite_float,
    flag,
    seeds,
    split_options,
)


@dataclass(frozen=True, kw_only=True)
class ConditionsOptions(Checked):
    """The options `conditions run`, `conditions serve` and `labreplay.run` share."""

    limit: int | None = flag(
        None,
        "Run only the first N units (assignments, questions) in an order seeded by --seed.",
        check=counts(),
    )


class QuestionAgentKwargs(BuilderKwargs, total=False):
    """The keyword arguments of the LLM question agent these options set."""

    max_concurrency: int


@dataclass(frozen=True, kw_only=True)
class ConditionsRunOptions(ConditionsOptions, IsolationOptions):
    """What one conditions run takes besides specs, agent, store, seed and executor.

    `questions` (API): the question file the spec was compiled into (its sha256 must match
    the spec); by default the file attached to the spec by `compile`, else the store's copy.
    `progress(n)` (API): called as answers are recorded.
    """

    questions: str | Path | None = flag(None, "The spec's question file.", cli=False)
    model: str | None = flag(None, "Model name for --agent llm.")
    max_concurrency: int | None = flag(
        None,
        "LLM questions in flight at once (default 4; 1 for a --base-url on 127.0.0.1 or "
        "localhost, which answers one at a time).",
        check=Ints(1, 256),
    )
    progress: Callable[[int], None] | None = flag(
        None, "Called as answers are recorded.", cli=False
    )

    def check(self) -> None:
        super().check()
        if self.questions is not None and not isinstance(self.questions, str | Path):
            raise OptionError(f"questions: value {self.questions!r} must be a path")

    def agent_kwargs(self, llm: LlmOptions) -> QuestionAgentKwargs:
        """Keyword arguments of the LLM question agent (`make_question_agent`)."""
        given = {} if self.max_concurrency is None else {"max_concurrency": self.max_concurrency}
        return cast(QuestionAgentKwargs, {**llm.builder_kwargs(), **given})


@dataclass(frozen=True, kw_only=True)
class QuestionSource(Checked):
    """The question file `conditions run` and `serve` play, and the run seed (command line)."""

    questions: Path = flag(help="Question file (ours or the official).", api=False)
    seed: int = flag(0, "Run seed.", check=seeds(), api=False)


@dataclass(frozen=True, kw_only=True)
class QuestionAgentArgs(Checked):
    """The agent `conditions run` plays, and whether it only estimates (command line)."""

    agent: str = flag(
        help="random | ranker | openai:MODEL (or llm with --model MODEL) | a registered agent | "
        "MODULE:ATTR (your QuestionAgent class or factory, importable from PYTHONPATH or the "
        "working directory).",
        api=False,
    )
    dry_run: bool = flag(
        False,
        "Render the prompts and estimate calls and tokens without calling the model; exit 0.",
        api=False,
    )


@dataclass(frozen=True, kw_only=True)
class ScoreArgs(Checked):
    """What `conditions score` reads (command line)."""

    questions: Path = flag(help="Question file.", api=False)
    predictions: Path = flag(help="JSONL: {id, answer|text}.", api=False)
    lenient: bool = flag(
        False,
        "Score malformed predictions as invalid (and count them) instead of exiting 2.",
        api=False,
    )


def parse_run_options(
    given: Mapping[str, object], where: str = "conditions run"
) -> tuple[ConditionsRunOptions, LlmOptions]:
    """The run options and the LLM options; an unknown key is refused naming the nearest."""
    run, llm = split_options(where, dict(given), ConditionsRunOptions, LlmOptions)
    assert isinstance(run, ConditionsRunOptions) and isinstance(llm, LlmOptions)
    return run, llm


def _out_file(label: str, value: object) -> Path:
    """A question file to write, and its spec beside it: free or regular files."""
    from labreplay.suites.conditions.report import spec_path

    out = writable_file(Path(str(value)), label)
    writable_file(spec_path(out), f"{label}'s companion file")
    return out


def _fraction(label: str, value: object) -> float:
    """(0, 1]; NaN and a non-number are out of it."""
    try:
        return finite_float(label, value, lo=0.0, hi=1.0, lo_open=True)
    except OptionError:
        raise OptionError(f"{label} must be in (0, 1], got {value}") from None


@dataclass(frozen=True, kw_only=True)
class ConditionsCompileOptions(Checked):
    """What `conditions compile` and `labreplay.compile("conditions", ...)` take (besides the
    data directory): where to write, the recorded seed and the compile rules."""

    out: Path = flag(
        help="Question file to write (JSONL, release layout); its spec goes beside it.",
        check=Rule(_out_file),
    )
    datasets: Sequence[str] | None = flag(None, "Built-in dataset names (default: all).", cli=False)
    max_options: int = flag(
        12,
        "Larger reaction groups are sliced into tables of <= this.",
        check=counts(),  # and at least 2: `check`
    )
    max_tables: int = flag(
        10, "At most this many sliced tables per reaction (seeded).", check=counts()
    )
    min_options: int = flag(
        3,
        "An MC question needs this many options (after precedents).",
        check=Ints(),  # 2 up to --max-options: `check`
    )
    fib_max_hit_floor: float = flag(
        0.8, "Ask FIB only where its Hit floor is at most this.", check=Rule(_fraction, "2")
    )
    seed: int = flag(0, "Recorded seed (table cuts, option order, precedents).", check=seeds())

    def check(self) -> None:
        if self.max_options < 2:
            raise OptionError(f"--max-options must be at least 2, got {self.max_options}")
        if not 2 <= self.min_options <= self.max_options:
            raise OptionError(
                f"--min-options must be between 2 and --max-options ({self.max_options}), "
                f"got {self.min_options}"
            )

    def rules(self) -> dict[str, int | float]:
        """The fields of every dataset's `TableRule` these options set."""
        return {
            "max_options": self.max_options,
            "min_options": self.min_options,
            "max_tables": self.max_tables,
            "fib_max_hit_floor": self.fib_max_hit_floor,
        }


def _one_of(*choices: str) -> Rule:
    """A closed set of names, refused in the words the compile options always used."""
    shown = " or ".join(choices) if len(choices) == 2 else "one of " + ", ".join(choices)

    def check(label: str, value: str | None) -> str | None:  # a command-line value
        if value not in choices:
            raise OptionError(f"{label} must be {shown}, got {value!r}")
        return value

    return Rule(check, "not-a-choice")


def _objectives() -> tuple[str, ...]:
    from labreplay.suites.conditions.outcomes import OBJECTIVES

    return OBJECTIVES


# the flags that describe the user's own table: refused without --table
TABLE_FLAGS = (
    "reaction_cols", "condition_cols", "slice_cols", "vary", "axis_kind", "name", "yield_col",
    "smiles_cols", "product_col", "constant", "role", "ddg_col", "ee_col", "er_col", "dr_col",
    "rr_col", "response",
)  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class ConditionsSourceArgs(Checked):
    """What `conditions compile` reads: built-in datasets or the user's own table, and how
    that table is read (the command line's)."""

    dataset: list[str] | None = flag(None, "Built-in dataset name (repeatable).", api=False)
    all_datasets: bool = flag(False, "Compile every built-in dataset.", name="--all", api=False)
    table: Path | None = flag(None, "Your own CSV/XLSX screening table.", api=False)
    reaction_cols: str = flag("", "Columns identifying the reaction (substrates).", api=False)
    condition_cols: str = flag("", "Condition-axis columns.", api=False)
    slice_cols: str = flag(
        "",
        "Condition columns whose values define separate tables (one table per value).",
        api=False,
    )
    vary: list[str] | None = flag(
        None,
        "Condition column a table varies (repeatable). Default for --table: the axis set "
        "keeping the most rows, with no additive/inhibitor axis unless it keeps more, then the "
        "most axes per table, species before process settings (printed; see --axis-kind).",
        api=False,
    )
    axis_kind: list[str] | None = flag(
        None,
        "COL=species|process|additive: override the kind read from a condition column's "
        "name (additive/inhibitor axes are not varied alone by default).",
        api=False,
    )
    name: str | None = flag(
        None,
        "Dataset name (seeds and ids); default: derived from the table's content hash.",
        api=False,
    )
    yield_col: str = flag("", "Yield column (optional).", api=False)
    ee_col: str | None = flag(None, "ee (%) of the desired enantiomer.", api=False)
    dr_col: str | None = flag(None, "dr 'a:b', a = desired isomer.", api=False)
    er_col: str | None = flag(None, "er 'a:b', a = desired enantiomer.", api=False)
    rr_col: str | None = flag(None, "rr 'a:b', a = desired isomer.", api=False)
    ddg_col: str | None = flag(
        None, "ΔΔG‡ (kcal/mol, positive favours the desired enantiomer).", api=False
    )
    temperature_k: float | None = flag(
        None,
        "Temperature (K) converting ΔΔG‡ to ee.",
        check=Floats(0.0, 10_000.0, lo_open=True),
        api=False,
    )
    objective: str | None = flag(
        None,
        "utility | yield | selectivity (default: utility, or selectivity when there is no "
        "yield column).",
        check=_one_of(*_objectives()),
        api=False,
    )
    yield_scale: str = flag(
        "percent", "percent | fraction.", check=_one_of("percent", "fraction"), api=False
    )
    response: str | None = flag(
        None,
        "yield | ratio: what --yield-col holds (default yield). A ratio (product/internal-"
        "standard ratio, peak area) is ranked as recorded, never shown as a yield, its noise "
        "floors relative to its largest value; a column named like one is refused as a yield.",
        check=_one_of("yield", "ratio"),
        api=False,
    )
    force_scale: bool = flag(
        False,
        "Keep --yield-scale although the values look like the other scale (QC warning).",
        api=False,
    )
    merge_by: str = flag(
        "smiles",
        "smiles | name: option identity where --smiles-cols gives structures.",
        check=_one_of("smiles", "name"),
        api=False,
    )
    allow_out_of_range: bool = flag(
        False, "Keep yields > 100% / |ee| > 100 (clipped, flagged).", api=False
    )
    smiles_cols: str = flag("", "NAME_COL=SMILES_COL,... (validated with RDKit).", api=False)
    product_col: str | None = flag(None, "Product column.", api=False)
    constant: list[str] | None = flag(
        None, "KEY=VALUE condition constant for the whole table (repeatable).", api=False
    )
    role: list[str] | None = flag(
        None, "COL=ROLE: map a condition column onto an RxnOptBench role.", api=False
    )

    def check(self) -> None:
        if sum([bool(self.dataset), self.all_datasets, self.table is not None]) != 1:
            raise OptionError("give exactly one of --dataset NAME, --all, --table FILE")
        if self.table is None:
            for key in TABLE_FLAGS:
                if getattr(self, key):
                    raise OptionError(
                        f"--{key.replace('_', '-')} describes your own table: use it with "
                        "--table FILE (built-in datasets declare their columns)"
                    )


__all__ = [
    "ConditionsCompileOptions",
    "ConditionsOptions",
    "ConditionsRunOptions",
    "ConditionsSourceArgs",
    "QuestionAgentArgs",
    "QuestionSource",
    "ScoreArgs",
    "parse_run_options",
]
