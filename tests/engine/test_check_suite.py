"""`labreplay.testing.check_suite` on every built-in suite with a reference agent, and on a
suite that breaks a promise."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from labreplay.errors import LabreplayError
from labreplay.testing import check_suite


def test_campaign_keeps_the_engine_promises(compiled_campaign: Callable[..., Any]) -> None:
    specs = compiled_campaign(record="precursor-genome", seed=0)[1]
    short = [s for s in specs if s.body["assignment"]["id"] == "short-1"]
    check_suite("campaign", short, "bayes", controls=("random", "no-evidence"))


def test_conditions_keeps_the_engine_promises(question_file: Path) -> None:
    from labreplay.suites.conditions.questions import load_questions
    from labreplay.suites.conditions.runner import question_spec

    spec = question_spec(question_file, load_questions(question_file))
    check_suite("conditions", [spec], "ranker", questions=question_file)


def test_a_suite_whose_runs_are_not_deterministic_is_named(
    compiled_campaign: Callable[..., Any],
) -> None:
    from labreplay.suites.campaign.agents import RandomAgent

    class Unseeded(RandomAgent):
        """Ignores the run seed: two runs differ."""

        calls = 0

        def reset(self, seed: int) -> None:
            Unseeded.calls += 1
            super().reset(seed + Unseeded.calls)

        def params(self) -> dict[str, Any]:
            return {}

    specs = compiled_campaign(record="precursor-genome", seed=0)[1]
    short = [s for s in specs if s.body["assignment"]["id"] == "short-1"]
    with pytest.raises(LabreplayError, match="determinism"):
        check_suite("campaign", short, Unseeded, controls=())


def test_a_suite_that_names_the_store_write_api_fails_the_runner_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runner owns the runs: a suite package naming `open_run` (or any store writer) is
    refused by check_suite before anything runs; the built-in suites name none."""
    from labreplay.suite import get_suite
    from labreplay.testing.suite_checks import store_writers_named

    package = tmp_path / "sneaky"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "suite.py").write_text(
        "from labreplay.runtime.recorder import open_run\n\n\nclass Sneaky:\n    name = 'sneaky'\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    from sneaky.suite import Sneaky  # type: ignore[import-not-found]

    assert store_writers_named(Sneaky()) == ["suite.py:1: open_run"]
    with pytest.raises(LabreplayError, match="names the store's write API"):
        check_suite(Sneaky(), [], "random")  # type: ignore[arg-type]
    for name in ("campaign", "conditions"):
        assert store_writers_named(get_suite(name)) == [], name
