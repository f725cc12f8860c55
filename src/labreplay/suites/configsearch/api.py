"""The Python entry point behind `labreplay configsearch run|sweep`: a campaign on a built-in
task or on a user dataset (see dataset.py), so the CLI stays a thin layer."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from labreplay.errors import SpecError
from labreplay.sdk.engine import Store
from labreplay.suites.configsearch.dataset import dataset_space, register_dataset
from labreplay.suites.configsearch.pipeline import PipelineSettings
from labreplay.suites.configsearch.runner import ConfigSearch
from labreplay.suites.configsearch.space import ConfigSpace, paper_space

if TYPE_CHECKING:
    from labreplay.sdk.agents import ResolvedAgent
    from labreplay.sdk.options import LlmOptions
    from labreplay.suites.configsearch.llm_optimizer import CallTally
    from labreplay.suites.configsearch.options import ConfigsearchRunOptions


def open_campaign(
    data_dir: Path | None,
    store: Store,
    *,
    task: str | None = None,
    dataset: Path | None = None,
    dataset_b: Path | None = None,
    target: str | None = None,
    n_total: int = 1600,
    n_ood: int = 480,
    n_jobs: int = 1,
    space: ConfigSpace | None = None,
    min_test_points: int = 30,
    allow_modified_data: bool = False,
) -> ConfigSearch:
    """Exactly one of `task` (a registered task) or `dataset` (+ `target`) must be given. A
    built-in task's data file that differs from the manifest is refused unless
    `allow_modified_data` (the spec then records it under `unverified_data`)."""
    from labreplay.sdk.data import resolve_data_dir

    if (task is None) == (dataset is None):
        raise SpecError("give either --task or --dataset FILE --target FIELD")
    settings = PipelineSettings(n_total=n_total, n_ood=n_ood)
    if dataset is not None:
        if not target:
            raise SpecError("--dataset needs --target FIELD (the numeric property to predict)")
        name = register_dataset(dataset, target, dataset_b)
        # the user's files are the data; the shared data directory is not needed
        root = Path(data_dir) if data_dir is not None else Path(".")
        base = space or paper_space()
        return ConfigSearch(
            root,
            name,
            store,
            settings=settings,
            space=dataset_space(dataset_b is not None, base),
            n_jobs=n_jobs,
            min_test_points=min_test_points,
        )
    if dataset_b is not None or target is not None:
        raise SpecError("--dataset-b and --target go with --dataset, not with --task")
    assert task is not None
    return ConfigSearch(
        resolve_data_dir(data_dir), task, store, settings=settings, space=space, n_jobs=n_jobs,
        min_test_points=min_test_points, allow_modified_data=allow_modified_data,
    )  # fmt: skip


def resolve_searcher(
    agent: object, run: ConfigsearchRunOptions, llm: LlmOptions
) -> tuple[str | ResolvedAgent, CallTally | None]:
    """Both doors' searcher, checked before any store: a built-in method's name, an
    `openai:MODEL` optimiser built with the LLM options (its calls tallied), or any optimiser
    (`isolate`: served from a child process)."""
    from labreplay.sdk.agents import is_llm_agent
    from labreplay.sdk.options import OptionError
    from labreplay.suites.configsearch.episodes import resolve_optimizer_agent
    from labreplay.suites.configsearch.options import METHODS

    if is_llm_agent(agent):
        from labreplay.suites.configsearch.llm_optimizer import make_factory

        if run.isolate:
            raise OptionError("--isolate: an openai: optimiser runs no user code to isolate")
        factory, tally = make_factory(str(agent), **llm.builder_kwargs())
        return resolve_optimizer_agent(factory), tally
    if run.isolate and isinstance(agent, str) and agent in METHODS:
        raise OptionError("--isolate: give the optimiser to isolate with --agent MODULE:ATTR")
    return resolve_optimizer_agent(agent, run.isolate, run.agent_timeout_s), None
