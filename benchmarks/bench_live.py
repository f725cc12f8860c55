"""Live campaign figures (issue 52): the lab-side service's overhead, and an emulated campaign
end to end.

- Per post: one accepted evidence post sent over HTTP to `LabService` on 127.0.0.1
  (`send_post`: a new connection, JSON both ways, the check and the queue of `LiveLab.post`),
  against the same post handed to `LiveLab.post` in process. Median over N posts.
- Per forecast round trip: a prior forecast's `step` in a live environment whose emulated lab
  (no delay) posts that experiment's evidence, outcome and share of panel outcomes through the
  service before the step returns, and records them, against the same action's `step` in the
  replay's `CampaignEnv`. The actions are the bayes agent's on the Precursor Genome long-1
  spec, recorded first; the median over every prior forecast of several plays.
- End to end: `live emulate` of a synthetic record card's long-1 campaign of N candidates and
  an N-experiment budget (the random agent; the runner recording into a fresh store), against
  `campaign run` of the same spec without controls. A card's panel is as large as its
  candidate block (the queries are another block) and every checkpoint hashes the whole
  visible state, so a campaign costs about N^2 in either mode: the full run measures N = 100
  and 200; `LABREPLAY_BENCH_LIVE_N=1000` the issue's 1,000 (about 12 minutes per mode on the
  shared 2-core machine, niced; bayes is out of reach there: its panel forecast alone takes
  ~6 s per checkpoint at 1,000 queries).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import secrets
import statistics
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

from labreplay.records.sources import resolve_data_dir
from labreplay.store.sqlite import Store
from labreplay.suites.campaign.agents import BayesAgent
from labreplay.suites.campaign.api import compile_specs, load_specs, select_specs
from labreplay.suites.campaign.env import CampaignEnv
from labreplay.suites.campaign.live.emulate import EmulatedLab, emulate
from labreplay.suites.campaign.live.lab import LiveEnv, LiveLab
from labreplay.suites.campaign.live.service import LabService, send_post
from labreplay.suites.campaign.resolve import resolve_campaign_agent
from labreplay.suites.campaign.runner import run_assignments

HERE = Path(__file__).resolve().parent
PROTOCOL = """\
eval_precursors = 7
long_assignments = 2
long_candidates = {n}
short_assignments = 0
experiment_budget = {n}
evidence_budget = {n}
"""


def _pg_spec() -> Any:
    _, specs, _ = compile_specs(data_dir=resolve_data_dir(None))
    return next(s for s in specs if s.spec_id.endswith("long-1"))


def post_overhead(spec: Any, n: int) -> tuple[float, float]:
    """Median seconds of one accepted post: over HTTP, and in process."""
    eid = str(spec.body["candidates"][0]["experiment_id"])
    kind = next(iter(spec.body["prices"]))

    def post(i: int) -> dict[str, object]:
        return {"post": "evidence", "experiment_id": eid, "kind": kind,
                "item": {"item_id": f"bench-{i}", "value": i}}  # fmt: skip

    here = LiveLab(spec, None, wait_s=1.0)
    here.selected(eid)
    local = []
    for i in range(n):
        started = time.perf_counter()
        answer = here.post(post(i))
        local.append(time.perf_counter() - started)
        assert answer == {"accepted": True}, answer
    with LabService(secrets.token_urlsafe(24)) as service:
        lab = service.labs[spec.spec_id] = LiveLab(spec, None, wait_s=1.0)
        lab.selected(eid)
        remote = []
        for i in range(n):
            started = time.perf_counter()
            status, answer = send_post(service.url, service.token, spec.spec_id, post(i))
            remote.append(time.perf_counter() - started)
            assert status == 200, answer
    return statistics.median(remote), statistics.median(local)


def _actions(spec: Any) -> list[Any]:
    """The bayes agent's actions on `spec` (checkpoints answered empty), to replay."""
    agent, env = BayesAgent(), CampaignEnv(spec)
    env.reset(0)
    agent.reset(0)
    actions = []
    while not env.done:
        action = agent.act(env.observation())
        actions.append(action)
        if env.step(action).checkpoint_due:
            env.submit_checkpoint({"forecasts": []}, len(env.closed_order), None, "")
    return actions


def _prior_steps(env: CampaignEnv, actions: list[Any]) -> list[float]:
    """Seconds of each prior forecast's step as `env` plays `actions`."""
    env.reset(0)
    out, asked = [], set()
    for action in actions:
        prior = action.get("type") == "submit_forecast" and action["experiment_id"] not in asked
        started = time.perf_counter()
        result = env.step(action)
        if prior:
            out.append(time.perf_counter() - started)
            asked.add(action["experiment_id"])
        if result.checkpoint_due:
            env.submit_checkpoint({"forecasts": []}, len(env.closed_order), None, "")
    return out


def forecast_round_trip(spec: Any, plays: int) -> tuple[float, float, float]:
    """Median seconds of a prior forecast's step, live and replayed, and posts per round trip."""
    actions = _actions(spec)
    live: list[float] = []
    replay: list[float] = []
    posts = 0
    with LabService(secrets.token_urlsafe(24)) as service:
        for _ in range(plays):
            replay += _prior_steps(CampaignEnv(spec), actions)
            send = partial(send_post, service.url, service.token, spec.spec_id)
            lab = LiveLab(spec, EmulatedLab(spec, send, 0.0, False, 0.0, 0), wait_s=60.0)
            service.labs[spec.spec_id] = lab
            env = LiveEnv(spec, lab)
            steps = _prior_steps(env, actions)
            live += steps
            posts = sum(1 for e in env.trajectory.events if e["kind"] == "lab") // len(steps)
    return statistics.median(live), statistics.median(replay), float(posts)


def _card_spec(folder: Path, n: int) -> Any:
    """The long-1 spec of a synthetic card (`synthetic_card.py`): n candidates, an
    n-experiment budget."""
    loaded = importlib.util.spec_from_file_location("synthetic_card", HERE / "synthetic_card.py")
    assert loaded is not None and loaded.loader is not None
    module = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)
    card: Path = module.write_card(folder, max(600, 6 * n), protocol=PROTOCOL.format(n=n))
    from labreplay.cli.main import run as cli

    specs = folder / "specs"
    with contextlib.redirect_stdout(io.StringIO()):  # its index, not a figure
        code = cli(
            ["campaign", "compile", "--record-card", str(card), "--out", str(specs), "--json"]
        )
    if code:
        raise RuntimeError(f"compiling the synthetic card of {n} candidates failed")
    [spec] = select_specs(load_specs(specs), "long-1")
    return spec


def campaign_end_to_end(n: int) -> tuple[float, float]:
    """Seconds of an emulated live campaign of n experiments, and of its replay."""
    agent = resolve_campaign_agent("random")
    with tempfile.TemporaryDirectory(prefix="labreplay-bench-live-") as tmp:
        spec = _card_spec(Path(tmp), n)
        with Store(Path(tmp) / "replay.sqlite") as store:
            started = time.perf_counter()
            run_assignments([spec], agent, store, seed=0, controls=())
            replay_s = time.perf_counter() - started
        with Store(Path(tmp) / "live.sqlite") as store:
            started = time.perf_counter()
            [done] = emulate([spec], agent, store, seed=0)
            live_s = time.perf_counter() - started
            if done["status"] != "complete":
                raise RuntimeError(f"the emulated campaign of {n} ended {done['status']}")
            closed = int(store.scores(str(done["run_id"]))["experiments_closed"] or 0)
            if closed != n:
                raise RuntimeError(f"the emulated campaign closed {closed} of {n} experiments")
    return live_s, replay_s


def run(quick: bool) -> list[dict[str, Any]]:
    spec = _pg_spec()
    remote, local = post_overhead(spec, 100 if quick else 400)
    live, replay, posts = forecast_round_trip(spec, 2 if quick else 6)
    figures: list[dict[str, Any]] = [
        {"name": "live: one post over HTTP (accepted evidence)", "median": remote * 1e3,
         "unit": "ms", "ratio": remote / local, "in_process_ms": local * 1e3},
        {"name": "live: prior-forecast round trip (lab posts via HTTP, no delay)",
         "median": live * 1e3, "unit": "ms", "ratio": live / replay,
         "replay_step_ms": replay * 1e3, "posts_per_round_trip": posts},
    ]  # fmt: skip
    sizes = os.environ.get("LABREPLAY_BENCH_LIVE_N", "50" if quick else "100,200")
    for n in (int(x) for x in sizes.split(",")):
        live_s, replay_s = campaign_end_to_end(n)
        figures.append({"name": f"live emulate end to end: {n}-experiment campaign (random)",
                        "median": live_s, "unit": "s", "ratio": live_s / replay_s,
                        "replay_s": replay_s})  # fmt: skip
    return figures
