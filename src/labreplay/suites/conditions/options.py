"""The conditions suite's options: one class for `conditions run` and
`labreplay.run("conditions", ...)`, so both doors share one set of defaults."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from labreplay.sdk.options import check_agent_timeout, parse_options


@dataclass(frozen=True)
class ConditionsRunOptions:
    """What one conditions run takes besides specs, agent, store, seed and executor.

    `questions`: the question file the spec was compiled into (its sha256 must match the
    spec); by default the file attached to the spec by `compile`, else the store's copy. `model`: the model of `--agent llm`. `limit`: answer only the first N questions
    in an order seeded by the run seed (its own run). `isolate`/`agent_timeout_s`: serve a
    Python agent from a child process. `progress(n)`: called as answers are recorded.
    """

    questions: str | Path | None = None
    model: str | None = None
    limit: int | None = None
    isolate: bool = False
    agent_timeout_s: float | None = None
    progress: Callable[[int], None] | None = None

    def check(self) -> None:
        """Refuse bad values before any store exists."""
        from labreplay.errors import SpecError
        from labreplay.sdk.options import int_in

        if self.questions is not None and not isinstance(self.questions, str | Path):
            raise SpecError(f"questions: value {self.questions!r} must be a path")
        if self.limit is not None:
            int_in("limit", self.limit, 1)
        check_agent_timeout(self.isolate, self.agent_timeout_s)


@lru_cache(maxsize=1)
def llm_agent_keys() -> frozenset[str]:
    """Keyword arguments the LLM question agent builder takes (its signature is the list)."""
    from labreplay.suites.conditions.llm_agent import make_question_agent

    params = inspect.signature(make_question_agent).parameters
    skip = ("agent", "store", "seed", "render")
    return frozenset({*(p for p in params if p not in skip), "llm_seed"})


def parse_run_options(
    given: Mapping[str, object], where: str = "conditions run"
) -> tuple[ConditionsRunOptions, dict[str, object]]:
    """The run options and the agent builder's keyword arguments; unknown keys refused."""
    options, agent_kwargs = parse_options(ConditionsRunOptions, where, given, llm_agent_keys())
    options.check()
    if "llm_seed" in agent_kwargs:
        agent_kwargs["seed"] = agent_kwargs.pop("llm_seed")
    return options, agent_kwargs


__all__ = ["ConditionsRunOptions", "llm_agent_keys", "parse_run_options"]
