"""One instrument: the CLI and `labreplay.run` at defaults give the same run ids and scores,
and an unknown option is refused by name (with the nearest valid one) before any store exists.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import labreplay
from labreplay.cli.main import run as cli
from labreplay.store.sqlite import Store
from labreplay.validate import OptionError


def _runs_and_scores(path: Path) -> dict[str, tuple[str, str, dict[str, float | None]]]:
    with Store(path, readonly=True) as store:
        return {r.run_id: (r.branch, r.status, store.scores(r.run_id)) for r in store.runs()}


def _argv(command: str, *rest: str) -> list[str]:
    return [*command.split(), *rest]


@pytest.fixture(scope="module")
def campaign_dir(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cli-api") / "specs"
    assert cli(["campaign", "compile", "--seed", "0", "--out", str(out), "--json"]) == 0
    return out


def test_campaign_cli_and_api_give_identical_runs(campaign_dir: Path, tmp_path: Path) -> None:
    from labreplay.suites.campaign.api import load_specs

    by_cli = tmp_path / "cli.sqlite"
    code = cli(
        _argv(
            "campaign run --only short-1 --agent bayes --json",
            "--specs",
            str(campaign_dir),
            "--store",
            str(by_cli),
        )
    )
    assert code == 0
    specs = [s for s in load_specs(campaign_dir) if s.body["assignment"]["id"] == "short-1"]
    by_api = tmp_path / "api.sqlite"
    labreplay.run("campaign", specs, "bayes", by_api)
    cli_runs, api_runs = _runs_and_scores(by_cli), _runs_and_scores(by_api)
    # the defaults: the adaptive branch, 3 random replicates and the no-evidence control
    assert sorted(b for b, _, _ in cli_runs.values()) == [
        "adaptive",
        "no-evidence",
        "random",
        "random-2",
        "random-3",
    ]
    assert cli_runs == api_runs


def test_conditions_cli_and_api_give_identical_runs(question_file: Path, tmp_path: Path) -> None:
    from labreplay.suites.conditions.questions import load_questions
    from labreplay.suites.conditions.runner import question_spec

    by_cli = tmp_path / "cli.sqlite"
    code = cli(
        _argv(
            "conditions run --agent random --json",
            "--questions",
            str(question_file),
            "--store",
            str(by_cli),
        )
    )
    assert code == 0
    spec = question_spec(question_file, load_questions(question_file))
    by_api = tmp_path / "api.sqlite"
    labreplay.run("conditions", [spec], "random", by_api, questions=question_file)
    assert _runs_and_scores(by_cli) == _runs_and_scores(by_api)


def test_an_llm_conditions_run_is_the_same_by_cli_and_api(
    question_file: Path, tmp_path: Path
) -> None:
    """Defect: `labreplay.run("conditions", ..., agent="openai:MODEL", questions=...)` lost
    the model between resolving the agent and running it ("--agent llm needs --model")."""
    from labreplay.suites.conditions.questions import load_questions
    from labreplay.suites.conditions.runner import question_spec
    from labreplay.testing import fault_server as stub
    from labreplay.testing.schema_server import SchemaAnswerer

    by_cli, by_api = tmp_path / "cli.sqlite", tmp_path / "api.sqlite"
    spec = question_spec(question_file, load_questions(question_file))
    with stub.StubServer(SchemaAnswerer()) as server:
        url, questions = ("--base-url", server.base_url), ("--questions", str(question_file))
        command = "conditions run --agent openai:m --limit 4 --json"
        assert cli(_argv(command, *url, *questions, "--store", str(by_cli))) == 0
        labreplay.run(
            "conditions", [spec], "openai:m", by_api, questions=question_file, limit=4,
            base_url=server.base_url,
        )  # fmt: skip
    runs = _runs_and_scores(by_api)
    assert [status for _, status, _ in runs.values()] == ["complete"]
    assert _runs_and_scores(by_cli) == runs


@pytest.mark.parametrize(
    ("suite", "key", "nearest"),
    [("campaign", "contrls", "controls"), ("campaign", "budget", None)],
)
def test_a_misspelled_run_option_is_refused_by_name(
    campaign_dir: Path, tmp_path: Path, suite: str, key: str, nearest: str | None
) -> None:
    from labreplay.suites.campaign.api import load_specs

    specs = load_specs(campaign_dir)[:1]
    target = tmp_path / "never.sqlite"
    options: dict[str, Any] = {key: ()}
    with pytest.raises(OptionError, match=f"unknown option '{key}'") as raised:
        labreplay.run(suite, specs, "bayes", target, **options)
    if nearest is not None:
        assert f"did you mean '{nearest}'" in str(raised.value)
    assert not target.exists()


def test_agent_timeout_without_isolate_is_refused(campaign_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "never.sqlite"
    code = cli(
        _argv(
            "campaign run --agent bayes --agent-timeout 5",
            "--specs",
            str(campaign_dir),
            "--store",
            str(target),
        )
    )
    assert code == 2 and not target.exists()


def test_misspelled_compile_options_are_refused(data_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(OptionError, match="did you mean 'task'"):
        labreplay.compile("configsearch", data_dir, tsak="band_gap")
    with pytest.raises(OptionError, match="did you mean 'record'"):
        labreplay.compile("campaign", data_dir, recrod="precursor-genome")
    with pytest.raises(OptionError, match="did you mean 'datasets'"):
        labreplay.compile("conditions", data_dir, datasetz=["x"], out=tmp_path / "q.jsonl")
    assert not (tmp_path / "q.jsonl").exists()


def test_json_of_the_cli_matches_the_api_summary(campaign_dir: Path, tmp_path: Path) -> None:
    """The CLI prints what the API returns (same keys, same numbers)."""
    import contextlib
    import io

    from labreplay.suites.campaign.api import load_specs

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = cli(
            _argv(
                "campaign run --only short-2 --agent random --controls no-evidence --json",
                "--specs",
                str(campaign_dir),
                "--store",
                str(tmp_path / "cli.sqlite"),
            )
        )
    assert code == 0
    specs = [s for s in load_specs(campaign_dir) if s.body["assignment"]["id"] == "short-2"]
    api = labreplay.run(
        "campaign", specs, "random", tmp_path / "api.sqlite", controls=("no-evidence",)
    )
    printed = json.loads(buffer.getvalue())
    assert [r["branches"]["adaptive"]["run_id"] for r in printed] == [
        r["branches"]["adaptive"]["run_id"] for r in api
    ]


def test_an_edited_conditions_score_fails_store_verify(question_file: Path, tmp_path: Path) -> None:
    import sqlite3

    from labreplay.store.verify import verify_store
    from labreplay.suites.conditions.questions import load_questions
    from labreplay.suites.conditions.runner import question_spec

    spec = question_spec(question_file, load_questions(question_file))
    path = tmp_path / "c.sqlite"
    labreplay.run("conditions", [spec], "ranker", path, questions=question_file)
    with Store(path, readonly=True) as store:
        assert verify_store(store).ok
        (run,) = store.runs()
        metric, value = next((m, v) for m, v in store.scores(run.run_id).items() if v)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(
            "UPDATE scores SET value=? WHERE run_id=? AND metric=?",
            (float(value or 0) / 2 + 0.25, run.run_id, metric),
        )
    conn.close()
    with Store(path, readonly=True) as store:
        report = verify_store(store)
    assert not report.ok
    assert any(f"field {metric}" in p for p in report.problems), report.problems


def test_labreplay_run_parses_its_options_once(
    campaign_dir: Path, question_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Checking, resolving the agent and running each took the options apart again (three
    parses, three runs of every check); one `labreplay.run` builds each options class once."""
    from collections import Counter

    from labreplay.option_fields import Checked
    from labreplay.suites.campaign.api import load_specs
    from labreplay.suites.conditions.questions import load_questions
    from labreplay.suites.conditions.runner import question_spec

    built: Counter[str] = Counter()
    checks = Checked.__post_init__

    def counted(self: Checked) -> None:
        built[type(self).__name__] += 1
        checks(self)

    monkeypatch.setattr(Checked, "__post_init__", counted)
    specs = [s for s in load_specs(campaign_dir) if s.body["assignment"]["id"] == "short-1"]
    labreplay.run("campaign", specs, "random", tmp_path / "a.sqlite", controls=())
    assert built == {"CampaignRunOptions": 1, "LlmOptions": 1}
    built.clear()
    spec = question_spec(question_file, load_questions(question_file))
    labreplay.run("conditions", [spec], "random", tmp_path / "c.sqlite", questions=question_file)
    assert built == {"ConditionsRunOptions": 1, "LlmOptions": 1}
