"""The `Suite` protocol and the registry of suites.

A suite is one benchmark family (campaign, conditions, configsearch, ...). Suites are found
through the `labreplay.suites` entry-point group: each entry point names an object that
implements `Suite`. The core (CLI main, report, demo, execution driver) loops over
`load_suites()` and never imports a suite module by name, so a fourth suite is one folder
plus one entry-point line in its distribution's metadata:

    [project.entry-points."labreplay.suites"]
    mysuite = "my_package.mysuite:SUITE"

Entry points exist only in installed metadata (`pip install -e .` for a checkout).
"""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.machinery import PathFinder
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, runtime_checkable

from labreplay.errors import LabreplayError, StoreError

if TYPE_CHECKING:
    import typer

    from labreplay.compile.spec import EnvironmentSpec
    from labreplay.execute.base import Executor
    from labreplay.store.sqlite import RunInfo, Store

ENTRY_POINT_GROUP = "labreplay.suites"


@dataclass(frozen=True)
class ReportSection:
    """One suite's part of the HTML report: an HTML fragment plus facts the caller returns
    (e.g. which run the trajectory viewer shows)."""

    suite: str
    html: str
    info: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class Suite(Protocol):
    """What the core needs from a benchmark family."""

    name: str

    def cli(self) -> typer.Typer:
        """The suite's command group, mounted as `labreplay <name> ...`."""
        ...

    def report_section(self, store: Store, run_id: str | None = None) -> ReportSection | None:
        """The suite's report section read only from `store` (None: no runs of this suite).
        `run_id` asks for one run to be featured; suites without a per-run view ignore it."""
        ...

    def demo(self, data_dir: Path, store: Path, out_dir: Path, *, full: bool = False) -> None:
        """`make demo`'s part for this suite: runs into `store`, writes files under `out_dir`."""
        ...

    def compile(self, data_dir: Path | None = None, **options: object) -> list[EnvironmentSpec]:
        """Records -> frozen, hashed specs (suite-specific options: record, datasets, task...)."""
        ...

    def resolve_agent(self, agent: object, **options: object) -> object:
        """Check `agent` -- an object, a factory, a registered name (entry points
        `labreplay.agents`) or `MODULE:ATTR` -- against the suite's agent contract, before any
        store exists; one `AgentError` line naming the agent, the method and what is wrong
        otherwise. Returns what `run` takes (`run` also resolves whatever it is given)."""
        ...

    def run(
        self,
        specs: Sequence[EnvironmentSpec],
        agent: object,
        store: Store,
        *,
        seed: int = 0,
        executor: Executor | None = None,
        **options: object,
    ) -> list[dict[str, object]]:
        """Run `agent` (anything `resolve_agent` takes, or its result) on `specs` through the
        shared driver (`labreplay.execute.driver.run_units`); resumable."""
        ...

    def reference_agents(self) -> list[str]:
        """Names of the agents that run without a model server (checked by `check_agent`)."""
        ...

    def agent_problems(
        self, make_agent: Callable[[], object], spec: EnvironmentSpec, seed: int, **options: object
    ) -> list[str]:
        """The suite's part of `labreplay.testing.check_agent`: schema, firewall (canaries) and
        determinism checks of agents built by `make_agent` on `spec`; [] if all hold."""
        ...


# Optional capabilities a suite may add. Each is a declared, checkable protocol (never an
# attribute looked up by name): the core asks `isinstance(suite, Rescores)` and so on.


@runtime_checkable
class ChecksOptions(Protocol):
    """Refuses bad or unknown run options before any store exists (`labreplay.run`)."""

    def check_options(self, **options: object) -> None: ...


class ContentMissing(StoreError):
    """A stored run's figures cannot be recomputed because the store lacks a file its spec
    names by sha256 (a conditions question file: `Store.content`). A suite's `rescore` raises
    it; `store verify` fails the run (exit 1) unless `--allow-unverifiable` is given, and says
    what could not be checked."""


@runtime_checkable
class Rescores(Protocol):
    """Recomputes a stored run's scores from its events, its spec and the store (`store
    verify` compares them with the `scores` rows). Raises `ContentMissing` when the store
    lacks a file the spec names (nothing to recompute from)."""

    def rescore(
        self,
        spec: EnvironmentSpec,
        events: Sequence[Mapping[str, object]],
        run: RunInfo,
        store: Store | None = None,
    ) -> Mapping[str, float | None]: ...


class Rederived(TypedDict):
    """What a suite re-derives of a stored run beyond its scalar scores (`Rederives`)."""

    # metric -> the `scores.detail` the run stores for it (curves, closures, counts)
    details: dict[str, Any]
    # the status the run's records give ("complete" | "failed"); None where it rests on a
    # recorded claim the events cannot confirm (a harness stop), said as unverifiable
    status: str | None
    # `runs.summary` fields the board reads, re-derived from the events
    summary: dict[str, Any]
    # branches that must exist as this run's children for a board to use it (matched
    # controls): a missing one is a deleted (or never run) control, a problem
    controls: list[str]


@runtime_checkable
class Rederives(Protocol):
    """Re-derives a stored run's score details, status and summary counts from its events,
    its spec and the store (`store verify` compares them with what is stored)."""

    def rederive(
        self,
        spec: EnvironmentSpec,
        events: Sequence[Mapping[str, object]],
        run: RunInfo,
        store: Store | None = None,
    ) -> Rederived: ...


@runtime_checkable
class ImportsResults(Protocol):
    """Adds commands to `labreplay import ...` (results of other tools into a store)."""

    def import_cli(self) -> typer.Typer: ...


@runtime_checkable
class HasDefaultSeed(Protocol):
    """The run seed `labreplay.run` takes when given none (the suite CLI's `--seed`)."""

    default_seed: int


@runtime_checkable
class DeclaresContract(Protocol):
    """Names the suite's agent contract (a `typing.Protocol` class): `serve`
    (`labreplay.sdk.harness.serve_suite_run`) forwards the methods it declares."""

    agent_contract: type


def default_seed(suite: Suite) -> int:
    """The suite's declared default run seed (0 when it declares none)."""
    return int(suite.default_seed) if isinstance(suite, HasDefaultSeed) else 0


def entry_points_by_name(group: str = ENTRY_POINT_GROUP) -> dict[str, EntryPoint]:
    """The installed entry points of `group` by name (suites here; `labreplay.agents` too)."""
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=group):
        found.setdefault(ep.name, ep)  # the first distribution wins on a duplicate name
    return found


def list_suites() -> list[str]:
    """Names of the registered suites, sorted."""
    return sorted(entry_points_by_name())


def suite_summaries() -> dict[str, str]:
    """Name -> one line of every registered suite, in name order, without importing any
    (`labreplay --help` lists the suites this way): the first paragraph of the docstring of
    the package that holds its entry point's module, read from the source file; a generic line
    where there is none."""
    summaries = {}
    for name, ep in sorted(entry_points_by_name().items()):
        doc = _docstring(ep.module.rpartition(".")[0] or ep.module)
        summaries[name] = " ".join(doc.split("\n\n")[0].split()) if doc else f"The {name} suite."
    return summaries


def _docstring(module: str) -> str | None:
    """`module`'s docstring read from its source, importing neither it nor its packages (a
    dotted name's `find_spec` would import every package above it)."""
    top, *rest = module.split(".")
    try:
        spec = importlib.util.find_spec(top)
        for k in range(len(rest)):
            if spec is None or spec.submodule_search_locations is None:
                return None
            name = ".".join([top, *rest[: k + 1]])
            spec = PathFinder.find_spec(name, list(spec.submodule_search_locations))
        if spec is None or not spec.has_location or not spec.origin:
            return None
        return ast.get_docstring(ast.parse(Path(spec.origin).read_bytes()))
    except (ImportError, OSError, SyntaxError, ValueError):
        return None  # no readable source (a zip, a compiled-only install): the generic line


_LOADED: dict[str, Suite] = {}


def get_suite(name: str) -> Suite:
    """The registered suite called `name` (LabreplayError naming the known ones if absent)."""
    if name in _LOADED:
        return _LOADED[name]
    eps = entry_points_by_name()
    if name not in eps:
        known = ", ".join(sorted(eps)) or "none (is labreplay installed? `pip install -e .`)"
        raise LabreplayError(f"no suite named {name!r}; registered suites: {known}")
    suite = eps[name].load()
    if not isinstance(suite, Suite) or suite.name != name:
        raise LabreplayError(
            f"entry point {name!r} in group {ENTRY_POINT_GROUP} does not name a Suite "
            f"called {name!r}"
        )
    _LOADED[name] = suite
    return suite


def load_suites() -> list[Suite]:
    """Every registered suite, in name order."""
    return [get_suite(name) for name in list_suites()]


__all__ = [
    "ENTRY_POINT_GROUP",
    "ChecksOptions",
    "ContentMissing",
    "DeclaresContract",
    "HasDefaultSeed",
    "ImportsResults",
    "ReportSection",
    "Rescores",
    "Suite",
    "default_seed",
    "get_suite",
    "list_suites",
    "load_suites",
    "suite_summaries",
]
