"""The configsearch suite's run options: one class whose defaults `configsearch run` and
`labreplay.run("configsearch", ...)` share (the CLI's option defaults are read from it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from labreplay.sdk.options import check_agent_timeout, parse_options

if TYPE_CHECKING:
    from labreplay.suites.configsearch.pipeline import PipelineSettings
    from labreplay.suites.configsearch.space import ConfigSpace

# The search seed of both doors when none is given (seeds 42..42+k-1, as the papers' replays).
DEFAULT_SEED = 42
# BO's weight of the fit cost when none is given (0: plain EI); here, not in `search`, so that
# the CLI's option default costs no numpy at `configsearch --help`.
COST_ALPHA = 0.0


@dataclass(frozen=True)
class ConfigsearchRunOptions:
    """What one configsearch run takes besides specs, agent (a method name or an optimiser),
    store, seed and executor. The compile options (task, n_total, n_ood, settings, space,
    cache_dir, min_test_points) rebuild the spec's problem and must match it."""

    models: str | Sequence[str] = ("rf-scm",)
    problem: str = "best-model"
    budget: int = 12
    init: int = 4
    seeds: int = 1
    gt: str = "reference"
    cost_alpha: float = 0.0
    min_test_points: int = 30
    n_total: int = 1600
    n_ood: int = 480
    task: str | None = None
    settings: PipelineSettings | None = None
    space: ConfigSpace | None = None
    cache_dir: str | Path | None = None
    data_dir: str | Path | None = None
    isolate: bool = False
    agent_timeout_s: float | None = None

    def model_list(self) -> list[str]:
        if isinstance(self.models, str):
            return [m.strip() for m in self.models.split(",") if m.strip()]
        return list(self.models)

    def check(self) -> None:
        """Refuse bad values before any store exists."""
        from labreplay.sdk.options import OptionError, choice, finite_float, int_in

        int_in("budget", self.budget, 1)
        int_in("init", self.init, 1, self.budget)
        int_in("seeds", self.seeds, 1, 1_000)
        int_in("min_test_points", self.min_test_points, 1)
        choice("gt", self.gt, ("reference", "mean"))
        finite_float("cost_alpha", self.cost_alpha, lo=0.0)
        if not self.model_list():
            raise OptionError("models: value () names no model")
        check_agent_timeout(self.isolate, self.agent_timeout_s)


RUN_DEFAULTS = ConfigsearchRunOptions()


def parse_run_options(
    given: Mapping[str, object], where: str = "configsearch run"
) -> ConfigsearchRunOptions:
    """The run options; an unknown key is refused naming the nearest valid one."""
    options, _ = parse_options(ConfigsearchRunOptions, where, given)
    options.check()
    return options


__all__ = ["DEFAULT_SEED", "RUN_DEFAULTS", "ConfigsearchRunOptions", "parse_run_options"]
