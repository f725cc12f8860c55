"""The public API (`labreplay.compile`, `labreplay.run`, `Store.runs` filters) and
`labreplay.testing.check_agent` applied to every suite's reference agents."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import labreplay
from labreplay.errors import AgentError
from labreplay.store.sqlite import Store
from labreplay.testing import check_agent


@pytest.fixture(scope="module")
def campaign_specs(compiled_campaign: Callable[..., Any]) -> list[Any]:
    return compiled_campaign(record="precursor-genome", seed=0)[1]


def test_compile_and_run_through_the_registry(campaign_specs: list[Any], tmp_path: Path) -> None:
    assert len(campaign_specs) == 12
    short = [s for s in campaign_specs if s.body["assignment"]["id"] == "short-1"]
    first = labreplay.run("campaign", short, "bayes", tmp_path / "s.sqlite", controls=("random",))
    again = labreplay.run("campaign", short, "bayes", tmp_path / "s.sqlite", controls=("random",))
    # the API's defaults are the CLI's: 3 schedule-matched random replicates for bayes
    assert first == again
    assert set(first[0]["branches"]) == {"adaptive", "random", "random-2", "random-3"}
    with Store(tmp_path / "s.sqlite") as store:
        assert [r.branch for r in store.runs(suite="campaign", branch="random")] == ["random"]
        assert store.runs(suite="conditions") == []
        assert len(store.runs(status="complete")) == 4
        with pytest.raises(TypeError):
            store.runs(where="1=1")  # type: ignore[call-arg]


@pytest.mark.parametrize("name", ["bayes", "no-evidence", "random"])
def test_check_agent_campaign_references(campaign_specs: list[Any], name: str) -> None:
    from labreplay.suites.campaign.agents import REFERENCE_AGENTS

    assert name in labreplay.suite.get_suite("campaign").reference_agents()
    spec = next(s for s in campaign_specs if s.body["assignment"]["id"] == "short-4")
    check_agent(lambda: REFERENCE_AGENTS[name](), "campaign", spec, seed=3, strict=name != "random")


def test_check_agent_conditions_references_and_failures(data_dir: Path, tmp_path: Path) -> None:
    from labreplay.suites.conditions.agents import RandomAgent, reference_agent
    from labreplay.suites.conditions.questions import load_questions

    path = tmp_path / "q.jsonl"
    (spec,) = labreplay.compile("conditions", data_dir, datasets=["edbo_mitsunobu"], out=path)
    questions = load_questions(path)
    for name in labreplay.suite.get_suite("conditions").reference_agents():
        check_agent(
            lambda n=name: reference_agent(n, questions, 0), "conditions", spec, questions=path
        )

    class OutOfRange(RandomAgent):
        def answer(self, view: Any) -> dict[str, Any]:
            return {"option": 10_000} if "options" in view else super().answer(view)

    class Moody(RandomAgent):
        def answer(self, view: Any) -> dict[str, Any]:
            return {"option": random.randrange(len(view["options"]))} if "options" in view else {}

    # the spec's own question file (attached by the compiler): no questions= needed
    check_agent(lambda: RandomAgent(0), "conditions", spec)
    with pytest.raises(AgentError, match="form"):
        check_agent(lambda: OutOfRange(0), "conditions", spec)
    with pytest.raises(AgentError, match="determinism"):
        check_agent(lambda: Moody(0), "conditions", spec, questions=path)


def test_check_agent_contract_catches_a_secret_in_params() -> None:
    from labreplay.testing import contract_problems

    class Leaky:
        name = "leaky"

        def params(self) -> dict[str, Any]:
            return {"api_key": "sk-" + "abcdefghijklmnop1234"}  # split: no key-like literal

    assert any("secret" in p for p in contract_problems(Leaky()))


def test_a_seed_is_an_int_a_numpy_integer_or_a_digit_string(
    question_file: Path, tmp_path: Path
) -> None:
    """The same seed, the same run ids, whatever its spelling (issue 46: seed="0" stored a
    failed run, np.int64(0) was refused); the CLI's --seed goes through the same check."""
    import numpy as np

    from labreplay.suites.conditions.questions import load_questions
    from labreplay.suites.conditions.runner import question_spec

    spec = question_spec(question_file, load_questions(question_file))
    ids = []
    for k, seed in enumerate([3, "3", np.int64(3), np.uint8(3)]):
        (summary,) = labreplay.run(
            "conditions", [spec], "random", tmp_path / f"s{k}.sqlite", seed=seed, limit=5
        )
        with Store(tmp_path / f"s{k}.sqlite") as store:
            (run,) = store.runs()
        assert run.status == "complete" and run.seed == 3 and type(run.seed) is int
        ids.append(summary["run_id"])
    assert len(set(ids)) == 1


@pytest.mark.parametrize(
    "seed", [3.0, True, -1, "abc", "3.5", "", 2**63, "٣"], ids=lambda s: repr(s)
)
def test_a_seed_that_is_not_a_non_negative_integer_is_refused_before_any_store(
    question_file: Path, tmp_path: Path, seed: object
) -> None:
    import numpy as np

    from labreplay.suites.conditions.questions import load_questions
    from labreplay.suites.conditions.runner import question_spec
    from labreplay.validate import OptionError

    spec = question_spec(question_file, load_questions(question_file))
    for bad in (seed, np.float64(3.0) if seed == 3.0 else np.bool_(True)):
        with pytest.raises(OptionError, match="seed"):
            labreplay.run("conditions", [spec], "random", tmp_path / "s.sqlite", seed=bad)
        assert list(tmp_path.iterdir()) == []
    with pytest.raises(OptionError, match="seed"):  # compile checks it the same way
        labreplay.compile("conditions", out=tmp_path / "q.jsonl", seed=seed)
    with pytest.raises(OptionError, match="seed"):  # None: compile has no default to take
        labreplay.compile("conditions", out=tmp_path / "q.jsonl", seed=None)
    assert list(tmp_path.iterdir()) == []
