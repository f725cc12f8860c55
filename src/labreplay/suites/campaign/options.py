"""The campaign suite's options: one class for `campaign run` and `labreplay.run("campaign")`.

Defaults live here and nowhere else: the CLI builds `CampaignRunOptions` from its flags and
the Python API from its keyword arguments, so both doors run the same branches (e.g. the
number of schedule-matched random replicates) and give the same run ids and scores.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from labreplay.sdk.options import check_agent_timeout, parse_options

CONTROLS = ("random", "no-evidence")  # every control a run may ask for
DEFAULT_CONTROLS = CONTROLS
NO_CONTROLS = "none"


def parse_controls(text: object) -> tuple[str, ...]:
    """`random,no-evidence` (or a list of names, from Python) -> the control branches; an
    unknown name is named (exit 2). `none` (or an empty list, from Python) means the adaptive
    branch alone; an empty text is refused (an unset variable in a script is no choice)."""
    from labreplay.sdk.options import bad, name_list

    if isinstance(text, str):
        if not text.strip():
            raise bad("--controls", text, f"is empty; give {', '.join(CONTROLS)} or {NO_CONTROLS}")
        if text.strip() == NO_CONTROLS:
            return ()
    return name_list("--controls", text, CONTROLS, allow_empty=True)


@dataclass(frozen=True)
class CampaignRunOptions:
    """What one campaign run takes besides specs, agent, store, seed and executor.

    `controls`: control branches (a list, or `random,no-evidence` as text; empty: adaptive
    only). `random_replicates`: schedule-matched random replicates per assignment (None: 3 for
    Python agents, 1 for LLM agents, whose every replicate is a full campaign of calls).
    `isolate`/`agent_timeout_s`: serve a Python agent from a child process, each call answered
    within the timeout. `progress`: called once per assignment done.
    """

    controls: str | Sequence[str] = DEFAULT_CONTROLS
    random_replicates: int | None = None
    isolate: bool = False
    agent_timeout_s: float | None = None
    progress: Callable[[], None] | None = None

    def control_branches(self, agent: object) -> tuple[str, ...]:
        """The control branches, `random` expanded into its replicates (refuses bad names)."""
        from labreplay.sdk.options import int_in
        from labreplay.suites.campaign.branches import default_replicates, with_replicates

        replicates = (
            int_in("random_replicates", self.random_replicates, 1, 50)
            if self.random_replicates is not None
            else default_replicates(agent if isinstance(agent, str) else "")
        )
        return with_replicates(parse_controls(self.controls), replicates)

    def check(self) -> None:
        """Refuse bad values before any store exists."""
        self.control_branches("")
        check_agent_timeout(self.isolate, self.agent_timeout_s)


@lru_cache(maxsize=1)
def llm_agent_keys() -> frozenset[str]:
    """Keyword arguments the `openai:MODEL` agent builder takes (its signature is the list)."""
    from labreplay.suites.campaign.llm_agent import make_agent

    params = inspect.signature(make_agent).parameters
    # `seed` of the API is the run seed: the sampling seed is `llm_seed` (as on the CLI).
    return frozenset({*(p for p in params if p not in ("agent", "store", "seed")), "llm_seed"})


def parse_run_options(
    given: Mapping[str, object], where: str = "campaign run"
) -> tuple[CampaignRunOptions, dict[str, object]]:
    """The run options and the agent builder's keyword arguments; unknown keys refused."""
    options, agent_kwargs = parse_options(CampaignRunOptions, where, given, llm_agent_keys())
    options.check()
    if "llm_seed" in agent_kwargs:
        agent_kwargs["seed"] = agent_kwargs.pop("llm_seed")
    return options, agent_kwargs


__all__ = ["DEFAULT_CONTROLS", "CampaignRunOptions", "llm_agent_keys", "parse_run_options"]
