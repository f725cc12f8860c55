"""Same spec + seed + deterministic agent -> identical trajectory hash in two processes; a run
killed mid-campaign and resumed from the store ends with the same trajectory hash."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from labreplay.store.sqlite import Store
from labreplay.suites.campaign.compiler import write_specs

DRIVER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from labreplay.store.sqlite import Store
    from labreplay.suites.campaign.api import load_specs, run_assignment
    from labreplay.suites.campaign.agents import BayesAgent

    class SlowBayes(BayesAgent):
        name = "bayes"  # same identity as the reference agent: resume must find the run

        def act(self, observation):
            time.sleep(float(sys.argv[3]))
            return super().act(observation)

    spec = load_specs(Path(sys.argv[1]))[0]
    with Store(sys.argv[2]) as store:
        result = run_assignment(spec, SlowBayes, store, 5)
    print(" ".join(result["branches"][b]["head_hash"] for b in ("adaptive", "random",
                                                                    "no-evidence")))
    """
)


def _driver(tmp_path: Path, specs: Path, store: Path, delay: float) -> subprocess.Popen[str]:
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    return subprocess.Popen(
        [sys.executable, str(script), str(specs), str(store), str(delay)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ},
    )


def _specs_dir(pg_specs, tmp_path: Path) -> Path:
    out = tmp_path / "specs"
    index = {
        "assignments": [{"id": "long-2", "file": "long-2.json", "spec_hash": pg_specs[1].spec_hash}]
    }
    write_specs(out, index, [pg_specs[1]])
    return out


def test_two_processes_same_hashes(pg_specs, tmp_path: Path):
    specs = _specs_dir(pg_specs, tmp_path)
    heads = []
    for name in ("a", "b"):
        proc = _driver(tmp_path, specs, tmp_path / f"{name}.sqlite", 0.0)
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        heads.append(out.split())
    assert heads[0] == heads[1] and len(heads[0]) == 3


def test_kill_mid_campaign_and_resume(pg_specs, tmp_path: Path):
    specs = _specs_dir(pg_specs, tmp_path)
    reference = _driver(tmp_path, specs, tmp_path / "ref.sqlite", 0.0)
    ref_out, err = reference.communicate(timeout=300)
    assert reference.returncode == 0, err

    store_path = tmp_path / "killed.sqlite"
    proc = _driver(tmp_path, specs, store_path, 0.02)
    deadline = time.time() + 120
    committed = 0
    while time.time() < deadline:
        time.sleep(0.05)
        if store_path.exists():
            with Store(store_path) as store:
                committed = store.event_count()
            if committed >= 25:
                break
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert committed >= 25, "the driver did not get far enough before the deadline"
    with Store(store_path) as store:
        runs = store.runs()
        assert runs and all(r.status == "running" for r in runs)
        kept = store.event_count()
    assert kept >= committed  # nothing committed was lost

    resumed = _driver(tmp_path, specs, store_path, 0.0)
    out, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    assert out.split() == ref_out.split()
    with Store(store_path) as store:
        assert all(r.status == "complete" for r in store.runs())
        assert len(store.runs()) == 3
        for run in store.runs():
            from labreplay.runtime.trajectory import Trajectory

            events = store.events(run.run_id)
            assert Trajectory.verify(events, run.spec_hash) == events[-1]["hash"]
