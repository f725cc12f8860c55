"""A spy agent against `--isolate`: what it tries is contained or recorded, never a crash.

The spy (a conditions-contract agent, the cheapest to serve) tries, per question, one of:
reading a file it was not given, listing its environment, reading other processes' command
lines and environments, starting a grandchild in its own session (and an orphaned one),
writing to fd 1, returning a 100k-deep or a 20 MB reply, flooding the protocol pipe itself,
and allocating more memory than its limit. The sandbox tests run where bubblewrap can create
namespaces (skipped elsewhere, with the reason); the rest hold on any Linux.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from labreplay.agents.isolated import AgentNonJSON, AgentRaised, IsolatedAgent
from labreplay.agents.process_tree import descendants
from labreplay.agents.sandbox import Limits, sandbox_status

from .conftest import assert_one_line_error, run_cli, run_cli_in_process

QUESTION_CONTRACT = "labreplay.agents.contracts:QuestionAgent"
KEY = "sk-spytest-0123456789abcdefghijklmnopqrstuv"

SPY = """
import json, os, subprocess, sys, time

def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read(200).decode("utf-8", "replace")
    except OSError as exc:
        return "refused: " + type(exc).__name__

class Spy:
    name = "spy"

    def params(self):
        return {}

    def answer(self, view):
        probe = view["probe"]
        if probe == "read":
            return {"text": _read(view["path"])}
        if probe == "env":
            return {"env": dict(os.environ)}
        if probe == "list":
            try:
                return {"entries": sorted(os.listdir(view["path"]))}
            except OSError as exc:
                return {"entries": "refused: " + type(exc).__name__}
        if probe == "procs":
            seen = []
            for pid in os.listdir("/proc"):
                if pid.isdigit() and int(pid) != os.getpid():
                    for name in ("cmdline", "environ"):
                        seen.append(_read(f"/proc/{pid}/{name}"))
            return {"seen": seen}
        if probe == "spawn":
            sleeper = [sys.executable, "-c", "import time; time.sleep(300)", view["token"]]
            subprocess.Popen(sleeper, start_new_session=True)
            # an orphan: its parent exits at once, it is re-parented
            orphan = "import subprocess, sys; subprocess.Popen(sys.argv[1:], start_new_session=True)"
            subprocess.run([sys.executable, "-c", orphan, *sleeper], check=True)
            return {"option": 0}
        if probe == "fd1":
            os.write(1, b"not the protocol\\n")
            subprocess.run(["echo", "from a subprocess"], check=True)
            print("from print")
            return {"option": 1}
        if probe == "deep":
            value = []
            for _ in range(100_000):
                value = [value]
            return value
        if probe == "huge":
            return {"option": "x" * 20_000_000}
        if probe == "flood":  # past the server, straight onto the protocol pipe
            os.write(int(sys.argv[2]), b'{"value": "' + b"y" * 10_000_000 + b'"}\\n')
            time.sleep(1)
            return {"option": 2}
        if probe == "memory":
            return {"size": len(bytearray(1536 * 1024 * 1024))}
        return {"option": 3}
"""


@pytest.fixture
def spy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The spy's module directory (on PYTHONPATH), a key in the environment."""
    home = tmp_path / "agent"
    home.mkdir()
    (home / "spy_agent.py").write_text(SPY, encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(home), *sys.path]))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("LABREPLAY_SEALED_DIR", str(tmp_path / "sealed"))
    yield home


def _procs_with(token: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if token in (entry / "cmdline").read_bytes().decode("utf-8", "replace"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _agent(**kwargs: object) -> IsolatedAgent:
    return IsolatedAgent("spy_agent:Spy", QUESTION_CONTRACT, timeout_s=60.0, **kwargs)  # type: ignore[arg-type]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("sandbox", [False, True])
def test_no_descendant_outlives_the_agent(spy: Path, sandbox: bool) -> None:
    """Was: a grandchild in its own session survived the run (parent pid 1)."""
    if sandbox and not sandbox_status().available:
        pytest.skip(sandbox_status().reason)
    token = f"labreplay-spy-{os.getpid()}-{sandbox}"
    agent = _agent(sandbox=sandbox)
    assert agent.answer({"probe": "spawn", "token": token}) == {"option": 0}
    assert len(_procs_with(token)) == 2  # both sleepers run, one of them orphaned
    assert len(descendants(agent._proc.pid)) >= 3  # the orphan stayed below the supervisor
    agent.close()
    deadline = time.monotonic() + 10
    while _procs_with(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _procs_with(token) == []


@pytest.mark.parametrize("sandbox", [False, True])
def test_replies_over_the_limits_and_fd1_are_contained(spy: Path, sandbox: bool) -> None:
    if sandbox and not sandbox_status().available:
        pytest.skip(sandbox_status().reason)
    agent = _agent(sandbox=sandbox, limits=Limits(memory_mb=1024, cpu_s=60))
    try:
        # what the agent and its subprocess print reaches stderr, not the protocol
        assert agent.answer({"probe": "fd1"}) == {"option": 1}
        with pytest.raises(AgentNonJSON, match="nested deeper than 64"):
            agent.answer({"probe": "deep"})
        with pytest.raises(AgentNonJSON, match="over 4194304"):
            agent.answer({"probe": "huge"})
        with pytest.raises(AgentNonJSON, match="sent a reply of 10000014 bytes"):
            agent.answer({"probe": "flood"})  # the spy wrote past its own server
        # the flooding reply was dropped whole: the next reply is the one asked for
        assert agent.answer({"probe": "fd1"}) == {"option": 1}
        with pytest.raises(AgentRaised) as raised:  # 1.5 GiB under a 1 GiB limit
            agent.answer({"probe": "memory"})
        assert raised.value.kind == "MemoryError"
        assert agent.answer({"probe": "other"}) == {"option": 3}
    finally:
        agent.close()


def test_the_childs_environment_holds_no_key_nor_sealed_path(spy: Path) -> None:
    agent = _agent()
    try:
        env = agent.answer({"probe": "env"})["env"]
    finally:
        agent.close()
    assert KEY not in json.dumps(env)
    assert not [name for name in env if name.startswith("LABREPLAY_")]


@pytest.mark.skipif(not sandbox_status().available, reason=sandbox_status().reason)
def test_in_the_sandbox_the_spy_reads_no_hidden_file_nor_the_evaluator(
    spy: Path, tmp_path: Path
) -> None:
    """Was: the spy read the parent's command line in /proc, then every sealed file."""
    sealed = tmp_path / "sealed"
    sealed.mkdir()
    (sealed / "a.sealed.json").write_text('{"outcome": "SEALED-MARKER"}', encoding="utf-8")
    store = spy / "store.sqlite"  # beside the agent's own module, so inside what is bound
    store.write_text("STORE-MARKER", encoding="utf-8")
    (spy / "store.sqlite-wal").write_text("WAL-MARKER", encoding="utf-8")
    agent = _agent(sandbox=True, hide=[str(store), str(sealed)])
    try:
        assert agent.sandbox == "bwrap"
        for path in (sealed / "a.sealed.json", store, spy / "store.sqlite-wal"):
            text = agent.answer({"probe": "read", "path": str(path)})["text"]
            assert "MARKER" not in text, path
        assert agent.answer({"probe": "read", "path": str(spy / "spy_agent.py")})["text"]
        seen = json.dumps(agent.answer({"probe": "procs"})["seen"])
    finally:
        agent.close()
    assert KEY not in seen  # the evaluator's environment is not in the sandbox's /proc


@pytest.mark.skipif(not sandbox_status().available, reason=sandbox_status().reason)
def test_in_the_sandbox_the_working_directory_and_home_are_not_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Was: the whole working directory was bound, and only paths named on the command line
    were masked: an agent read another store left there (every recorded outcome). Now neither
    it nor $HOME is shown, even where they are on the import path (`python -m`,
    `PYTHONPATH=.`): of the working directory, only the modules an import can reach."""
    home = tmp_path
    (home / "beside.txt").write_text("HOME-MARKER", encoding="utf-8")
    work = home / "work"
    (work / "notes").mkdir(parents=True)
    (work / "spy_agent.py").write_text(SPY, encoding="utf-8")
    (work / "spy_helpers.py").write_text("", encoding="utf-8")  # a module it may import
    (work / "old-runs.sqlite").write_text("STORE-MARKER", encoding="utf-8")
    (work / "notes" / "secret.txt").write_text("SECRET-MARKER", encoding="utf-8")
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([".", str(home), *sys.path]))
    monkeypatch.setattr(sys, "path", [str(work), *sys.path])
    agent = _agent(sandbox=True)
    try:
        assert agent.sandbox == "bwrap"
        for path in ("old-runs.sqlite", "notes/secret.txt", "../beside.txt"):
            text = agent.answer({"probe": "read", "path": str(work / path)})["text"]
            assert "MARKER" not in text, path
        listed = {
            name: agent.answer({"probe": "list", "path": str(path)})["entries"]
            for name, path in (("cwd", work), ("home", home), ("notes", work / "notes"))
        }
        own = agent.answer({"probe": "read", "path": str(work / "spy_agent.py")})["text"]
    finally:
        agent.close()
    assert "import json, os" in own  # its own module is there: the honest agent runs
    # of the working directory, what an import from it reaches: its modules and packages
    assert set(listed["cwd"]) - {"__pycache__"} == {"spy_agent.py", "spy_helpers.py"}, listed
    assert listed["home"] == ["work"] and str(listed["notes"]).startswith("refused"), listed


CAMPAIGN_SPY = """
import subprocess, sys, time

class HangInReset:
    name = "hang-in-reset"

    def params(self):
        return {}

    def reset(self, seed):
        sleeper = [sys.executable, "-c", "import time; time.sleep(300)", "TOKEN"]
        subprocess.Popen(sleeper, start_new_session=True)
        if "RAISE" == "yes":
            raise ValueError("reset refused")
        time.sleep(300)

    def act(self, observation):
        return {"type": "stop"}

    def forecast(self, snapshot):
        return {"forecasts": []}
"""


@pytest.mark.usefixtures("data_env")
@pytest.mark.parametrize("raises", [False, True])
def test_a_hang_in_reset_fails_the_run_and_leaves_nothing_running(
    tmp_path: Path, specs_dir: Path, smallest_assignment: str, raises: bool
) -> None:
    """Was: a traceback, the run left `running`, and a grandchild holding the CLI's stderr
    (a caller capturing the output hung). `run_cli` captures both streams: it returns only
    once every holder of them is gone."""
    token = f"labreplay-reset-spy-{os.getpid()}"
    source = CAMPAIGN_SPY.replace("TOKEN", token).replace("RAISE", "yes" if raises else "no")
    (tmp_path / "reset_spy.py").write_text(source, encoding="utf-8")
    store = tmp_path / "s.sqlite"
    args = ["--specs", str(specs_dir), "--store", str(store), "--only", smallest_assignment]
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    started = time.monotonic()
    done = run_cli(
        "campaign",
        "run",
        *args,
        "--agent",
        "reset_spy:HangInReset",
        "--isolate",
        "--agent-timeout",
        "3",
        env=env,
        timeout=120,
    )
    assert time.monotonic() - started < 90
    assert "Traceback" not in done.stderr
    assert done.returncode not in (0, 2), done.stderr
    cause = "reset() raised ValueError: reset refused" if raises else "did not answer within 3 s"
    assert cause in done.stderr
    assert _procs_with(token) == []
    from labreplay.store.sqlite import Store

    with Store(store, readonly=True) as db:
        assert {r.status for r in db.runs()} == {"failed"}


@pytest.mark.usefixtures("data_env")
def test_require_sandbox_refuses_where_there_is_none(
    tmp_path: Path,
    specs_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from labreplay.sdk.options import IsolationOptions

    store = tmp_path / "s.sqlite"
    base = [
        "campaign",
        "run",
        "--specs",
        str(specs_dir),
        "--store",
        str(store),
        "--agent",
        "random",
    ]
    assert_one_line_error(run_cli_in_process(*base, "--require-sandbox"))  # without --isolate
    monkeypatch.setenv("LABREPLAY_SANDBOX", "off")
    line = assert_one_line_error(run_cli_in_process(*base, "--isolate", "--require-sandbox"))
    assert "no sandbox on this machine (LABREPLAY_SANDBOX=off)" in line
    assert not store.exists()
    IsolationOptions(isolate=True).say_without_sandbox()  # goes on, and says so in one line
    note = capsys.readouterr().err
    assert note.count("\n") == 1 and note.startswith("labreplay: note: --isolate without a sandbox")


CLI_SPY = """
from pathlib import Path

class ReadsTheStore:
    name = "reads-the-store"

    def params(self):
        return {}

    def reset(self, seed):
        seen = []
        for path in PATHS:
            try:
                seen.append(Path(path).read_bytes()[:40])
            except OSError as exc:
                seen.append(type(exc).__name__)
        raise ValueError(f"saw {seen!r}")

    def act(self, observation):
        return {"type": "stop"}

    def forecast(self, snapshot):
        return {"forecasts": []}
"""


@pytest.mark.usefixtures("data_env")
@pytest.mark.skipif(not sandbox_status().available, reason=sandbox_status().reason)
def test_cli_isolate_masks_the_store_and_the_sealed_files(
    tmp_path: Path, specs_dir: Path, smallest_assignment: str
) -> None:
    """The store beside the agent's module and the specs named on the command line are not
    readable in the sandbox (what the spy read ends up in its run's recorded cause)."""
    store = tmp_path / "s.sqlite"
    sealed = sorted((specs_dir / "sealed").iterdir())[0]
    paths = [str(store), str(store) + "-wal", str(sealed), str(specs_dir / "index.json")]
    source = CLI_SPY.replace("PATHS", repr(paths))
    (tmp_path / "store_spy.py").write_text(source, encoding="utf-8")
    args = ["--specs", str(specs_dir), "--store", str(store), "--only", smallest_assignment]
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    done = run_cli(
        "campaign", "run", *args, "--agent", "store_spy:ReadsTheStore", "--isolate",
        "--require-sandbox", env=env, timeout=120,
    )  # fmt: skip
    assert "Traceback" not in done.stderr
    assert "saw [" in done.stderr, done.stderr
    assert "SQLite format" not in done.stderr
    assert sealed.read_bytes()[:20].decode("utf-8", "replace") not in done.stderr
    assert '"assignments"' not in done.stderr
