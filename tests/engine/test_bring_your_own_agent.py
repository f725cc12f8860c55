"""A researcher's own agent, as the README's "Bring your own agent" section gives it: its code
blocks are extracted and run here (MODULE:CLASS from the working directory, in-process and
isolated, the API with a class and an object), and the rules around it: resolution errors are
one line before any store exists, an agent's exception or non-JSON return is a recorded invalid
action, an isolated agent that never answers is a failed run, agents register through entry
points."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import labreplay
from labreplay.agents.contracts import CampaignAgent
from labreplay.agents.resolve import registered_agents, resolve_agent
from labreplay.errors import AgentError
from labreplay.store.sqlite import Store

README = Path(__file__).resolve().parents[2] / "docs" / "agents" / "bring-your-own.md"


def readme_block(first_line: str) -> str:
    """The README's fenced python block whose first line is `first_line`."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    found = [b for b in blocks if b.splitlines()[0].strip() == first_line]
    assert len(found) == 1, f"README has {len(found)} python blocks starting {first_line!r}"
    return found[0]


def cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    child = {**os.environ, "COLUMNS": "200", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "labreplay.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
        env=child,
        check=False,
    )


def one_line_error(proc: subprocess.CompletedProcess[str], code: int = 2) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == code, (proc.returncode, proc.stderr, proc.stdout[-800:])
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.fixture(scope="module")
def workdir(
    tmp_path_factory: pytest.TempPathFactory, copy_campaign_specs: Callable[[Path], Path]
) -> Path:
    """A user's directory: the README's agent module and compiled campaign specs."""
    root = tmp_path_factory.mktemp("user")
    (root / "my_agents.py").write_text(readme_block("# my_agents.py"), encoding="utf-8")
    (root / "my_question_agents.py").write_text(
        readme_block("# my_question_agents.py"), encoding="utf-8"
    )
    (root / "bad_agents.py").write_text(
        "import time\n"
        "from my_agents import FirstCandidate\n\n"
        "class NoForecast:\n    name = 'no-forecast'\n    def params(self): return {}\n"
        "    def reset(self, seed): pass\n    def act(self, observation): return {'type': 'stop'}\n\n"
        "class BadParams(FirstCandidate):\n    def params(self): return {'tags': {1, 2}}\n\n"
        "class Moody(FirstCandidate):\n"
        "    name = 'moody'\n"
        "    def reset(self, seed):\n        self.turn = 0\n"
        "    def act(self, observation):\n"
        "        self.turn += 1\n"
        "        if self.turn == 2:\n            raise ValueError('boom at turn 2')\n"
        "        if self.turn == 3:\n            return {'type': 'stop', 'why': {1, 2}}\n"
        "        if self.turn == 4:\n            return ['not', 'an', 'object']\n"
        "        return super().act(observation)\n\n"
        "class Sleeper(FirstCandidate):\n"
        "    name = 'sleeper'\n"
        "    def act(self, observation):\n        time.sleep(3600)\n",
        encoding="utf-8",
    )
    copy_campaign_specs(root / "specs")  # what `campaign compile --out specs` writes
    return root


def _run(workdir: Path, store: str, *extra: str) -> list[dict[str, Any]]:
    proc = cli(
        "campaign", "run", "--specs", "specs", "--only", "short-1", "--store", store,
        "--json", *extra, cwd=workdir,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    results: list[dict[str, Any]] = json.loads(proc.stdout)
    return results


def _played(store: Path, branch: dict[str, Any]) -> list[tuple[str, Any]]:
    """A branch's events but its header (which says how the agent ran: in-process and
    isolated runs differ there by design, so their chains differ from it on)."""
    with Store(store, readonly=True) as db:
        events = db.events(branch["run_id"])
    return [(e["kind"], e["payload"]) for e in events if e["kind"] != "header"]


def test_readme_agent_class_in_process_and_isolated_gives_identical_aucs(workdir: Path) -> None:
    inline = _run(workdir, "inline.sqlite", "--agent", "my_agents:FirstCandidate")
    isolated = _run(workdir, "isolated.sqlite", "--agent", "my_agents:FirstCandidate", "--isolate")
    assert inline[0]["status"] == isolated[0]["status"] == "complete"
    for branch in ("adaptive", "random", "no-evidence"):
        a, b = inline[0]["branches"][branch], isolated[0]["branches"][branch]
        assert a["adaptive_auc"] == b["adaptive_auc"]
        assert _played(workdir / "inline.sqlite", a) == _played(workdir / "isolated.sqlite", b)
        assert a["experiments_closed"] > 0 and a["invalid_actions"] == 0
    with Store(workdir / "isolated.sqlite", readonly=True) as db:
        (run,) = db.runs(branch="adaptive")
        assert run.agent == "first-candidate"
        assert run.provenance["agent_isolation"] == "subprocess"


def test_readme_python_api_with_a_class_and_an_object(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(workdir)
    monkeypatch.syspath_prepend(str(workdir))
    code = readme_block("# run_my_agent.py").replace("runs.sqlite", "api.sqlite")
    scope: dict[str, Any] = {}
    exec(compile(code, "README.md", "exec"), scope)  # the README's own example
    by_class = scope["results"]
    from my_agents import FirstCandidate  # type: ignore[import-not-found]

    short = scope["short"]
    by_object = labreplay.run("campaign", short, agent=FirstCandidate(), store="obj.sqlite")
    by_factory = labreplay.run("campaign", short, agent=lambda: FirstCandidate(), store="f.sqlite")
    assert by_class[0]["adaptive_auc"] == by_object[0]["adaptive_auc"]
    assert by_object[0]["branches"] == by_factory[0]["branches"]


def test_readme_question_agent_via_cli_and_api(
    workdir: Path, question_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proc = cli(
        "conditions", "run", "--questions", str(question_file), "--agent",
        "my_question_agents:FirstOption", "--store", "q.sqlite", "--json", cwd=workdir,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    by_cli = json.loads(proc.stdout)
    isolated = cli(
        "conditions", "run", "--questions", str(question_file), "--agent",
        "my_question_agents:FirstOption", "--store", "q.sqlite", "--json", "--isolate",
        cwd=workdir,
    )  # fmt: skip
    assert isolated.returncode == 0, isolated.stderr
    by_child = json.loads(isolated.stdout)
    assert by_child["run_id"] != by_cli["run_id"]  # isolation is part of the run's identity
    assert by_child["mc_all_score"] == pytest.approx(by_cli["mc_all_score"], abs=1e-9)
    with Store(workdir / "q.sqlite", readonly=True) as db:
        assert db.run(by_child["run_id"]).provenance["agent_isolation"] == "subprocess"
    monkeypatch.syspath_prepend(str(workdir))
    from my_question_agents import FirstOption  # type: ignore[import-not-found]

    from labreplay.suites.conditions.questions import load_questions
    from labreplay.suites.conditions.runner import question_spec

    spec = question_spec(question_file, load_questions(question_file))
    for agent in (FirstOption, FirstOption()):
        (by_api,) = labreplay.run(
            "conditions", [spec], agent=agent, store=workdir / "qa.sqlite", questions=question_file
        )
        assert by_api["mc_all_score"] == pytest.approx(by_cli["mc_all_score"], abs=1e-9)
    with Store(workdir / "qa.sqlite", readonly=True) as db:
        assert [r.agent for r in db.runs(suite="conditions")] == ["first-option"]


@pytest.mark.parametrize(
    ("agent", "expected"),
    [
        ("no_such_module:Agent", r"agent 'no_such_module:Agent': cannot import module"),
        ("my_agents:Missing", r"module 'my_agents' has no attribute 'Missing'"),
        ("bad_agents:NoForecast", r"method forecast\(\) is missing"),
        ("bad_agents:BadParams", r"method params\(\) returned a non-JSON value"),
        ("nonsense", r"agent 'nonsense': unknown \(give a reference agent"),
        ("bayse", r"agent 'bayse': unknown \(did you mean 'bayes'\? give a reference agent"),
    ],
)
@pytest.mark.parametrize("isolate", [False, True])
def test_bad_agents_are_one_line_before_any_store(
    workdir: Path, agent: str, expected: str, isolate: bool
) -> None:
    store = workdir / f"never-{abs(hash((agent, isolate)))}.sqlite"
    extra = ["--isolate"] if isolate else []
    proc = cli(
        "campaign", "run", "--specs", "specs", "--agent", agent, "--store", str(store), *extra,
        cwd=workdir,
    )  # fmt: skip
    line = one_line_error(proc)
    assert re.search(expected, line), line
    assert not store.exists()


def test_every_reference_agent_is_listed_the_oracle_too(workdir: Path) -> None:
    proc = cli("campaign", "run", "--specs", "specs", "--agent", "orcale", "--store", "x.sqlite",
               cwd=workdir)  # fmt: skip
    line = one_line_error(proc)
    assert "did you mean 'oracle'?" in line and "bayes, no-evidence, oracle, random" in line
    assert not (workdir / "x.sqlite").exists()


def test_the_api_isolates_an_importable_class_as_its_module_attr(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`isolate=True` with a class defined at the top of an importable module serves it from a
    child, exactly as `MODULE:ATTR` does (the same runs); a class of this process is refused in
    one line (it was refused whatever it was, naming a CLI flag)."""
    monkeypatch.chdir(workdir)
    monkeypatch.syspath_prepend(str(workdir))
    from my_agents import FirstCandidate

    short = [s for s in labreplay.compile("campaign", seed=0) if s.spec_id.endswith("short-1")]
    assert len(short) == 1
    by_class = labreplay.run("campaign", short, FirstCandidate, "iso-class.sqlite", isolate=True)
    by_ref = labreplay.run("campaign", short, "my_agents:FirstCandidate", "iso-ref.sqlite",
                           isolate=True)  # fmt: skip
    assert by_class[0]["branches"] == by_ref[0]["branches"]
    with Store(workdir / "iso-class.sqlite", readonly=True) as db:
        assert {r.provenance["agent_isolation"] for r in db.runs()} == {"subprocess"}

    class Local(FirstCandidate):
        pass

    with pytest.raises(AgentError, match=r"isolate \(--isolate\) needs an importable agent"):
        labreplay.run("campaign", short, Local, "never.sqlite", isolate=True)
    assert not (workdir / "never.sqlite").exists()


def test_raising_and_non_json_actions_are_recorded_invalid_alike(workdir: Path) -> None:
    inline = _run(workdir, "moody.sqlite", "--agent", "bad_agents:Moody")
    isolated = _run(workdir, "moody-iso.sqlite", "--agent", "bad_agents:Moody", "--isolate")
    a, b = inline[0]["branches"]["adaptive"], isolated[0]["branches"]["adaptive"]
    assert a["invalid_actions"] == 3
    assert _played(workdir / "moody.sqlite", a) == _played(workdir / "moody-iso.sqlite", b)
    with Store(workdir / "moody.sqlite", readonly=True) as db:
        (run,) = db.runs(branch="adaptive")
        rejected = [
            e["payload"] for e in db.events(run.run_id)
            if e["kind"] == "action" and not e["payload"]["accepted"]
        ]  # fmt: skip
    # the exception's one-line message rides in the recorded invalid action and is the
    # reason it was rejected (what the agent's next observation says in last_result)
    errors = [str(r["action"].get("error", "")) for r in rejected]
    reasons = [str(r["reason"]) for r in rejected]
    assert "act() raised ValueError: boom at turn 2" in errors, rejected
    assert "act() raised ValueError: boom at turn 2" in reasons, rejected
    assert "act() returned a non-JSON value (dict)" in reasons, rejected
    assert not any("unknown action type" in r for r in reasons), rejected
    assert any("action must be a JSON object, got list" in r["reason"] for r in rejected)


def test_an_isolated_agent_that_never_answers_is_a_failed_run(workdir: Path) -> None:
    proc = cli(
        "campaign", "run", "--specs", "specs", "--only", "short-1", "--agent",
        "bad_agents:Sleeper", "--isolate", "--agent-timeout", "2", "--store", "sleep.sqlite",
        cwd=workdir,
    )  # fmt: skip
    line = one_line_error(proc, code=1)
    assert "act() did not answer within 2 s" in line, line
    with Store(workdir / "sleep.sqlite", readonly=True) as db:
        (run,) = db.runs()
        assert run.status == "failed" and run.branch == "adaptive"
        assert "did not answer within 2 s" in str(run.summary["cause"])


def test_agents_are_found_through_the_entry_point_group(
    workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    dist = site / "user_agents-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: user-agents\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[labreplay.agents]\nfirst-candidate = my_agents:FirstCandidate\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(workdir))
    assert "first-candidate" in registered_agents()
    resolved = resolve_agent("first-candidate", CampaignAgent)
    assert resolved.name == "first-candidate" and resolved.ref == "my_agents:FirstCandidate"
    # the CLI finds it too (installed metadata on the path), in-process and isolated
    env = {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    for extra in ([], ["--isolate"]):
        proc = cli(
            "campaign", "run", "--specs", "specs", "--only", "short-1", "--agent",
            "first-candidate", "--store", "ep.sqlite", "--json", *extra, cwd=workdir, env=env,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr


def test_resolution_names_the_agent_and_the_method() -> None:
    class NoAct:
        name = "no-act"

        def params(self) -> dict[str, Any]:
            return {}

    with pytest.raises(AgentError, match=r"agent 'no-act': method act\(\) is missing"):
        resolve_agent(NoAct, CampaignAgent)

    class Nameless(NoAct):
        name = ""

        def reset(self, seed: int) -> None: ...

        def act(self, observation: Any) -> dict[str, Any]:
            return {"type": "stop"}

        def forecast(self, snapshot: Any) -> dict[str, Any]:
            return {"forecasts": []}

    with pytest.raises(AgentError, match=r"attribute name must be a non-empty string"):
        resolve_agent(Nameless, CampaignAgent)


def test_oracle_is_a_cli_reference_agent_run_as_a_labelled_reference(workdir: Path) -> None:
    (result,) = _run(workdir, "oracle.sqlite", "--agent", "oracle")
    assert set(result["branches"]) == {
        "adaptive"
    }  # a labelled reference: no controls, never ranked
    with Store(workdir / "oracle.sqlite", readonly=True) as db:
        (run,) = db.runs()
        assert run.agent == "oracle" and run.agent_params["reference"] is True
