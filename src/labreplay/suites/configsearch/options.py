"""The configsearch suite's options: the classes whose fields are the flags of its commands.

Defaults live here and nowhere else: the CLI's flags are generated from these classes (and the
shared groups: `LlmOptions`, `DataOptions`, ...) and `labreplay.run("configsearch", ...)`
builds the same classes from its keyword arguments (`parse_run_options`), so `configsearch
run`, `configsearch serve` and the API search with the same defaults (seed, budget, initial
design, C_min, cost weight) and refuse the same values in the same words. The checks import
what they need when they run, so `configsearch --help` costs no numpy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from labreplay.sdk import writable_dir
from labreplay.sdk.options import (
    MAX_SEED,
    MAX_SEED_COUNT,
    Checked,
    DataOptions,
    Floats,
    Ints,
    IsolationOptions,
    LlmOptions,
    OneOf,
    OptionError,
    Rule,
    StoreOptions,
    bad,
    choice,
    counts,
    flag,
    id_set,
    seeds,
    split_options,
)

if TYPE_CHECKING:
    from labreplay.suites.configsearch.pipeline import PipelineSettings
    from labreplay.suites.configsearch.space import ConfigSpace

# The search seed of both doors when none is given (seeds 42..42+k-1, as the papers' replays).
DEFAULT_SEED = 42
# BO's weight of the fit cost when none is given (0: plain EI).
COST_ALPHA = 0.0
# the search problems and the built-in search methods (`search.py` plays them)
PROBLEMS = ("best-model", "discriminate", "closest", "which-model")
METHODS = ("bo", "random", "exhaustive", "smallest-ns")
DEFAULT_STORE = Path("configsearch.sqlite")


def _models(label: str, value: str | Sequence[str]) -> tuple[str, ...]:
    """A comma list (or, from Python, a list) of known property models."""
    from labreplay.suites.configsearch.models import model_names

    return id_set(label, value, model_names())


def _model(label: str, value: str) -> str:
    from labreplay.suites.configsearch.models import model_names

    return choice(label, value, model_names())


def _tasks(label: str, value: str | Sequence[str]) -> tuple[str, ...]:
    from labreplay.suites.configsearch.data import BUILTIN_TASKS, TASKS

    if value == "all":
        return tuple(t for t in BUILTIN_TASKS if t in TASKS)
    return id_set(label, value, sorted(TASKS))


def _problem(label: str, value: str) -> str:
    return choice(label, value, PROBLEMS)


def _method(label: str, value: str) -> str:
    return choice(label, value, METHODS)


def out_dir(label: str, value: str | Path) -> Path:
    """A directory path to write (a device, FIFO or file there is refused, left as it was)."""
    return writable_dir(Path(str(value)), label)


@dataclass(frozen=True, kw_only=True)
class SampleOptions(Checked):
    """The pipeline's sample sizes (both doors: they rebuild the compiled problem)."""

    n_total: int = flag(1600, "Materials per sample (paper: 1,600).", check=counts())
    n_ood: int = flag(480, "OOD candidates per sample (paper: 480).", check=counts())

    def check(self) -> None:
        self.settings()
        super().check()

    def settings(self) -> PipelineSettings:
        from labreplay.suites.configsearch.preflight import settings

        return settings(self.n_total, self.n_ood)


@dataclass(frozen=True, kw_only=True)
class ConfigsearchOptions(SampleOptions):
    """A search's options: the same class, defaults and checks in `configsearch run`,
    `configsearch serve` and `labreplay.run("configsearch", ...)`."""

    models: str | Sequence[str] = flag(
        "rf-scm", "Comma list of models.", check=Rule(_models, "nosuch"), parse_as=str
    )
    problem: str = flag(
        "best-model", "best-model | discriminate | closest.", check=Rule(_problem, "bogus")
    )
    budget: int = flag(12, "Search steps T.", check=counts())
    init: int = flag(4, "Random initial steps T0.", check=counts())
    seeds: int = flag(1, "Run seeds seed..seed+k-1.", check=Ints(1, MAX_SEED_COUNT))
    gt: str = flag(
        "reference", "closest: reference (0,48,10) | mean.", check=OneOf(("reference", "mean"))
    )
    cost_alpha: float = flag(
        COST_ALPHA,
        "BO: weight of the fit cost in the acquisition (0 = plain EI).",
        check=Floats(0.0, 100.0),
    )
    min_test_points: int = flag(
        30, "C_min: search configurations with n*s >= this only.", check=counts()
    )

    def model_list(self) -> list[str]:
        return list(_models("--models", self.models))

    def check_search(self, method: str | None) -> None:
        """BO, random search and any optimiser need init <= budget (exhaustive ignores both)."""
        if method != "exhaustive" and self.init > self.budget:
            raise bad("--init", self.init, f"must be in [1, --budget {self.budget}]")

    def check_seeds(self, seed: int) -> None:
        """The seeds seed..seed+seeds-1 stay within what a store holds."""
        if seed + self.seeds - 1 > MAX_SEED:
            raise bad(
                "--seeds", self.seeds, f"runs past the largest seed {MAX_SEED} from --seed {seed}"
            )


@dataclass(frozen=True, kw_only=True)
class ConfigsearchRunOptions(ConfigsearchOptions, IsolationOptions):
    """What one configsearch run takes besides specs, agent, store, seed and executor."""


@dataclass(frozen=True, kw_only=True)
class ProblemObjects(Checked):
    """What the Python API may give as objects instead of flags. A compiled spec names its own
    task, pipeline settings and space: given again, they must agree with it."""

    task: str | None = flag(None, "The task (a spec names its own).", cli=False)
    settings: PipelineSettings | None = flag(
        None, "Pipeline settings (instead of n_total, n_ood).", cli=False
    )
    space: ConfigSpace | None = flag(None, "The configuration space searched.", cli=False)
    cache_dir: str | Path | None = flag(None, "The pipeline's cache directory.", cli=False)
    data_dir: str | Path | None = flag(None, "The data directory.", cli=False)


def parse_run_options(
    given: Mapping[str, object], where: str = "configsearch run"
) -> tuple[ConfigsearchRunOptions, ProblemObjects, LlmOptions, DataOptions]:
    """The run options of the API; an unknown key is refused naming the nearest valid one."""
    run, objects, llm, data = split_options(
        where, dict(given), ConfigsearchRunOptions, ProblemObjects, LlmOptions, DataOptions
    )
    assert isinstance(run, ConfigsearchRunOptions) and isinstance(objects, ProblemObjects)
    assert isinstance(llm, LlmOptions) and isinstance(data, DataOptions)
    return run, objects, llm, data


# ------------------------------------------------------------------ the command line's own
@dataclass(frozen=True, kw_only=True)
class ConfigsearchStore(StoreOptions):
    """The results store, ./configsearch.sqlite unless given."""

    store: Path = flag(
        DEFAULT_STORE, "Results store (SQLite; default ./configsearch.sqlite).", api=False
    )


@dataclass(frozen=True, kw_only=True)
class TaskArg(Checked):
    """A built-in task."""

    task: str | None = flag(
        None,
        "band_gap, metallicity, bulk_modulus, shear_modulus, formation_energy or refractive_index.",
        api=False,
    )

    def check(self) -> None:
        from labreplay.suites.configsearch.preflight import task_or_dataset

        if self.task is not None:
            task_or_dataset(self.task, None, None, None)


@dataclass(frozen=True, kw_only=True)
class DatasetArgs(TaskArg):
    """A built-in task, or the user's own dataset and the field to predict."""

    task: str | None = flag(
        None,
        "band_gap, metallicity, bulk_modulus, shear_modulus, formation_energy or "
        "refractive_index (or use --dataset).",
        api=False,
    )
    dataset: Path | None = flag(
        None,
        "Your own JSONL(.gz): one material per line, `cif` text or a pymatgen `structure` "
        "dict, plus the --target field.",
        api=False,
    )
    dataset_b: Path | None = flag(
        None, "Second source for the share r (without it r is fixed to 0).", api=False
    )
    target: str | None = flag(None, "Numeric field of --dataset to predict.", api=False)

    def check(self) -> None:
        from labreplay.suites.configsearch.preflight import task_or_dataset

        task_or_dataset(self.task, self.dataset, self.target, self.dataset_b)

    def check_executor(self, executor: str) -> None:
        """A user dataset is registered in this process only; Dask workers (other processes)
        look a task up by name and would not find it: refused up front."""
        if self.dataset is not None and executor == "dask":
            raise OptionError(
                f"--executor dask cannot run --dataset {self.dataset} yet (workers know only "
                "the built-in tasks); use --executor threads or in-process"
            )


@dataclass(frozen=True, kw_only=True)
class Threads(Checked):
    n_jobs: int = flag(
        1,
        "Threads for model fits, t-SNE and k-means (speed only, same results).",
        check=Ints(1, 64),
        api=False,
    )


@dataclass(frozen=True, kw_only=True)
class RValues(Checked):
    r_values: str | None = flag(None, "Restrict r, e.g. 0,0.3 (default: paper).", api=False)

    def axes(self) -> tuple[str | None, str | None, str | None]:
        return self.r_values, None, None

    def space(
        self, sample: SampleOptions, min_test_points: int | None = None
    ) -> ConfigSpace | None:
        """The restricted space (None: the paper's), every value checked before any work."""
        from labreplay.suites.configsearch.preflight import config_space

        return config_space(*self.axes(), sample.settings(), min_test_points)


@dataclass(frozen=True, kw_only=True)
class SpaceArgs(RValues):
    n_values: str | None = flag(None, "Restrict n, e.g. 4,6,8 (default: paper).", api=False)
    s_values: str | None = flag(None, "Restrict s, e.g. 1,5,10 (default: paper).", api=False)

    def axes(self) -> tuple[str | None, str | None, str | None]:
        return self.r_values, self.n_values, self.s_values


@dataclass(frozen=True, kw_only=True)
class SeedArg(Checked):
    seed: int = flag(DEFAULT_SEED, "Search seed.", check=seeds(), api=False)


@dataclass(frozen=True, kw_only=True)
class SearchArgs(Checked):
    """Who searches: a built-in method, or the user's optimiser (`configsearch run`)."""

    method: str = flag("bo", "bo | random | exhaustive.", check=Rule(_method, "bogus"), api=False)
    agent: str | None = flag(
        None,
        "Your ask/tell optimiser (MODULE:ATTR or a registered name) instead of --method.",
        api=False,
    )

    def searcher(self) -> str:
        return self.method if self.agent is None else self.agent


@dataclass(frozen=True, kw_only=True)
class SweepArgs(Checked):
    model: str = flag(
        "rf-scm", "rf-scm, crabnet, ofm-mlp or alignn.", check=Rule(_model, "nosuch"), api=False
    )


@dataclass(frozen=True, kw_only=True)
class ReferencesArgs(Checked):
    tasks: str | Sequence[str] = flag(
        "all",
        "Comma list of tasks, or all six.",
        check=Rule(_tasks, "nosuch"),
        parse_as=str,
        api=False,
    )
    models: str | Sequence[str] = flag(
        "rf-scm,crabnet",
        "Comma list of models.",
        check=Rule(_models, "nosuch"),
        parse_as=str,
        api=False,
    )

    def task_list(self) -> list[str]:
        return list(_tasks("--tasks", self.tasks))

    def model_list(self) -> list[str]:
        return list(_models("--models", self.models))


@dataclass(frozen=True, kw_only=True)
class ExportArgs(Checked):
    out: Path = flag(
        help="Directory for one <task>__<model>.json.gz per complete sweep.",
        check=Rule(out_dir),
        api=False,
    )
    slices: Path | None = flag(
        None,
        "Directory of r-slice files exported earlier (e.g. committed by another session); "
        "they are assembled with the store's sweeps of the same task x model.",
        api=False,
    )


@dataclass(frozen=True, kw_only=True)
class ReportArgs(Checked):
    out: Path = flag(
        Path("configsearch-report"), "Output directory.", check=Rule(out_dir), api=False
    )


__all__ = [
    "COST_ALPHA",
    "DEFAULT_SEED",
    "DEFAULT_STORE",
    "ConfigsearchOptions",
    "ConfigsearchRunOptions",
    "ConfigsearchStore",
    "DatasetArgs",
    "ExportArgs",
    "ProblemObjects",
    "RValues",
    "ReferencesArgs",
    "ReportArgs",
    "SampleOptions",
    "SearchArgs",
    "SeedArg",
    "SpaceArgs",
    "SweepArgs",
    "TaskArg",
    "Threads",
    "parse_run_options",
]
