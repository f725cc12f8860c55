"""docs/live.md's curl walk-through, run as written against a real `labreplay campaign live
serve` on 127.0.0.1 (the documented port replaced by a free one): each curl block's output is
the text block under it (a GET is asked again until the campaign has got there), the service
ends, and its store verifies and holds what the lab posted (issue 52)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from tests.conftest import free_port
from tests.docs._blocks import ROOT, blocks
from tests.docs.test_docs_examples import _env

from labreplay.store.sqlite import Store
from labreplay.suites.campaign.live.record import live_record

PAGE = ROOT / "docs" / "live.md"


def _bash(code: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_the_curl_walk_through_runs(campaign_specs_source: Path, tmp_path: Path) -> None:
    found = blocks(PAGE)
    port = str(free_port())
    steps = []  # (bash code, the documented answer or None)
    for i, block in enumerate(found):
        if block.lang == "bash":
            after = found[i + 1] if i + 1 < len(found) else None
            answer = after.code if after is not None and after.lang == "text" else None
            steps.append((block.code.replace("8765", port), answer))
    (serve, _), *curls, (finish, _) = steps
    assert serve.rstrip().endswith("&") and "live serve" in serve and "store verify" in finish
    (tmp_path / "specs").symlink_to(campaign_specs_source, target_is_directory=True)
    env = _env(tmp_path)  # one shell session: the first block's exports hold for the rest
    for line in serve.splitlines():
        if line.startswith("export "):
            name, _, value = line.removeprefix("export ").partition("=")
            env[name] = value
    service = subprocess.Popen(["bash", "-c", serve.rstrip().removesuffix("&")], cwd=tmp_path,
                               env=env, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)  # fmt: skip
    try:
        for code, answer in curls:
            assert answer is not None, f"no documented answer under {code!r}"
            deadline = time.monotonic() + (60 if " -d " not in code else 0)
            while True:
                ran = _bash(code, tmp_path, env)
                if ran.stdout == answer or time.monotonic() >= deadline:
                    break
                time.sleep(0.2)
            assert (ran.returncode, ran.stdout) == (0, answer), (code, ran.stderr)
        _, err = service.communicate(timeout=120)
        assert service.returncode == 0, err
    finally:
        if service.poll() is None:
            os.killpg(service.pid, signal.SIGKILL)
            service.wait(timeout=30)
    done = _bash(finish, tmp_path, env)
    assert done.returncode == 0, done.stdout + done.stderr
    with Store(tmp_path / "live.sqlite") as db:
        [run] = db.runs()
        record = live_record(db.events(run.run_id))
    assert record["sample"] == "batch 7" and record["raw_data"] == ["lab://raw/7"]
    kinds = [d["kind"] for d in record["deviations"]]  # type: ignore[union-attr, index]
    assert kinds == ["operator_intervention", "aborted", "no_result", "no_result"]
