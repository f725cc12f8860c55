"""`check_suite(suite, specs, agent)`: does this suite keep the engine's promises?

Modelled on Gymnasium's `check_env`, for suite authors (a fourth suite's tests call it on its
reference agent, as the built-in suites' tests do):

- **one door**: `labreplay.run` refuses an unknown option before any store exists;
- **determinism**: the same agent, specs, seed and options, run into two fresh stores, give
  the same run ids, statuses, trajectory heads and scores;
- **resume**: running again into a finished store returns the same summaries and leaves the
  store's runs, events and scores as they were (finished work is read back, not redone);
- **verifiable**: `store verify` passes on the store, and where the suite recomputes scores
  (`Rescores`) every stored score equals its recomputation from the events;
- **the runner owns the runs**: no module of the suite's package names the store's write API
  (`STORE_WRITERS`): it declares episodes, plays into a sink and scores, nothing more.

Raises `LabreplayError` listing every problem, or returns None.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from labreplay.compile.spec import EnvironmentSpec
from labreplay.errors import LabreplayError
from labreplay.store.sqlite import Store
from labreplay.suite import Suite, get_suite

# The store's write API: only the episode runner (`labreplay.engine`) may name these.
STORE_WRITERS = frozenset(
    {
        "open_run",
        "open_recorder",
        "Recorder",
        "RunHeader",
        "header_payload",
        "judge",
        "run_units",
        "put_scores",
        "finish_run",
        "append_events",
        "record_llm_calls",
    }
)


def store_writers_named(suite: object) -> list[str]:
    """`file:line: name` for every store-writing name the suite's package imports or uses."""
    import ast
    import importlib

    package = type(suite).__module__.rpartition(".")[0] or type(suite).__module__
    where = getattr(importlib.import_module(package), "__file__", None)
    if where is None:
        return []
    root = Path(where).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.asname or a.name for a in node.names]
                if isinstance(node, ast.ImportFrom)
                else [node.id]
                if isinstance(node, ast.Name)
                else [node.attr]
                if isinstance(node, ast.Attribute)
                else []
            )
            line = getattr(node, "lineno", 0)
            found += [f"{path.name}:{line}: {n}" for n in names if n in STORE_WRITERS]
    return found


# run id -> (status, branch, the chain it finished with, its scores but wall-clock ones)
Snapshot = dict[str, tuple[str, str, object, dict[str, float | None]]]


def _snapshot(path: Path) -> Snapshot:
    """Runs (id -> status, head hash) and scores of a store: what a board reads."""
    with Store(path, readonly=True) as store:
        runs = store.runs()
        return {
            r.run_id: (
                r.status,
                r.branch,
                (r.summary or {}).get("chain"),
                {k: v for k, v in store.scores(r.run_id).items() if not k.endswith("_s")},
            )
            for r in runs
        }


def check_suite(
    suite: str | Suite,
    specs: Sequence[EnvironmentSpec],
    agent: object,
    *,
    seed: int | None = None,
    workdir: str | Path | None = None,
    **options: Any,
) -> None:
    """Check `suite` with `agent` on `specs` (options as `labreplay.run` takes them; keep
    the specs few and small: every check runs them). Wall-clock fields (`*_s`) are not
    compared."""
    import labreplay
    from labreplay.store.verify import verify_store

    target = get_suite(suite) if isinstance(suite, str) else suite
    writers = store_writers_named(target)
    if writers:  # before anything runs: such a suite bypasses the runner
        raise LabreplayError(
            f"suite check failed for {target.name}: runner: the suite names the store's write "
            f"API ({'; '.join(writers[:3])})"
        )
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="labreplay-check-suite-") as tmp:
        root = Path(workdir) if workdir is not None else Path(tmp)
        refused = root / "refused.sqlite"
        try:
            labreplay.run(
                target.name, specs, agent, refused, seed=seed, no_such_option=1, **options
            )
            problems.append("one door: an unknown option was accepted")
        except LabreplayError:
            pass
        if refused.exists():
            problems.append("one door: a refused run left a store behind")
        first, second = root / "first.sqlite", root / "second.sqlite"
        done = labreplay.run(target.name, specs, agent, first, seed=seed, **options)
        labreplay.run(target.name, specs, agent, second, seed=seed, **options)
        a, b = _snapshot(first), _snapshot(second)
        if not a:
            problems.append("runs: the run stored nothing")
        if a != b:
            diff = sorted(set(a) ^ set(b)) or [k for k in a if a[k] != b.get(k)]
            problems.append(f"determinism: two runs differ (first differing run {diff[0]})")
        again = labreplay.run(target.name, specs, agent, first, seed=seed, **options)
        if _snapshot(first) != a:
            problems.append("resume: running again changed a finished store")
        if _comparable(again) != _comparable(done):
            problems.append("resume: running again returned other summaries")
        with Store(first, readonly=True) as store:
            report = verify_store(store)
        problems += [f"verify: {p}" for p in report.problems[:5]]
    if problems:
        raise LabreplayError(f"suite check failed for {target.name}: " + "; ".join(problems))


def _comparable(value: object) -> object:
    """A run summary without wall-clock fields and resume markers."""
    if isinstance(value, dict):
        return {
            k: _comparable(v)
            for k, v in value.items()
            if not k.endswith("_s") and k not in ("resumed", "cached")
        }
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    return value


__all__ = ["STORE_WRITERS", "check_suite", "store_writers_named"]
