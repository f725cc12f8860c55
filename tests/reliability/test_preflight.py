"""Every option value refused before any work or file (issue 23, item 1), in-process.

Each case below was, before its fix, a traceback, a silently wrong run, a refusal only after
seconds of data loading, or a store (or a cache) created before the refusal. The CLI runs
in-process (`labreplay.cli.main.run`): a traceback is an exception escaping it. "Before any
work" is checked through the cache: a refusal leaves `$LABREPLAY_CACHE_DIR` untouched (the
configsearch pipeline writes its stages there as soon as it loads data).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from labreplay.errors import AgentError

from .conftest import run_cli_in_process

TASK = ("--task", "band_gap")


def cli(*argv: str) -> tuple[int, str]:
    done = run_cli_in_process(*argv)
    return done.returncode, done.stderr


def refused(tmp_path: Path, *argv: str) -> str:
    """Run argv in an empty workspace; it must be one line, exit 2, and leave nothing."""
    work = tmp_path / "work"
    work.mkdir()
    args = [a.replace("{w}", str(work)) for a in argv]
    code, err = cli(*args)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, (args, code, err)
    assert len(lines) == 1 and lines[0].startswith("labreplay: error: "), err
    assert sorted(p.name for p in work.iterdir()) == [], args
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*")), args
    return lines[0]


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LABREPLAY_CACHE_DIR", str(tmp_path / "cache"))


CS_RUN = ("configsearch", "run", "--store", "{w}/s.sqlite")
CS_SWEEP = ("configsearch", "sweep", "--store", "{w}/s.sqlite")
CS_REPLAY = ("configsearch", "replay", "--references", "{w}/refs")

CONFIGSEARCH: dict[str, tuple[tuple[str, ...], str]] = {
    "run-cost-alpha-nan": ((*CS_RUN, *TASK, "--cost-alpha", "nan"), "--cost-alpha"),
    "run-cost-alpha-neg": ((*CS_RUN, *TASK, "--cost-alpha", "-5"), "--cost-alpha"),
    "run-cost-alpha-inf": ((*CS_RUN, *TASK, "--cost-alpha", "inf"), "--cost-alpha"),
    "replay-cost-alpha-nan": ((*CS_REPLAY, "--cost-alpha", "nan"), "--cost-alpha"),
    "replay-cost-alpha-neg": ((*CS_REPLAY, "--cost-alpha", "-5"), "--cost-alpha"),
    "replay-cost-alpha-inf": ((*CS_REPLAY, "--cost-alpha", "inf"), "--cost-alpha"),
    "replay-seeds-huge": ((*CS_REPLAY, "--seeds", "99999999999999999999999"), "--seeds"),
    "replay-seeds-many": ((*CS_REPLAY, "--seeds", "100000"), "--seeds"),
    "reference-report-seeds-many": (
        ("configsearch", "reference-report", "--references", "{w}/refs", "--seeds", "100000"),
        "--seeds",
    ),
    "replay-init-over-budget": ((*CS_REPLAY, "--init", "9", "--budget", "3"), "--init"),
    "run-r-nan": ((*CS_RUN, *TASK, "--r-values", "nan"), "--r-values"),
    "run-r-abc": ((*CS_RUN, *TASK, "--r-values", "abc"), "--r-values"),
    "run-r-5": ((*CS_RUN, *TASK, "--r-values", "5"), "--r-values"),
    "run-r-empty": ((*CS_RUN, *TASK, "--r-values", ","), "--r-values"),
    "run-n-999": ((*CS_RUN, *TASK, "--n-values", "999"), "999"),
    "run-n-0": ((*CS_RUN, *TASK, "--n-values", "0"), "--n-values"),
    "run-s-neg": ((*CS_RUN, *TASK, "--s-values", "-1"), "--s-values"),
    "run-s-11": ((*CS_RUN, *TASK, "--s-values", "11"), "11"),
    "run-too-few-test-points": ((*CS_RUN, *TASK, "--n-values", "4", "--s-values", "1"), "4"),
    "run-task-nosuch": ((*CS_RUN, "--task", "nosuch"), "nosuch"),
    "run-no-task": (CS_RUN, "--task"),
    "run-dataset-missing": ((*CS_RUN, "--dataset", "{w}/no.jsonl", "--target", "y"), "no.jsonl"),
    "run-dataset-no-target": ((*CS_RUN, "--dataset", "{w}/no.jsonl"), "--target"),
    "run-init-over-budget": ((*CS_RUN, *TASK, "--init", "9", "--budget", "3"), "--init"),
    "run-init-0": ((*CS_RUN, *TASK, "--init", "0"), "--init"),
    "run-seeds-huge": ((*CS_RUN, *TASK, "--seeds", "99999999999999999999999"), "--seeds"),
    "run-seeds-many": ((*CS_RUN, *TASK, "--seeds", "5000"), "--seeds"),
    "run-scheduler-garbage": ((*CS_RUN, *TASK, "--executor", "dask", "--scheduler", "x y"), "sch"),
    "sweep-r-nan": ((*CS_SWEEP, *TASK, "--r-values", "nan"), "--r-values"),
    "sweep-s-neg": ((*CS_SWEEP, *TASK, "--s-values", "-1"), "--s-values"),
    "sweep-task-nosuch": ((*CS_SWEEP, "--task", "nosuch"), "nosuch"),
    "references-task-nosuch": (
        ("configsearch", "references", "--store", "{w}/s.sqlite", "--tasks", "nosuch"),
        "nosuch",
    ),
    "references-model-nosuch": (
        ("configsearch", "references", "--store", "{w}/s.sqlite", "--models", "nosuch"),
        "nosuch",
    ),
}


@pytest.mark.parametrize("case", sorted(CONFIGSEARCH))
def test_configsearch_refuses_before_any_work(case: str, tmp_path: Path) -> None:
    argv, named = CONFIGSEARCH[case]
    line = refused(tmp_path, *argv)
    assert named in line, line


CONDITIONS = {
    "max-options-neg": ("--max-options", "-1"),
    "max-options-0": ("--max-options", "0"),
    "max-tables-neg": ("--max-tables", "-3"),
    "fib-nan": ("--fib-max-hit-floor", "nan"),
    "fib-7": ("--fib-max-hit-floor", "7"),
    "temperature-nan": ("--temperature-k", "nan"),
    "temperature-inf": ("--temperature-k", "inf"),
    "yield-scale": ("--yield-scale", "bogus"),
    "objective": ("--objective", "bogus"),
}


@pytest.mark.parametrize("which", ["--all", "--dataset"])
@pytest.mark.parametrize("case", sorted(CONDITIONS))
def test_conditions_compile_refuses_before_any_work(case: str, which: str, tmp_path: Path) -> None:
    pick = ("--all",) if which == "--all" else ("--dataset", "edbo_mitsunobu")
    option, value = CONDITIONS[case]
    line = refused(tmp_path, "conditions", "compile", "--out", "{w}/q.jsonl", *pick, option, value)
    assert option in line and value in line, line


CAMPAIGN = {
    "scheduler-garbage": (("--executor", "dask", "--scheduler", "garbage"), "--scheduler"),
    "only-empty": (("--only", ""), "--only"),
    "only-comma": (("--only", ","), "--only"),
    "only-unknown": (("--only", "nosuch"), "nosuch"),
    "seed-huge": (("--seed", "99999999999999999999999"), "--seed"),
    "temperature-nan": (("--temperature", "nan"), "--temperature"),
}


@pytest.fixture(scope="module")
def campaign_specs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("preflight") / "specs"
    code, err = cli("campaign", "compile", "--out", str(out))
    assert code == 0, err
    return out


@pytest.mark.parametrize("case", sorted(CAMPAIGN))
def test_campaign_run_refuses_before_the_store(
    case: str, campaign_specs: Path, tmp_path: Path
) -> None:
    extra, named = CAMPAIGN[case]
    argv = ("campaign", "run", "--specs", str(campaign_specs), "--store", "{w}/s.sqlite")
    line = refused(tmp_path, *argv, *extra)
    assert named in line, line


def test_campaign_compile_huge_seed_list_is_refused(tmp_path: Path) -> None:
    line = refused(
        tmp_path, "campaign", "compile", "--out", "{w}/o", "--seeds", "99999999999999999999999"
    )
    assert "--seeds" in line


def test_unreachable_scheduler_creates_no_store(
    campaign_specs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A well-formed address nobody listens on: refused in one line, and no store."""
    pytest.importorskip("distributed")
    monkeypatch.setenv("LABREPLAY_DASK_CONNECT_TIMEOUT", "2")  # the default waits 30 s
    argv = ("campaign", "run", "--specs", str(campaign_specs), "--store", "{w}/s.sqlite")
    line = refused(tmp_path, *argv, "--executor", "dask", "--scheduler", "tcp://127.0.0.1:1")
    assert "127.0.0.1:1" in line, line


# ------------------------------------------------------------------------ check_agent
class _Raises:
    name = "raises"

    def params(self) -> dict[str, Any]:
        return {}

    def answer(self, view: Any) -> Any:
        raise RuntimeError("agent bug")

    def act(self, observation: Any) -> Any:
        raise RuntimeError("agent bug")


def _raises_on_build() -> Any:
    raise ValueError("cannot build")


@pytest.fixture(scope="module")
def conditions_spec(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    import labreplay
    from labreplay.records.sources import resolve_data_dir

    data_dir = resolve_data_dir()

    path = tmp_path_factory.mktemp("check") / "q.jsonl"
    (spec,) = labreplay.compile("conditions", data_dir, datasets=["edbo_mitsunobu"], out=path)
    return spec, path


@pytest.mark.parametrize("make", ["lambda42", "raises", "raises-on-build", "campaign-agent"])
def test_check_agent_reports_a_broken_agent_as_a_problem(
    make: str, conditions_spec: tuple[Any, Path]
) -> None:
    """Defect: `check_agent` raised AttributeError/RuntimeError (a traceback) on these."""
    from labreplay.suites.campaign.agents import REFERENCE_AGENTS
    from labreplay.testing import check_agent

    makers = {
        "lambda42": lambda: 42,
        "raises": _Raises,
        "raises-on-build": _raises_on_build,
        "campaign-agent": lambda: REFERENCE_AGENTS["random"](),
    }
    spec, path = conditions_spec
    with pytest.raises(AgentError, match="agent check failed in suite conditions"):
        check_agent(makers[make], "conditions", spec, questions=path)


@pytest.fixture(scope="module")
def campaign_spec(campaign_specs: Path) -> Any:
    from labreplay.suites.campaign.api import load_specs

    return next(s for s in load_specs(campaign_specs) if s.body["assignment"]["id"] == "short-4")


@pytest.mark.parametrize("make", ["lambda42", "raises"])
def test_check_agent_in_campaign_reports_a_broken_agent(make: str, campaign_spec: Any) -> None:
    from labreplay.testing import check_agent

    maker = {"lambda42": lambda: 42, "raises": _Raises}[make]
    with pytest.raises(AgentError, match="agent check failed in suite campaign"):
        check_agent(maker, "campaign", campaign_spec, seed=3)


# ---------------------------------------------------------------- messages that point
def _under_read_only_mount(folder: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """argv run with `folder` bind-mounted read-only in a private mount namespace: a real
    read-only directory even for root (whom chmod does not stop)."""
    inner = 'mount --bind -o ro "$0" "$0" && exec "$@"'
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", inner, str(folder), *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_read_only_directory_and_not_a_store_are_told_apart(
    campaign_specs: Path, tmp_path: Path
) -> None:
    """Defect: a writer on a labreplay store in a read-only directory said the file 'is not a
    labreplay SQLite store'. As root this needs a read-only mount (chmod does not stop root);
    skipped where `unshare -m` is not allowed."""
    from labreplay.store.sqlite import Store

    from .conftest import make_foreign_sqlite

    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1) here")
    folder = tmp_path / "ro"
    folder.mkdir()
    ours, foreign = folder / "s.sqlite", make_foreign_sqlite(folder / "other.sqlite")
    with Store(ours):
        pass
    probe = _under_read_only_mount(folder, "touch", str(folder / "x"))
    if probe.returncode == 0 or "Read-only" not in probe.stderr:
        pytest.skip(f"cannot make a read-only mount here: {probe.stderr.strip()[:120]}")
    before = sorted(p.name for p in folder.iterdir())
    run_argv = ["campaign", "run", "--specs", str(campaign_specs), "--only", "short-1"]
    writer = _under_read_only_mount(
        folder, sys.executable, "-m", "labreplay.cli.main", *run_argv, "--store", str(ours)
    )
    assert writer.returncode == 2 and "Traceback" not in writer.stderr, writer.stderr
    assert "is a labreplay store but" in writer.stderr and "read-only" in writer.stderr
    assert "not a labreplay" not in writer.stderr, writer.stderr
    code, err = cli(*run_argv, "--store", str(foreign))  # the other case, as it reads
    assert code == 2 and "not a labreplay" in err, err
    assert sorted(p.name for p in folder.iterdir()) == before
