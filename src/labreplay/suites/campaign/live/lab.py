"""The live episode source: a lab's posts about the experiments the system under evaluation
selected, checked as they arrive, and the campaign environment that reveals and scores from
them instead of from the spec's recorded evaluator section.

The order is a replay's: the agent selects an experiment, its prior forecast is asked, and only
then may the lab post that experiment's result (`forecast_asked` waits for it: an outcome, or a
deviation such as a failed experiment); its evidence, bought as in a replay, is what the lab
posted. Every post, accepted or refused (with the one-line reason the lab was answered), is a
`lab` event of the run's chain, so nothing a lab sent is lost and the record alone rescores
the run. The lab may post the held-out panel's outcomes too, at any time (`live.panel`): the
stored scores still read the panel from the spec; `live.scores` rescores it from these.

With `selections="lab"` the lab's own agent selects: its `selection` posts queue, and before
each selection the campaign takes the next one as its selection action (`selected_by: lab` in
the action event), then asks the system under evaluation for its prior forecast as usual.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol, cast

from labreplay.sdk import canonical_json
from labreplay.sdk.engine import EnvironmentSpec
from labreplay.sdk.events import JsonObject, JsonValue
from labreplay.suites.campaign.actions import CampaignAction
from labreplay.suites.campaign.env import CampaignEnv, StepResult
from labreplay.suites.campaign.live.panel import PANEL_POST, panel_refusal
from labreplay.suites.campaign.live.record import (
    LAB_KIND,
    POSTS,
    SELECTION_POST,
    experiment_post,
    experiment_record,
    post_refusal,
)
from labreplay.suites.campaign.protocol import REVIEW_KIND
from labreplay.suites.campaign.views import EvaluatorRecord


class LabSide(Protocol):
    """The lab as the source tells it what the system under evaluation did (an emulated lab
    posts its recorded results from here; a served one learns it from its own requests)."""

    def forecast_asked(self, lab: LiveLab, experiment_id: str) -> None: ...

    def selection_wanted(self, lab: LiveLab) -> None: ...  # selections="lab": the next, please


class LiveLab:
    """What a lab posted about one campaign, checked against what the campaign has done."""

    def __init__(
        self, spec: EnvironmentSpec, side: LabSide | None, wait_s: float, selections: str = "agent"
    ) -> None:
        self.selections, self.budget = selections, int(spec.body["budgets"]["experiments"])
        self._chosen: list[str] = []  # the lab's selections not yet taken (selections="lab")
        self.wanting = False  # the campaign waits for the lab's next selection
        self.candidates = {str(c["experiment_id"]) for c in spec.body["candidates"]}
        self.kinds = (*spec.body["prices"], REVIEW_KIND)
        self.panel = {str(q["experiment_id"]) for q in spec.body["queries"]}
        self._panel_posted: set[str] = set()
        self.side, self.wait_s = side, wait_s
        self._lock = threading.Condition()
        self._posts: dict[str, list[JsonObject]] = {}
        self._final: set[str] = set()  # experiments whose result (outcome, deviation) is in
        self._selected: set[str] = set()
        self._asked: set[str] = set()  # experiments whose prior forecast was asked
        self._unrecorded: list[dict[str, JsonValue]] = []
        self._over = False  # the run's chain has ended: nothing can be recorded any more
        self.restoring = False  # a resumed run replays its stored posts: new ones wait
        self.evaluator = LiveEvaluator(self)

    # ---------------------------------------------------------------- the lab's side
    def post(self, payload: object) -> JsonObject:
        """One post from the lab: accepted, or refused with the reason (both recorded)."""
        with self._lock:
            if self._over:  # answered, not recorded: there is no run left to record it in
                return {"accepted": False, "error": "the campaign is over", "status": 409}
            refused = self._refusal(payload)
            if self.restoring and refused is None:  # its state is not the stored one yet
                refused = 409, "the run is being restored from its store: post again"
            event: dict[str, JsonValue] = {"post": _as_json(payload), "accepted": not refused}
            if refused is not None:
                event["error"] = refused[1]
            elif isinstance(post := event["post"], dict) and post["post"] == PANEL_POST:
                self._panel_posted.add(str(post["experiment_id"]))
            elif isinstance(post, dict) and post["post"] == SELECTION_POST:
                self._chosen.append(str(post["experiment_id"]))
            elif isinstance(post, dict) and experiment_post(post):
                eid = str(post["experiment_id"])
                self._posts.setdefault(eid, []).append(post)
                if post["post"] != "evidence":
                    self._final.add(eid)
            self._unrecorded.append(event)
            self._lock.notify_all()
        if refused is None:
            return {"accepted": True}
        return {"accepted": False, "error": refused[1], "status": refused[0]}

    def _refusal(self, post: object) -> tuple[int, str] | None:
        """Why a post is refused, with its HTTP status: 400 malformed, 404 no such experiment,
        409 out of order (not selected, before its forecast, a duplicate, after the result)."""
        if isinstance(post, Mapping) and post.get("post") == PANEL_POST:
            return panel_refusal(post, self.panel, self._panel_posted)
        if isinstance(post, Mapping) and post.get("post") == SELECTION_POST:
            eid = post.get("experiment_id")
            chosen = eid if isinstance(eid, str) else repr(eid)  # a non-string: no candidate
            return post_refusal(post, self.candidates, time.time()) or self._selection_refusal(
                chosen
            )
        if not isinstance(post, Mapping) or post.get("post") not in POSTS:
            known = ", ".join((*POSTS, PANEL_POST, SELECTION_POST))
            return 400, f"a post is a JSON object whose 'post' is one of {known}"
        refused = post_refusal(post, self.candidates, time.time())
        if refused is not None or not experiment_post(post):
            return refused  # a note or a record post: the campaign's order does not bind it
        eid, what = post.get("experiment_id"), post["post"]
        if not isinstance(eid, str) or eid not in self.candidates:
            return 404, f"unknown experiment {eid!r}"
        if eid not in self._selected:
            return 409, f"experiment {eid!r} was not selected"
        if what == "outcome" and eid not in self._asked:
            return 409, f"outcome before its forecast was asked (experiment {eid!r})"
        if eid in self._final:
            done = any(p["post"] == what for p in self._posts[eid]) and what != "evidence"
            return 409, f"{'duplicate' if done else 'late'} post: experiment {eid!r} has its result"
        if what == "evidence":
            return self._evidence_refusal(eid, post)
        if what == "outcome":
            outcome = post.get("outcome")
            if not isinstance(outcome, Mapping) or not isinstance(outcome.get("valid"), bool):
                return 400, "an outcome post needs 'outcome': {\"valid\": true|false, ...}"
        return None

    def _selection_refusal(self, eid: str) -> tuple[int, str] | None:
        if self.selections != "lab":
            return 409, "the system under evaluation selects here (the service: --selections agent)"
        if eid not in self.candidates:
            return 404, f"unknown experiment {eid!r}"
        if eid in self._selected or eid in self._chosen:
            return 409, f"experiment {eid!r} was already selected"
        if len(self._selected) + len(self._chosen) >= self.budget:
            return 409, f"the experiment budget ({self.budget}) is spent"
        return None

    def _evidence_refusal(self, eid: str, post: Mapping[str, object]) -> tuple[int, str] | None:
        kind, item = post.get("kind"), post.get("item")
        if kind not in self.kinds:
            return 400, f"unknown evidence kind {kind!r} (known: {', '.join(self.kinds)})"
        earlier = [_item_id(p) for p in self._posts.get(eid, []) if p.get("kind") == kind]
        if "missing" in post:
            return (409, f"duplicate post: {kind} of {eid!r} was posted") if earlier else None
        if not isinstance(item, Mapping) or not isinstance(item.get("item_id"), str):
            return 400, "an evidence post needs 'item' with an 'item_id' (or 'missing': reason)"
        if None in earlier or item["item_id"] in earlier:
            return 409, f"duplicate post: {kind} item {item['item_id']!r} of {eid!r}"
        return None

    # ---------------------------------------------------------------- the campaign's side
    def selected(self, eid: str) -> None:
        with self._lock:
            self._selected.add(eid)

    def next_selection(self, wait: bool = True) -> str | None:
        """The lab's next selection, waited for up to `wait_s` (None: the lab selected none)."""
        with self._lock:
            self.wanting = not self._chosen
        if self.wanting and wait and self.side is not None:
            self.side.selection_wanted(self)
        with self._lock:
            if wait:
                self._lock.wait_for(lambda: bool(self._chosen), timeout=self.wait_s)
            self.wanting = False
            return self._chosen.pop(0) if self._chosen else None

    def forecast_asked(self, eid: str, wait: bool = True) -> None:
        """The experiment's prior forecast is recorded: the lab may post its result, which
        the campaign waits for (a lab silent past `wait_s` is recorded as a deviation; not
        `wait`: a resumed run, whose stored posts follow)."""
        with self._lock:
            self._asked.add(eid)
            if not wait or eid in self._final:
                return
        if self.side is not None:
            self.side.forecast_asked(self, eid)
        with self._lock:
            if not self._lock.wait_for(lambda: eid in self._final, timeout=self.wait_s):
                silent = f"no result within {self.wait_s:g} s"
                late: JsonObject = {"post": "deviation", "experiment_id": eid,
                                    "kind": "no_result", "detail": silent}  # fmt: skip
                self._posts.setdefault(eid, []).append(late)
                self._final.add(eid)
                self._unrecorded.append({"post": late, "accepted": True})

    def awaiting(self) -> list[str]:
        """The experiments whose forecast is in and whose result the campaign waits for."""
        with self._lock:
            return [] if self.restoring else sorted(self._asked - self._final)

    def restore(self, event: Mapping[str, JsonValue]) -> None:
        """A stored `lab` event of a resumed run, taken again as it was."""
        post = event["post"]
        if event["accepted"] and isinstance(post, dict) and post.get("post") == PANEL_POST:
            with self._lock:
                self._panel_posted.add(str(post["experiment_id"]))
        elif event["accepted"] and isinstance(post, dict) and post.get("post") == SELECTION_POST:
            with self._lock:
                self._chosen.append(str(post["experiment_id"]))
        elif event["accepted"] and isinstance(post, dict) and experiment_post(post):
            with self._lock:
                eid = str(post["experiment_id"])
                self._posts.setdefault(eid, []).append(post)
                if post["post"] != "evidence":
                    self._final.add(eid)

    def refuse(self, what: str, error: str) -> None:
        """A request refused before it was read as a post (a wrong token): recorded as such."""
        with self._lock:
            if not self._over:
                self._unrecorded.append({"post": {"raw": what}, "accepted": False, "error": error})

    def unrecorded(self, last: bool = False) -> list[dict[str, JsonValue]]:
        """The posts (accepted and refused) not yet in the chain, in arrival order (`last`:
        the chain ends after these; later posts are refused, not taken)."""
        with self._lock:
            out, self._unrecorded = self._unrecorded, []
            self._over = self._over or last
        return out


class LiveEvaluator(Mapping[str, EvaluatorRecord]):
    """The evaluator section as the lab has posted it so far (what `CampaignEnv` reveals)."""

    def __init__(self, lab: LiveLab) -> None:
        self._lab = lab

    def __getitem__(self, eid: str) -> EvaluatorRecord:
        lab = self._lab
        with lab._lock:
            return experiment_record(lab._posts.get(eid, []), lab.kinds, eid in lab._final)

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._lab.candidates))

    def __len__(self) -> int:
        return len(self._lab.candidates)


class LiveEnv(CampaignEnv):
    """The campaign environment over a live source: the same rules and events as a replay,
    plus the lab's posts, recorded where they entered the run."""

    def __init__(
        self,
        spec: EnvironmentSpec,
        lab: LiveLab,
        stored: Sequence[Mapping[str, Any]] = (),
        write: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(spec)
        self.lab, self.stored = lab, stored  # stored: what a killed run recorded (replayed)
        self.write = write  # writes the chain so far: posts taken are on disk at once
        self._private = lab.evaluator
        lab.restoring = bool(stored)

    def step(self, action: JsonValue) -> StepResult:
        self._record_posts()
        return super().step(action)

    def before_act(self) -> None:
        """selections="lab": the lab's next selection is the campaign's selection action (a
        lab that selects none within its wait ends the campaign, recorded as a harness stop)."""
        if self.lab.selections != "lab" or self.phase != "select":
            return
        self._record_posts()  # a resumed run's stored selection, if any
        eid = self.lab.next_selection(wait=not self.lab.restoring)
        self._record_posts()
        if eid is None:
            self.stop_by_harness(
                lab_silent=f"no selection from the lab within {self.lab.wait_s:g} s"
            )
        else:
            self._do_select_experiment({"type": "select_experiment", "experiment_id": eid}, "lab")

    def _do_select_experiment(self, action: CampaignAction, by: str | None = None) -> StepResult:
        result = super()._do_select_experiment(action, by)
        if result.accepted:
            self.lab.selected(action["experiment_id"])
        return result

    def _do_submit_forecast(self, action: CampaignAction) -> StepResult:
        eid = action["experiment_id"]
        prior = eid == self.open_id and not self.experiments[eid]["forecasts"]
        result = super()._do_submit_forecast(action)
        if result.accepted and prior:
            self._record_posts()  # a resumed run's stored result of it, if any
            self.lab.forecast_asked(eid, wait=not self.lab.restoring)
            self._record_posts()
        return result

    def end(self, reason: str | None = None) -> None:
        self._record_posts(last=True)
        super().end(reason)

    def _record_posts(self, last: bool = False) -> None:
        """The posts since the last call, into the chain (a resumed run first replays its
        stored ones where they were; until its stored events are done, new posts wait)."""
        events, stored = self.trajectory.events, self.stored
        while len(events) < len(stored) and stored[len(events)]["kind"] == LAB_KIND:
            self.lab.restore(stored[len(events)]["payload"])
            self.trajectory.append(LAB_KIND, stored[len(events)]["payload"])
        self.lab.restoring = len(events) < len(stored)
        if self.lab.restoring and not last:
            return
        taken = self.lab.unrecorded(last)
        for event in taken:
            self.trajectory.append(LAB_KIND, event)
        if taken and self.write is not None:
            self.write()


def _item_id(post: JsonObject) -> str | None:
    """An accepted evidence post's item id (None: it posted the kind as none recorded)."""
    item = post.get("item")
    return str(item.get("item_id")) if isinstance(item, dict) else None


def _as_json(value: object) -> JsonValue:
    """A post as the chain can hold it (anything but a JSON object is kept as its repr)."""
    try:
        canonical_json(value)
    except (TypeError, ValueError):
        value = None
    return cast("JsonValue", value) if isinstance(value, Mapping) else {"raw": repr(value)[:2000]}


__all__ = ["LabSide", "LiveEnv", "LiveEvaluator", "LiveLab"]
