"""The public Python API: compile specs and run agents on any registered suite.

    import labreplay
    labreplay.list_suites()                       # ['campaign', 'conditions', 'configsearch']
    specs = labreplay.compile("campaign", record="precursor-genome", seed=0)
    results = labreplay.run("campaign", specs, agent="bayes", store="results.sqlite", seed=0)

The agent may be a reference agent's name, a registered name, `MODULE:ATTR`, an object that
implements the suite's contract (`labreplay.CampaignAgent`, `QuestionAgent`, `Optimizer`) or a
factory of such objects: `labreplay.run("campaign", specs, agent=MyAgent, store=...)`.

`run` goes through the shared driver (`labreplay.execute.driver.run_units`): finished work is
read back from the store, any executor may compute (in-process by default; see
`labreplay.execute`), and only this process writes the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from labreplay.errors import LabreplayError
from labreplay.suite import ChecksOptions, default_seed, get_suite

# `import labreplay` imports this module: the store and the spec model (pydantic) are imported
# by the calls that use them, so `labreplay version` and `--help` start without them.
if TYPE_CHECKING:
    from labreplay.compile.spec import EnvironmentSpec
    from labreplay.execute.base import Executor
    from labreplay.store.sqlite import Store


def compile(
    suite: str, data_dir: str | Path | None = None, **options: object
) -> list[EnvironmentSpec]:
    """Compile `suite`'s records into frozen, hashed specs (options: see the suite's
    `compile`). A `seed` is checked as `run` checks it (an int, a NumPy integer or a digit
    string; a float, a bool or None is refused)."""
    from labreplay.validate import seed as check_seed

    if "seed" in options:
        options["seed"] = check_seed("--seed", options["seed"])
    return get_suite(suite).compile(Path(data_dir) if data_dir is not None else None, **options)


def run(
    suite: str,
    specs: Sequence[EnvironmentSpec],
    agent: object,
    store: str | Path | Store,
    *,
    seed: int | None = None,
    executor: Executor | None = None,
    **options: object,
) -> list[dict[str, object]]:
    """Run `agent` (object, factory, registered name or MODULE:ATTR) on `specs`, storing
    everything in `store` (a path or an open `Store`); returns one summary per unit of work,
    in order. The agent is checked against the suite's contract before the store is opened
    (AgentError naming the agent, the method and what is wrong); so are the seed, the specs
    and the suite's own options (`check_options`: an unknown key is refused naming the
    nearest valid one). `seed=None` takes the suite's default (`default_seed`, as its CLI)."""
    from labreplay.compile.spec import EnvironmentSpec
    from labreplay.option_fields import parsed_once
    from labreplay.store.sqlite import Store
    from labreplay.validate import OptionError
    from labreplay.validate import seed as check_seed

    with parsed_once():  # the check, the agent's resolution and the run share one parse
        target = get_suite(suite)
        if seed is None:  # the suite's own default, the same as its CLI's --seed
            seed = default_seed(target)
        seed = check_seed("--seed", seed)  # "0" and np.int64(0) are the seed 0 (the same run ids)
        if isinstance(specs, str | bytes) or not isinstance(specs, Sequence) or not specs:
            raise OptionError(f"specs: value {specs!r} must be a non-empty list of specs")
        if not all(isinstance(s, EnvironmentSpec) for s in specs):
            raise OptionError(
                "specs: every item must be an EnvironmentSpec (see labreplay.compile)"
            )
        if isinstance(target, ChecksOptions):
            target.check_options(**options)
        resolved = target.resolve_agent(agent, seed=seed, **options)
        if isinstance(store, Store):
            return target.run(specs, resolved, store, seed=seed, executor=executor, **options)
        path = Path(store)
        created = not path.exists()
        try:
            with Store(path) as db:
                return target.run(specs, resolved, db, seed=seed, executor=executor, **options)
        except LabreplayError:
            # A run refused before it recorded anything (e.g. a spec whose question file is
            # nowhere) leaves no store behind that the call itself created.
            if created:
                _remove_if_empty(path)
            raise


def _remove_if_empty(path: Path) -> None:
    """Delete a store this call created when it holds no run (nothing to lose)."""
    from labreplay.store.sqlite import Store

    try:
        with Store(path, readonly=True) as db:
            if db.runs():
                return
    except LabreplayError:
        return
    for leftover in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        leftover.unlink(missing_ok=True)


__all__ = ["compile", "run"]
