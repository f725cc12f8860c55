"""inspect_ai integration: `labreplay/conditions` runs under inspect with our prompt, parser and
relative-score scorer, and `labreplay import inspect-log` stores the log as a conditions run
whose per-question scores are the log's."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from labreplay.store.sqlite import Store

pytest.importorskip("inspect_ai")

from inspect_ai import eval as inspect_eval
from inspect_ai.log import read_eval_log
from inspect_ai.model import ModelOutput, ModelUsage, get_model

from labreplay.suites.inspect_tasks.conditions import conditions
from labreplay.suites.inspect_tasks.importer import import_inspect_log

CLI = [sys.executable, "-m", "labreplay.cli.main"]


@pytest.fixture(scope="module")
def question_file(data_dir: Path, tmp_path_factory: Any) -> Path:
    from labreplay.suites.conditions.compiler import compile_datasets
    from labreplay.suites.conditions.report import write_compiled

    path = tmp_path_factory.mktemp("inspect") / "mitsunobu.jsonl"
    write_compiled(compile_datasets(["edbo_mitsunobu"], data_dir, seed=0), path)
    return path


def _outputs() -> Iterator[ModelOutput]:
    """mockllm replies that vary (options 1, 2, 3, ...; every 4th one unreadable); usage is
    set so that mockllm needs no tokenizer download."""
    k = 0
    while True:
        k += 1
        text = "no idea" if k % 4 == 0 else f"Looking at the table.\nAnswer: {k % 3 + 1}"
        out = ModelOutput.from_content(model="mockllm", content=text)
        out.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
        yield out


def test_inspect_conditions_log_imports_with_its_scores(
    question_file: Path, tmp_path: Path
) -> None:
    model = get_model("mockllm/model", custom_outputs=_outputs())
    (log,) = inspect_eval(
        conditions(questions=str(question_file)),
        model=model,
        limit=10,
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success" and log.location
    logged = {str(s.id): s.scores["relative_score"] for s in read_eval_log(log.location).samples}
    assert len(logged) == 10
    assert len({s.value for s in logged.values()}) > 1  # the scores discriminate
    store = tmp_path / "store.sqlite"
    result = import_inspect_log(log.location, store)
    assert result["samples"] == 10 and not result["cached"]
    with Store(store, readonly=True) as db:
        (run,) = db.runs(suite="conditions")
        events = db.events(run.run_id)
        assert run.status == "complete" and run.agent == "inspect:mockllm/model"
        assert run.agent_params["interface"] == "inspect"
        assert db.scores(run.run_id)["invalid_answers"] >= 1
    assert len(events) == 11 and events[0]["kind"] == "header"  # then one answer per sample
    for e in events[1:]:
        ours = e["payload"]["result"].get("score")
        assert (ours or 0.0) == pytest.approx(logged[e["payload"]["question_id"]].value)
        assert e["payload"]["raw"]["text"] == logged[e["payload"]["question_id"]].answer
    again = import_inspect_log(log.location, store)  # importing twice changes nothing
    assert again["cached"] is True and again["run_id"] == run.run_id


def test_import_refuses_a_missing_log(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    out = subprocess.run(
        [*CLI, "import", "inspect-log", "nope.eval", "--store", str(tmp_path / "s.sqlite")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert out.returncode == 2 and "inspect log not found" in out.stderr
    assert "Traceback" not in out.stderr and not (tmp_path / "s.sqlite").exists()


def _registered() -> bool:
    eps = importlib.metadata.entry_points(group="inspect_ai")
    return any(ep.name == "labreplay" for ep in eps)


# mockllm's default outputs count tokens with tiktoken's o200k_base, a download. The tests below
# make sure it cannot be downloaded (an empty tiktoken cache, every proxy a closed port) and run
# labreplay's tasks with mockllm's default outputs: they must complete (`_offline`).
UNREACHABLE = "http://127.0.0.1:9"


def _offline_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("no_proxy", "all_proxy")}
    (tmp_path / "tiktoken-cache").mkdir(exist_ok=True)
    env["TIKTOKEN_CACHE_DIR"] = str(tmp_path / "tiktoken-cache")
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        env[name] = UNREACHABLE
    return env


@pytest.fixture
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """This process offline for tiktoken, with o200k_base not loaded yet."""
    import tiktoken.registry

    from labreplay.sdk.agents import mockllm_offline_state

    for name, value in _offline_env(tmp_path).items():
        monkeypatch.setenv(name, value)
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delitem(tiktoken.registry.ENCODINGS, "o200k_base", raising=False)
    monkeypatch.setitem(mockllm_offline_state, "unavailable", False)


def _warned_offline(log: Any) -> bool:
    return any(
        "could not be fetched" in str(getattr(event, "message", ""))
        for sample in log.samples
        for event in sample.events
        if type(event).__name__ == "LoggerEvent"
    )


def test_mockllm_default_output_runs_offline(
    question_file: Path, tmp_path: Path, offline: None
) -> None:
    """inspect's `eval()` on `labreplay/conditions` with `mockllm/model` as it comes (no
    outputs given, so it counts tokens): completes offline, usage filled by the estimate."""
    import tiktoken

    with pytest.raises(OSError):  # really offline: the download fails
        tiktoken.get_encoding("o200k_base")
    (log,) = inspect_eval(
        conditions(questions=str(question_file)),
        model="mockllm/model",
        limit=3,
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    full = read_eval_log(log.location)
    assert full.samples is not None and len(full.samples) == 3
    for sample in full.samples:
        usage = sample.output.usage
        assert usage is not None and usage.input_tokens > 0
    assert _warned_offline(full)


def test_mockllm_default_output_plays_the_campaign_offline(
    spec_dir: Path, tmp_path: Path, offline: None
) -> None:
    from labreplay.suites.inspect_tasks.campaign import campaign

    task = campaign(specs=str(spec_dir), store=str(tmp_path / "s.sqlite"), only="short-1")
    (log,) = inspect_eval(
        task, model="mockllm/model", log_dir=str(tmp_path / "logs"), display="none"
    )
    assert log.status == "success", log.error
    full = read_eval_log(log.location)
    assert full.samples is not None and len(full.samples) == 3
    assert _warned_offline(full)


@pytest.mark.skipif(not _registered(), reason="labreplay is not installed with its entry points")
def test_inspect_cli_runs_the_registered_task(question_file: Path, tmp_path: Path) -> None:
    """`inspect eval labreplay/conditions ... --model mockllm/model --limit 10`, offline (no
    tokenizer to download), writes a log and `labreplay import inspect-log` stores its
    scores."""
    env = {**_offline_env(tmp_path), "PYTHONPATH": os.pathsep.join(sys.path)}
    logs = tmp_path / "logs"
    cmd = [sys.executable, "-m", "inspect_ai", "eval", "labreplay/conditions"]
    cmd += ["-T", f"questions={question_file}", "--model", "mockllm/model", "--limit", "10"]
    done = subprocess.run(
        [*cmd, "--log-dir", str(logs)], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (log,) = list(logs.glob("*.eval"))
    assert read_eval_log(str(log)).status == "success"
    assert _warned_offline(read_eval_log(str(log)))
    store = tmp_path / "store.sqlite"
    out = subprocess.run(
        [*CLI, "import", "inspect-log", str(log), "--store", str(store), "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    result = json.loads(out.stdout)
    assert result["samples"] == 10 and result["invalid_answers"] == 10  # mockllm's default text
    with Store(store, readonly=True) as db:
        (run,) = db.runs(suite="conditions")
        assert run.status == "complete" and len(db.events(run.run_id)) == 11  # header + 10


def _first_offered_model() -> Any:
    """A mock model that plays `FirstOffered` through the typed tools (usage set: offline)."""
    from .clients import FirstOffered

    policy = FirstOffered()

    def reply(messages: list[Any], tools: list[Any], tool_choice: Any, config: Any) -> Any:
        view = json.loads(str(messages[-1].text).split("\n\nRules: ")[0])
        if view["kind"] == "panel_checkpoint":
            name, args = "submit_panel_forecast", policy.forecast(view)
        else:
            action = policy.act(view)
            name, args = action.pop("type"), action
        out = ModelOutput.for_tool_call("mockllm", name, args)
        out.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
        return out

    return get_model("mockllm/model", custom_outputs=reply)


def test_inspect_campaign_plays_every_branch_like_in_process(
    tmp_path: Path, spec_dir: Path
) -> None:
    from labreplay.suites.campaign.api import load_specs, select_specs
    from labreplay.suites.campaign.runner import run_assignment
    from labreplay.suites.inspect_tasks.campaign import campaign

    from .clients import FirstOffered

    store = tmp_path / "inspect.sqlite"
    task = campaign(specs=str(spec_dir), store=str(store), only="short-1")
    (log,) = inspect_eval(
        task, model=_first_offered_model(), log_dir=str(tmp_path / "logs"), display="none"
    )
    assert log.status == "success", log.error
    samples = read_eval_log(log.location).samples
    assert sorted(str(s.id) for s in samples) == [
        "short-1/adaptive",
        "short-1/no-evidence",
        "short-1/random",
    ]
    local = tmp_path / "local.sqlite"
    spec = select_specs(load_specs(spec_dir), "short-1")[0]
    with Store(local) as db:
        reference = run_assignment(spec, FirstOffered, db, 0)
    with Store(store, readonly=True) as db:
        runs = {r.branch: r for r in db.runs(suite="campaign")}
        assert {r.agent for r in runs.values()} == {"inspect:mockllm/model"}
        assert {r.provenance["agent_isolation"] for r in runs.values()} == {"inspect"}
    with Store(local, readonly=True) as ref, Store(store, readonly=True) as db:
        for branch, row in reference["branches"].items():
            assert runs[branch].status == "complete"
            # the same events but the header (its agent and isolation differ), so the
            # chains differ from the header on
            played, local_events = db.events(runs[branch].run_id), ref.events(row["run_id"])
            assert played[1]["payload"]["isolation"] == "inspect"
            assert [(e["kind"], e["payload"]) for e in played[2:]] == [
                (e["kind"], e["payload"]) for e in local_events[2:]
            ], branch
    by_id = {str(s.id): s.scores["branch_auc"].value for s in samples}
    for branch, row in reference["branches"].items():
        assert by_id[f"short-1/{branch}"] == pytest.approx(row["adaptive_auc"])
