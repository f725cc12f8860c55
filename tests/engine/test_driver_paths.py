"""The runner owns the episode: every run path -- each suite's CLI `run` (in-process, threads,
--isolate), `labreplay.run`, the suites' own run functions and the demos -- goes through the
episode runner's scheduling (`labreplay.execute.driver.run_units`, instrumented here); and no
module outside the campaign environment mutates its state."""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import labreplay
import labreplay.execute.driver as driver
from labreplay.store.sqlite import Store

SRC = Path(labreplay.__file__).resolve().parent


@pytest.fixture()
def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every call of run_units, by suite, wherever a module bound the name."""
    import labreplay.engine.runner

    seen: list[str] = []
    original = driver.run_units

    def counting(suite: str, *args: Any, **kwargs: Any) -> Any:
        seen.append(suite)
        return original(suite, *args, **kwargs)

    monkeypatch.setattr(driver, "run_units", counting)
    for module in list(sys.modules.values()):
        if getattr(module, "run_units", None) is original:
            monkeypatch.setattr(module, "run_units", counting)
    assert labreplay.engine.runner.run_units is counting
    return seen


@pytest.fixture(scope="module")
def short(compiled_campaign: Callable[..., Any]) -> list[Any]:
    specs = compiled_campaign(record="precursor-genome", seed=0)[1]
    return [s for s in specs if s.body["assignment"]["id"] == "short-2"]


def _invoke(app: Any, args: list[str]) -> None:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, (result.output, result.exception)


def test_campaign_paths_go_through_the_driver(
    calls: list[str], short: list[Any], tmp_path: Path, data_dir: Path
) -> None:
    from labreplay.suites.campaign.agents import BayesAgent
    from labreplay.suites.campaign.runner import run_assignment

    paths: dict[str, Callable[[], object]] = {
        "api by name": lambda: labreplay.run("campaign", short, "random", tmp_path / "a.db"),
        "api by class": lambda: labreplay.run(
            "campaign", short, agent=BayesAgent, store=tmp_path / "b.db", controls=("random",)
        ),
        "run_assignment": lambda: run_assignment(short[0], BayesAgent, _store(tmp_path), 1),
        "api on threads": lambda: labreplay.run(
            "campaign", short, "random", tmp_path / "c.db", executor=_threads()
        ),
    }
    for label, run in paths.items():
        before = len(calls)
        run()
        assert calls[before:] == ["campaign"], label


def test_campaign_cli_goes_through_the_driver(
    calls: list[str], short: list[Any], tmp_path: Path
) -> None:
    from labreplay.suites.campaign.api import load_specs
    from labreplay.suites.campaign.cli import app

    proc = CliRunner().invoke(app, ["compile", "--out", str(tmp_path / "specs")])
    assert proc.exit_code == 0, proc.output
    assert load_specs(tmp_path / "specs")
    base = ["run", "--specs", str(tmp_path / "specs"), "--only", "short-2", "--agent", "random"]
    for extra in ([], ["--executor", "threads"], ["--isolate"]):
        before = len(calls)
        _invoke(app, [*base, "--store", str(tmp_path / f"cli{len(extra)}.db"), *extra])
        assert calls[before:] == ["campaign"], extra


def test_conditions_paths_go_through_the_driver(
    calls: list[str], question_file: Path, tmp_path: Path
) -> None:
    from labreplay.suites.conditions.agents import RandomAgent
    from labreplay.suites.conditions.cli import app
    from labreplay.suites.conditions.questions import load_questions
    from labreplay.suites.conditions.run import run_agent
    from labreplay.suites.conditions.runner import question_spec

    questions = load_questions(question_file)
    spec = question_spec(question_file, questions)
    before = len(calls)
    labreplay.run("conditions", [spec], "ranker", tmp_path / "a.db", questions=question_file)
    labreplay.run("conditions", [spec], RandomAgent, tmp_path / "b.db", questions=question_file)
    with Store(tmp_path / "c.db") as db:
        run_agent(db, question_file, questions, RandomAgent(3), seed=3)
    _invoke(
        app,
        ["run", "--questions", str(question_file), "--agent", "random", "--store",
         str(tmp_path / "d.db")],
    )  # fmt: skip
    assert calls[before:] == ["conditions"] * 4


def _store(tmp_path: Path) -> Store:
    return Store(tmp_path / "ra.db")


def _threads() -> Any:
    from labreplay.execute.base import ThreadedExecutor

    return ThreadedExecutor(2)


# Functions that run an episode themselves instead of through the driver. Outside their own
# modules (and the driver's units), nothing may call them.
EPISODE_FUNCTIONS = {"run_branch", "run_assignment_branches", "search_detached"}
ALLOWED_CALLERS = {
    # store-less agent checks (labreplay.testing.check_agent): they write nothing
    "suites/campaign/checks.py",
    # --dry-run renders the real prompts with a store-less, model-less agent: it writes nothing
    "suites/campaign/dry_run.py",
    "suites/configsearch/suite.py",
    "suites/campaign/runner.py",
    "suites/configsearch/episodes.py",
}


def _calls_to(path: Path, names: set[str]) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", None)
            if name in names:
                hits.append(f"{path.relative_to(SRC)}:{node.lineno}: {name}")
    return hits


def test_demos_and_clis_never_run_episodes_past_the_driver() -> None:
    modules = [
        p for p in sorted(SRC.rglob("*.py")) if str(p.relative_to(SRC)) not in ALLOWED_CALLERS
    ]
    assert any(p.name == "demo.py" for p in modules) and len(modules) > 100
    offenders = [hit for p in modules for hit in _calls_to(p, EPISODE_FUNCTIONS)]
    assert offenders == []


def test_nothing_outside_the_environment_mutates_its_state() -> None:
    env_module = SRC / "suites" / "campaign" / "env.py"
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        if path == env_module:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = node.targets if isinstance(node, ast.Assign) else []
            for target in targets:
                if (
                    isinstance(target, ast.Attribute)
                    and target.attr in {"stopped", "phase"}
                    and not (isinstance(target.value, ast.Name) and target.value.id == "self")
                ):
                    offenders.append(f"{path.relative_to(SRC)}:{node.lineno}")
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "append"
                and isinstance(node.func.value, ast.Attribute)
                and node.func.value.attr == "trajectory"
                and not (
                    isinstance(node.func.value.value, ast.Name)
                    and node.func.value.value.id == "self"
                )
            ):
                offenders.append(f"{path.relative_to(SRC)}:{node.lineno} trajectory.append")
    assert offenders == []
