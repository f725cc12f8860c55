"""A user's ask/tell optimiser (the README's random-forest example) through `configsearch run`
in-process and `--isolate`, and through `labreplay.run` as a class and as an object: one
contract, one driver, identical trajectories; an isolated optimiser that never answers is a
failed run, and no child process outlives its run."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import labreplay
from labreplay.store.sqlite import Store
from labreplay.suites.configsearch.cli import app

from .conftest import SMALL_SETTINGS

README = Path(__file__).resolve().parents[2] / "docs" / "suites" / "configsearch.md"
EXAMPLE = re.compile(r"<!-- optimiser-example -->\n```python\n(.*?)```", re.S)
SILENT = """
import time


class Silent:
    name = "silent"

    def params(self):
        return {}

    def observe(self, result):
        pass

    def suggest(self, history):
        time.sleep(60)
"""
SMALL = [
    "--task", "band_gap", "--n-total", "200", "--n-ood", "60", "--r-values", "0,0.5",
    "--n-values", "4,6", "--s-values", "1,2,3", "--min-test-points", "1", "--budget", "4",
    "--init", "2", "--seed", "5", "--json",
]  # fmt: skip


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (code,) = EXAMPLE.findall(README.read_text())
    (tmp_path / "my_optimiser.py").write_text(code)
    (tmp_path / "silent_optimiser.py").write_text(SILENT)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


@pytest.fixture
def driven(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many specs each configsearch run_suite call got (every path goes through it)."""
    import labreplay.suites.configsearch.episodes as episodes

    seen: list[int] = []
    original = episodes.run_suite

    def counting(suite: Any, specs: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(len(specs))
        return original(suite, specs, *args, **kwargs)

    monkeypatch.setattr(episodes, "run_suite", counting)
    return seen


def _isolated_children() -> list[int]:
    """Live child processes of this one serving an isolated agent."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == os.getpid() and b"labreplay.agents.isolated" in cmdline:
            found.append(int(entry.name))
    return found


def _run(store: Path, *extra: str) -> Any:
    return CliRunner().invoke(app, ["run", *SMALL, "--store", str(store), *extra])


def _hashes(store: Path, run_id: str) -> list[str]:
    with Store(store, readonly=True) as db:
        return [e["hash"] for e in db.events(run_id)]


def verify_store_ok(store: Path) -> bool:
    """`store verify` passes and finds every run's header (none listed as missing)."""
    from labreplay.store.verify import verify_store

    with Store(store, readonly=True) as db:
        report = verify_store(db)
    return report.ok and not any("no header event" in n for n in report.unverifiable)


def _played(store: Path, run_id: str) -> list[tuple[str, Any]]:
    """Every event but the header (which says how the optimiser ran: it differs by design
    between in-process and isolated runs, so their chains differ from it on)."""
    with Store(store, readonly=True) as db:
        return [(e["kind"], e["payload"]) for e in db.events(run_id) if e["kind"] != "header"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_readme_optimiser_in_process_isolated_and_from_python(
    data_dir: Path, cache_dir: Path, workdir: Path, driven: list[int]
) -> None:
    store = workdir / "runs.sqlite"
    here = _run(store, "--agent", "my_optimiser:ForestOptimizer")
    assert here.exit_code == 0, here.output
    (row,) = json.loads(here.output)
    assert row["steps"] == 4 and row["invalid_steps"] == 0
    isolated = _run(store, "--agent", "my_optimiser:ForestOptimizer", "--isolate")
    assert isolated.exit_code == 0, isolated.output
    (irow,) = json.loads(isolated.output)
    assert _isolated_children() == []  # every child ended with its search
    assert irow["run_id"] != row["run_id"]  # how the agent ran is part of the run's identity
    assert _played(store, irow["run_id"]) == _played(store, row["run_id"])
    with Store(store, readonly=True) as db:
        headers = [db.events(r["run_id"])[0] for r in (row, irow)]
    assert [h["kind"] for h in headers] == ["header", "header"]
    assert [h["payload"]["isolation"] for h in headers] == ["in-process", "subprocess"]
    assert headers[0]["payload"]["agent"] == "forest"
    assert verify_store_ok(store)
    with Store(store, readonly=True) as db:
        run, irun = db.run(row["run_id"]), db.run(irow["run_id"])
        phases = [e["payload"]["phase"] for e in db.events(run.run_id) if e["kind"] == "step"]
    assert run.agent == "forest" and phases == ["init", "init", "forest", "forest"]
    assert run.agent_params["optimizer"] == {
        "name": "forest", "params": {"trees": 100}, "isolation": "in-process"
    }  # fmt: skip
    assert irun.agent_params["optimizer"]["isolation"] == "subprocess"

    from my_optimiser import ForestOptimizer  # type: ignore[import-not-found]

    from labreplay.suites.configsearch.options import SampleOptions, SpaceArgs

    space = SpaceArgs(r_values="0,0.5", n_values="4,6", s_values="1,2,3").space(
        SampleOptions(n_total=200, n_ood=60), 1
    )  # the space the CLI flags above build

    specs = labreplay.compile(
        "configsearch", data_dir, task="band_gap", settings=SMALL_SETTINGS, space=space,
        min_test_points=1,
    )  # fmt: skip
    # the spec is self-contained: its task, settings and space are not given again
    options: dict[str, Any] = {"data_dir": data_dir, "min_test_points": 1, "budget": 4, "init": 2}
    for agent, name in ((ForestOptimizer, "class.sqlite"), (ForestOptimizer(), "object.sqlite")):
        (done,) = labreplay.run("configsearch", specs, agent, workdir / name, seed=5, **options)
        assert done["steps"] == 4 and done["invalid_steps"] == 0
        assert _hashes(workdir / name, done["run_id"]) == _hashes(store, row["run_id"])
    assert driven == [1, 1, 1, 1]  # CLI in-process, --isolate, API class, API object


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_an_isolated_optimiser_that_never_answers_is_a_failed_run(
    data_dir: Path, cache_dir: Path, workdir: Path
) -> None:
    store = workdir / "silent.sqlite"
    done = _run(store, "--agent", "silent_optimiser:Silent", "--isolate", "--agent-timeout", "1")
    assert done.exit_code == 1, done.output
    (row,) = json.loads(done.output)
    assert row["status"] == "failed" and "suggest() did not answer within 1 s" in row["cause"]
    assert _isolated_children() == []
    with Store(store, readonly=True) as db:
        assert db.run(row["run_id"]).status == "failed"


def test_bad_optimisers_are_one_line_before_any_store(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from labreplay.cli.main import run as cli

    store = workdir / "never.sqlite"
    for agent, isolate, expected in (
        ("my_optimiser:Nope", [], "has no attribute 'Nope'"),
        ("nomodule:Opt", [], "cannot import module 'nomodule'"),
        ("my_optimiser:Nope", ["--isolate"], "has no attribute 'Nope'"),
    ):
        code = cli(
            ["configsearch", "run", *SMALL, "--store", str(store), "--agent", agent, *isolate]
        )
        err = capsys.readouterr().err
        assert code == 2 and expected in err and len(err.strip().splitlines()) == 1, err
        assert not store.exists()


def test_an_llm_optimiser_runs_with_the_llm_option_set_and_all_failed_calls_fail_the_run(
    data_dir: Path, cache_dir: Path, workdir: Path
) -> None:
    from labreplay.testing.fault_server import StubServer, constant, garbage_body
    from labreplay.testing.schema_server import SchemaAnswerer

    llm = ["--agent", "openai:frontier", "--timeout", "5", "--max-retries", "0"]
    store = workdir / "llm.sqlite"
    with StubServer(SchemaAnswerer()) as server:
        done = _run(store, *llm, "--base-url", server.base_url)
        # the API takes the same LLM options by the same names, and plays the same run
        from labreplay.suites.configsearch.options import SampleOptions, SpaceArgs

        space = SpaceArgs(r_values="0,0.5", n_values="4,6", s_values="1,2,3").space(
            SampleOptions(n_total=200, n_ood=60), 1
        )
        specs = labreplay.compile(
            "configsearch", data_dir, task="band_gap", settings=SMALL_SETTINGS, space=space,
            min_test_points=1,
        )  # fmt: skip
        (by_api,) = labreplay.run(
            "configsearch", specs, "openai:frontier", workdir / "api.sqlite", seed=5,
            min_test_points=1, budget=4, init=2, timeout=5, max_retries=0,
            base_url=server.base_url,
        )  # fmt: skip
    assert done.exit_code == 0, done.output
    (row,) = json.loads(done.output)
    assert row.get("status") != "failed" and row["ranked"] and row["invalid_steps"] == 0
    assert row["llm_usage"]["calls"] == 2 and row["llm_usage"]["failed_calls"] == 0  # 4 - init 2
    assert by_api["run_id"] == row["run_id"] and by_api["invalid_steps"] == 0
    with StubServer(constant(garbage_body())) as server:
        bad = _run(workdir / "garbage.sqlite", *llm, "--base-url", server.base_url)
    assert bad.exit_code == 1, bad.output
    (row,) = json.loads(bad.output)
    assert row["status"] == "failed" and not row["ranked"]
    assert row["cause"].startswith("model calls failed: every model call failed")
    assert row["llm_usage"]["calls"] == row["llm_usage"]["failed_calls"] > 0
    with Store(workdir / "garbage.sqlite", readonly=True) as db:
        assert db.run(row["run_id"]).status == "failed"  # never stored as a success
        calls = db.llm_calls(row["run_id"])  # and its calls are accounted in the store
        assert len(calls) == row["llm_usage"]["calls"] and all(c["error"] for c in calls)
    with Store(store, readonly=True) as db:
        assert len(db.llm_calls(json.loads(done.output)[0]["run_id"])) == 2
