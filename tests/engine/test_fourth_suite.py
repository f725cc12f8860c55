"""The README's fourth suite (examples/fourth_suite, `meltsuite`), registered the way an
installed distribution registers it (a dist-info with its entry point, no core edit): it
passes `check_suite` and runs through the CLI, the Python API, `--isolate` and `serve`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import labreplay
from labreplay.compile.spec import load_spec
from labreplay.errors import LabreplayError, RunFailedError
from labreplay.store.sqlite import Store
from labreplay.testing import check_suite

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fourth_suite"

GARBAGE = '''
import math

class Garbage:
    """Raises on one element, returns NaN, a string and a negative number on others."""
    name = "garbage"
    def params(self):
        return {}
    def reset(self, seed):
        self.n = 0
    def predict(self, observation):
        self.n += 1
        if self.n == 1:
            raise ValueError("no idea")
        return [math.nan, "hot", -3.0, 500.0, 700.0][(self.n - 2) % 5]
'''


def _site(root: Path) -> Path:
    """A site directory holding meltsuite's installed metadata (what `pip install` writes)."""
    site = root / "site"
    info = site / "meltsuite-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: meltsuite\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[labreplay.suites]\nmelt = meltsuite.suite:SUITE\n")
    (site / "garbage_agent.py").write_text(GARBAGE)
    return site


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    import labreplay.suite as registry

    site = _site(tmp_path)
    for path in (str(EXAMPLE), str(site)):
        monkeypatch.syspath_prepend(path)
    paths = [str(site), str(EXAMPLE), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    monkeypatch.setenv("PYTHONPATH", env["PYTHONPATH"])  # an isolated agent's child imports
    yield env
    registry._LOADED.pop("melt", None)
    for name in [m for m in sys.modules if m.startswith("meltsuite")]:
        del sys.modules[name]


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "labreplay.cli.main", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _runs(store: Path) -> list[tuple[str, str, dict[str, float | None]]]:
    with Store(store, readonly=True) as db:
        return [(r.run_id, r.status, db.scores(r.run_id)) for r in db.runs(suite="melt")]


def test_check_suite_passes(installed: dict[str, str], tmp_path: Path) -> None:
    specs = labreplay.compile("melt", seed=1)
    check_suite("melt", specs, "group-mean", workdir=tmp_path)


def test_cli_equals_api_and_isolated_scores_equal(
    installed: dict[str, str], tmp_path: Path
) -> None:
    done = _cli(installed, "melt", "compile", "--out", str(tmp_path / "specs"))
    assert done.returncode == 0, done.stderr
    spec_file = next((tmp_path / "specs").glob("*.json"))
    cli_store, api_store = tmp_path / "cli.sqlite", tmp_path / "api.sqlite"
    done = _cli(installed, "melt", "run", str(spec_file), "--agent", "group-mean",
                "--store", str(cli_store))  # fmt: skip
    assert done.returncode == 0, done.stderr
    labreplay.run("melt", [load_spec(spec_file)], "group-mean", api_store)
    assert _runs(cli_store) == _runs(api_store)
    done = _cli(installed, "melt", "run", str(spec_file), "--agent", "group-mean",
                "--store", str(cli_store), "--isolate")  # fmt: skip
    assert done.returncode == 0, done.stderr
    (in_process, _, scores), (isolated, _, isolated_scores) = sorted(
        _runs(cli_store), key=lambda r: r[0] != _runs(api_store)[0][0]
    )
    assert in_process != isolated and scores == isolated_scores
    assert _cli(installed, "store", "verify", "--store", str(cli_store)).returncode == 0


def test_garbage_recorded_the_same_in_process_and_isolated(
    installed: dict[str, str], tmp_path: Path
) -> None:
    spec = labreplay.compile("melt")
    stored = []
    for isolate in (False, True):
        store = tmp_path / f"isolate-{isolate}.sqlite"
        # 4 of 6 predictions unusable: the one failed-run rule fails the run, cause named
        with pytest.raises(RunFailedError, match="most policy calls failed"):
            labreplay.run("melt", spec, "garbage_agent:Garbage", store, isolate=isolate)
        with Store(store, readonly=True) as db:
            (run,) = db.runs(suite="melt")
            header, *rest = db.events(run.run_id)
            # the header says how the agent ran; every prediction after it is the same
            assert header["kind"] == "header" and header["payload"]["isolation"] == (
                "subprocess" if isolate else "in-process"
            )
            events = [e["payload"] for e in rest]
            stored.append((events, db.scores(run.run_id), run.status))
    assert stored[0][0] == stored[1][0], (stored[0][0], stored[1][0])
    assert stored[0] == stored[1] and stored[0][2] == "failed"
    invalid = [p["invalid"] for p in stored[0][0] if p["invalid"]]
    assert len(invalid) == 4 and "ValueError: no idea" in invalid[0]


def test_unknown_option_refused_naming_the_nearest(
    installed: dict[str, str], tmp_path: Path
) -> None:
    with pytest.raises(LabreplayError, match="isolate"):
        labreplay.run("melt", labreplay.compile("melt"), "group-mean", tmp_path / "s", isolat=True)
    assert not (tmp_path / "s").exists()


def test_serve_plays_the_run_over_mcp(installed: dict[str, str], tmp_path: Path) -> None:
    from mcp import ClientSession, StdioServerParameters, stdio_client
    from meltsuite.contract import GroupMean  # type: ignore[import-not-found]

    spec_dir = tmp_path / "specs"
    assert _cli(installed, "melt", "compile", "--out", str(spec_dir)).returncode == 0
    spec_file = next(spec_dir.glob("*.json"))
    store = tmp_path / "served.sqlite"
    args = ["-m", "labreplay.cli.main", "melt", "serve", str(spec_file), "--store", str(store)]

    async def drive() -> dict[str, Any]:
        server = StdioServerParameters(command=sys.executable, args=args, env=installed)
        async with stdio_client(server) as (read, write), ClientSession(read, write) as mcp:
            await mcp.initialize()
            names = [t.name for t in (await mcp.list_tools()).tools]
            assert names == ["next_call", "reply"]
            policy = GroupMean()

            async def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
                result = await mcp.call_tool(name, arguments)
                value: dict[str, Any] = json.loads(result.content[0].text)  # type: ignore[union-attr]
                return value

            pending = await call("next_call", {})
            while not pending.get("done"):
                assert pending["method"] == "predict"
                pending = await call("reply", {"value": policy.predict(pending["payload"])})
            return pending

    final = anyio.run(drive)
    assert "failure" not in final, final
    reference = tmp_path / "reference.sqlite"
    labreplay.run("melt", [load_spec(spec_file)], "group-mean", reference)
    ((_, status, served),) = _runs(store)
    ((_, _, in_process),) = _runs(reference)
    assert status == "complete" and served == in_process


def test_compile_refuses_a_fifo_as_its_out_directory(
    installed: dict[str, str], tmp_path: Path
) -> None:
    """The example's `--out` takes the shared check: a FIFO there is named for what it is, in
    one line, exit 2, before any work, and left as it was (mkdir's "File exists" named it not)."""
    import stat

    fifo = tmp_path / "out"
    os.mkfifo(fifo)
    proc = _cli(installed, "melt", "compile", "--out", str(fifo))
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert "FIFO" in proc.stderr and stat.S_ISFIFO(fifo.stat().st_mode)
