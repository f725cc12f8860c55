"""`campaign live emulate`: a compiled campaign played as a live lab, so the whole live path
runs on one machine. Once the agent's prior forecast for an experiment is in, the emulated lab
posts that experiment's recorded evidence and then its outcome, after `delay_s` (from another
thread), in the recorded order or shuffled, or (with probability `fail_rate`) a deviation: the
experiment failed, nothing posted. With each result it posts the next share of the held-out
panel's recorded outcomes (the panel spread over the experiment budget, so a campaign that
stops early leaves some pending). With `selections="lab"` the emulated lab selects too: the
spec's candidates in their recorded order (seeded, with `shuffle`), one whenever asked. With no delay, no shuffle and no failures the lab posts the
spec's own record, and the live run's campaign events are the replay's.
"""

from __future__ import annotations

import math
import secrets
import threading
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from labreplay.sdk import MISSING_TAG, make_rng
from labreplay.sdk.agents import ResolvedAgent
from labreplay.sdk.engine import EnvironmentSpec, Store
from labreplay.suites.campaign.live.episodes import play_live
from labreplay.suites.campaign.live.lab import LiveLab
from labreplay.suites.campaign.live.panel import PANEL_POST
from labreplay.suites.campaign.live.record import SELECTION_POST
from labreplay.suites.campaign.live.service import LabService, send_post

RESULT_WAIT_S = 60.0  # how long past its delay a campaign waits for an emulated result


class EmulatedLab:
    """The lab side of `LiveLab`, posting a spec's recorded experiments."""

    def __init__(
        self,
        spec: EnvironmentSpec,
        send: Callable[[dict[str, object]], object],
        delay_s: float,
        shuffle: bool,
        fail_rate: float,
        seed: int,
    ) -> None:
        self.record: Mapping[str, Any] = spec.body["evaluator"]
        self.send = send
        self.delay_s, self.shuffle, self.fail_rate = delay_s, shuffle, fail_rate
        self.rng = make_rng(seed, "campaign-live-emulate", spec.spec_hash)
        panel = [str(q["experiment_id"]) for q in spec.body["queries"]]
        if shuffle:
            panel = [panel[i] for i in self.rng.permutation(len(panel))]
        self.panel = panel
        order = [str(c["experiment_id"]) for c in spec.body["candidates"]]
        if shuffle:
            order = [order[i] for i in self.rng.permutation(len(order))]
        self.order = order
        self.panel_share = math.ceil(len(panel) / max(1, int(spec.body["budgets"]["experiments"])))

    def posts(self, eid: str) -> list[dict[str, object]]:
        """What the lab posts about `eid` (drawn in the order experiments are asked)."""
        if self.fail_rate > 0 and self.rng.random() < self.fail_rate:
            return [{"post": "deviation", "experiment_id": eid, "kind": "failed",
                     "detail": "emulated failure"}]  # fmt: skip
        evidence: list[dict[str, object]] = []
        for kind, items in self.record[eid]["evidence"].items():
            if isinstance(items, Mapping):  # none recorded, and why
                evidence.append({"kind": kind, "missing": items[MISSING_TAG]})
            else:
                evidence += [{"kind": kind, "item": dict(item)} for item in items]
        if self.shuffle:
            evidence = [evidence[i] for i in self.rng.permutation(len(evidence))]
        outcome = {"post": "outcome", "outcome": dict(self.record[eid]["outcome"])}
        return [{"post": "evidence", "experiment_id": eid, **e} for e in evidence] + [
            {**outcome, "experiment_id": eid}
        ]

    def panel_posts(self) -> list[dict[str, object]]:
        """The next share of the panel's recorded outcomes (none once all are posted)."""
        share, self.panel = self.panel[: self.panel_share], self.panel[self.panel_share :]
        return [{"post": PANEL_POST, "experiment_id": q,
                 "outcome": dict(self.record[q]["outcome"])} for q in share]  # fmt: skip

    def selection_wanted(self, lab: LiveLab) -> None:
        if self.order:
            self.send({"post": SELECTION_POST, "experiment_id": self.order.pop(0)})

    def forecast_asked(self, lab: LiveLab, eid: str) -> None:
        posts = self.panel_posts() + self.posts(eid)  # the panel first: in before the result
        if self.delay_s <= 0:
            for post in posts:
                self.send(post)
            return
        timer = threading.Timer(self.delay_s, lambda: [self.send(p) for p in posts])
        timer.daemon = True  # a campaign that gave up waiting does not keep the process
        timer.start()


def emulate(
    specs: Sequence[EnvironmentSpec],
    agent: ResolvedAgent,
    store: Store,
    *,
    seed: int,
    delay_s: float = 0.0,
    shuffle: bool = False,
    fail_rate: float = 0.0,
    twin: bool = False,
    selections: str = "agent",
) -> list[dict[str, object]]:
    """Play each spec as a live lab with `agent`, the emulated lab posting through the lab-side
    service on 127.0.0.1 (`live.service`); the runner records one `live` run per spec (and
    its forecast-only twin's, with `twin`) and returns their summaries."""
    marker: dict[str, object] = {
        "lab": "emulated", "delay_s": delay_s, "shuffle": shuffle, "fail_rate": fail_rate
    }  # fmt: skip
    if selections != "agent":  # an agent-selected run keeps the identity it always had
        marker["selections"] = selections
    with LabService(secrets.token_urlsafe(24)) as service:

        def side_for(spec: EnvironmentSpec) -> EmulatedLab:
            send = partial(send_post, service.url, service.token, spec.spec_id)
            return EmulatedLab(spec, send, delay_s, shuffle, fail_rate, seed)

        return play_live(
            specs, agent, store, service, seed=seed, marker=marker,
            wait_s=delay_s + RESULT_WAIT_S, side_for=side_for, twin=twin,
            selections=selections,
        )  # fmt: skip


__all__ = ["EmulatedLab", "emulate"]
