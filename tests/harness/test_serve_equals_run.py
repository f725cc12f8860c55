"""One door: at defaults, `serve` (an official MCP client over stdio), the CLI's `run` and
`labreplay.run` record the same runs: the same run ids, scores and event chains.

Was: `campaign serve` played one random replicate where `campaign run` and `labreplay.run`
play three (an agent's selection lift differed between the doors). To compare run ids, the
in-process agent declares the harness's identity (its name, `params` `{"interface": "mcp"}` and
`isolation = "mcp"`: what a served run is keyed by) and the MCP client replies with the same
policy, so every door must give the same run, byte for byte.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import labreplay
from labreplay.cli.main import run as cli
from labreplay.compile.spec import EnvironmentSpec
from labreplay.store.sqlite import Store

from .clients import drive, played_digest, serve_args

pytest.importorskip("mcp")

HARNESS = """
from labreplay.suites.campaign.agents import BayesAgent
from labreplay.suites.conditions.agents import RandomAgent


class CampaignHarness(BayesAgent):
    name = "harness"
    isolation = "mcp"

    def params(self):
        return {"interface": "mcp"}


class ConditionsHarness:
    name = "harness"
    isolation = "mcp"

    def params(self):
        return {"interface": "mcp"}

    def answer(self, question_view):
        return RandomAgent(0).answer(question_view)


class ConfigsearchHarness:
    name = "harness"
    isolation = "mcp"

    def params(self):
        return {"interface": "mcp"}

    def suggest(self, history):
        return history["candidates"][-1]

    def observe(self, result):
        return None
"""


@pytest.fixture
def harnessed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`harnessed:CampaignHarness` / `harnessed:ConditionsHarness`, importable here."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "harnessed.py").write_text(HARNESS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    yield
    sys.modules.pop("harnessed", None)


def _runs(path: Path) -> list[tuple[str, str, str, str, dict[str, float | None]]]:
    """(run id, branch, status, head hash, scores) of every run, by run id."""
    with Store(path, readonly=True) as db:
        return sorted(
            (r.run_id, r.branch, r.status, db.events(r.run_id)[-1]["hash"], db.scores(r.run_id))
            for r in db.runs()
        )


def _answer_served(
    args: list[str], env: dict[str, str], answer: Callable[[dict[str, Any]], Any]
) -> dict[str, Any]:
    """Answer every question a served conditions run shows (official MCP client, stdio);
    returns the final observation."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    async def answer_all() -> dict[str, Any]:
        server = StdioServerParameters(command=sys.executable, args=args, env=env)
        async with stdio_client(server) as (read, write), ClientSession(read, write) as mcp:
            await mcp.initialize()
            while True:
                result = await mcp.call_tool("observe", {})
                seen: dict[str, Any] = json.loads(result.content[0].text)  # type: ignore[union-attr]
                if seen.get("done"):
                    return seen
                await mcp.call_tool("act", {"reply": answer(seen)})

    return asyncio.run(answer_all())


def test_campaign_serve_cli_and_api_record_the_same_runs(
    campaign_specs: list[EnvironmentSpec],
    spec_dir: Path,
    served_env: dict[str, str],
    harnessed: None,
    tmp_path: Path,
) -> None:
    from labreplay.suites.campaign.agents import BayesAgent

    by_cli, by_api, served = (tmp_path / f"{n}.sqlite" for n in ("cli", "api", "mcp"))
    argv = ["campaign", "run", "--specs", str(spec_dir), "--only", "short-1", "--json"]
    assert cli([*argv, "--agent", "harnessed:CampaignHarness", "--store", str(by_cli)]) == 0
    from harnessed import CampaignHarness  # type: ignore[import-not-found]

    labreplay.run("campaign", campaign_specs[:1], CampaignHarness, by_api)
    args = serve_args("campaign", "--specs", str(spec_dir), "--store", str(served), "--only")
    out = asyncio.run(drive([*args, "short-1", "--agent-name", "harness"], served_env, BayesAgent))
    assert out["final"]["played"][0]["status"] == "complete"
    runs = _runs(served)
    assert [branch for _, branch, *_ in sorted(runs, key=lambda r: r[1])] == [
        "adaptive",
        "no-evidence",
        "random",
        "random-2",
        "random-3",
    ]
    assert runs == _runs(by_cli) == _runs(by_api)


def test_conditions_serve_cli_and_api_record_the_same_run(
    question_file: Path, served_env: dict[str, str], harnessed: None, tmp_path: Path
) -> None:
    from labreplay.suites.conditions.agents import RandomAgent
    from labreplay.suites.conditions.questions import load_questions
    from labreplay.suites.conditions.runner import question_spec

    by_cli, by_api, served = (tmp_path / f"{n}.sqlite" for n in ("cli", "api", "mcp"))
    argv = ["conditions", "run", "--questions", str(question_file), "--json"]
    assert cli([*argv, "--agent", "harnessed:ConditionsHarness", "--store", str(by_cli)]) == 0
    from harnessed import ConditionsHarness  # type: ignore[import-not-found]

    spec = question_spec(question_file, load_questions(question_file))
    labreplay.run("conditions", [spec], ConditionsHarness, by_api)
    args = serve_args("conditions", "--questions", str(question_file), "--store", str(served))
    done = _answer_served([*args, "--agent-name", "harness"], served_env, RandomAgent(0).answer)
    assert done["questions"] == len(load_questions(question_file))
    runs = _runs(served)
    assert len(runs) == 1 and runs[0][2] == "complete"
    assert runs == _runs(by_cli) == _runs(by_api)


@pytest.mark.llm
@pytest.mark.slow
def test_an_llm_conditions_run_is_the_same_through_every_door(
    question_file: Path, served_env: dict[str, str], tmp_path: Path
) -> None:
    """A real model (the local server) at defaults: the CLI's `run` and `labreplay.run` record
    the same run (id, scores, event chain); a harness over MCP answering with the same agent
    plays the same answers to the same scores (its run is keyed by the harness, and has no
    model calls of ours to count); `--isolate` is refused alike by both doors (a model agent
    is no Python agent to isolate); every store verifies."""
    from labreplay.errors import AgentError
    from labreplay.suites.conditions.llm_agent import make_question_agent
    from labreplay.suites.conditions.questions import load_questions
    from labreplay.suites.conditions.runner import question_spec

    url = os.environ.get("LABREPLAY_LLM_BASE_URL")
    if not url:
        pytest.skip("LABREPLAY_LLM_BASE_URL is not set (no local LLM server)")
    by_cli, by_api, served = (tmp_path / f"{n}.sqlite" for n in ("cli", "api", "mcp"))
    small = ["--questions", str(question_file), "--limit", "2"]  # the server answers one at a time
    argv = ["conditions", "run", *small, "--agent", "openai:smollm2", "--base-url", url]
    assert cli([*argv, "--store", str(by_cli), "--json"]) == 0
    spec = question_spec(question_file, load_questions(question_file))
    options: dict[str, Any] = {"questions": question_file, "limit": 2, "base_url": url}
    labreplay.run("conditions", [spec], "openai:smollm2", by_api, **options)
    never = tmp_path / "never.sqlite"
    assert cli([*argv, "--store", str(never), "--isolate"]) == 2
    with pytest.raises(AgentError, match="--isolate runs your Python agents"):
        labreplay.run("conditions", [spec], "openai:smollm2", never, isolate=True, **options)
    assert not never.exists()
    model = make_question_agent("openai:smollm2", base_url=url)
    model.reset(0)
    _answer_served(
        serve_args("conditions", *small, "--store", str(served)), served_env, model.answer
    )
    ((run_id, _, status, _, scores),) = _runs(by_cli)
    assert status == "complete" and _runs(by_api) == _runs(by_cli)
    ((_, _, status, _, harness_scores),) = _runs(served)
    assert status == "complete" and scores.pop("failed_call_share") == 0.0
    assert harness_scores == scores
    with Store(by_cli, readonly=True) as a, Store(served, readonly=True) as b:
        (harness,) = b.runs()
        assert played_digest(a.events(run_id)) == played_digest(b.events(harness.run_id))
    for path in (by_cli, by_api, served):
        assert cli(["store", "verify", "--store", str(path), "--quiet"]) == 0


# configsearch's small declared setting (tests/configsearch/conftest.py) as flags; everything
# else (seed 42, budget, initial design, models, problem) at the defaults of every door
CONFIGSEARCH_SMALL = ["--task", "band_gap", "--n-total", "200", "--n-ood", "60", "--r-values"]
CONFIGSEARCH_SMALL += ["0,0.5", "--n-values", "4,6", "--s-values", "1,2,3"]
CONFIGSEARCH_SMALL += ["--min-test-points", "1"]  # n*s <= 18 here: C_min 30 would leave none


def test_configsearch_serve_cli_and_api_record_the_same_run(
    data_dir: Path,
    served_env: dict[str, str],
    harnessed: None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    from labreplay.suites.configsearch.options import SampleOptions, SpaceArgs
    from labreplay.suites.configsearch.pipeline import PipelineSettings

    by_cli, by_api, served = (tmp_path / f"{n}.sqlite" for n in ("cli", "api", "mcp"))
    cache = str(tmp_path / "cache")  # the pipeline's stages, shared by the three doors
    monkeypatch.setenv("LABREPLAY_CACHE_DIR", cache)
    argv = ["configsearch", "run", *CONFIGSEARCH_SMALL, "--json", "--store", str(by_cli)]
    assert cli([*argv, "--agent", "harnessed:ConfigsearchHarness"]) == 0
    from harnessed import ConfigsearchHarness  # type: ignore[import-not-found]

    space = SpaceArgs(r_values="0,0.5", n_values="4,6", s_values="1,2,3").space(
        SampleOptions(n_total=200, n_ood=60), 1
    )
    settings = PipelineSettings(n_total=200, n_ood=60)
    specs = labreplay.compile(
        "configsearch", data_dir, task="band_gap", settings=settings, space=space,
        min_test_points=1,
    )  # fmt: skip
    labreplay.run(
        "configsearch", specs, ConfigsearchHarness, by_api, settings=settings, space=space,
        min_test_points=1,
    )  # fmt: skip
    args = serve_args("configsearch", *CONFIGSEARCH_SMALL, "--store", str(served))

    async def search() -> dict[str, Any]:
        server = StdioServerParameters(
            command=sys.executable,
            args=[*args, "--agent-name", "harness"],
            env={**served_env, "LABREPLAY_CACHE_DIR": cache},
        )
        async with stdio_client(server) as (read, write), ClientSession(read, write) as mcp:
            await mcp.initialize()
            result = await mcp.call_tool("next_call", {})
            while True:
                call: dict[str, Any] = json.loads(result.content[0].text)  # type: ignore[union-attr]
                if call.get("done"):
                    return call
                # the policy of ConfigsearchHarness: the last untried candidate; observe: None
                payload = call["payload"]
                value = payload["candidates"][-1] if call["method"] == "suggest" else None
                result = await mcp.call_tool("reply", {"value": value})

    assert [r["status"] for r in asyncio.run(search())["runs"]] == ["complete"]
    runs = _runs(served)
    assert len(runs) == 1 and runs[0][2] == "complete"
    with Store(served, readonly=True) as db:  # the harness's suggestions were the searches'
        assert db.scores(runs[0][0])["invalid_steps"] == 0
    assert runs == _runs(by_cli) == _runs(by_api)
