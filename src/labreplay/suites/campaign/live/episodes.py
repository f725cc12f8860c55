"""A live campaign as the runner plays it: the adaptive branch (matched random controls
replay the same experiments under another policy, which a live lab cannot), its environment
reading the live source, its run marked `live` (in the header's parameters, so a live run and
the replay of the same spec are two runs) and scored by the campaign's own `score`.

With `twin`, the forecast-only twin follows as the replay's call-matched `no-evidence` control
(`controls.py`): a fresh instance of the same system, the adaptive branch's selections and
calls, no evidence, on the same live stream: the lab's accepted posts about each experiment,
as the adaptive branch recorded them, posted again once the twin's prior forecast is in. It
plays after the adaptive branch has closed (the runner plays a control from its parent's
events); it sees what it would have seen alongside it, the outcomes of closed experiments.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from labreplay.sdk.agents import Agent, ResolvedAgent
from labreplay.sdk.engine import EnvironmentSpec, Store, run_suite
from labreplay.sdk.episodes import Episode, EventSink
from labreplay.sdk.events import JsonObject
from labreplay.suites.campaign.episodes import (
    CampaignEpisodes,
    control_agent,
    play_branch,
    pre_campaign_forecast,
)
from labreplay.suites.campaign.live.lab import LabSide, LiveEnv, LiveLab
from labreplay.suites.campaign.live.panel import split_panel
from labreplay.suites.campaign.live.record import LAB_KIND, experiment_post

TWIN = "no-evidence"  # the twin's branch: the replay's control of that name

if TYPE_CHECKING:
    from labreplay.suites.campaign.live.service import LabService


class LiveEpisodes(CampaignEpisodes):
    """`labreplay.sdk.episodes.EpisodeSuite` for a live campaign: `lab_for(spec)` is the live
    source of each spec's episode; `marker` says which lab (recorded with the run); `twin`:
    the forecast-only twin follows the adaptive branch."""

    def __init__(
        self,
        lab_for: Callable[[EnvironmentSpec], LiveLab],
        marker: Mapping[str, object],
        twin: bool = False,
    ) -> None:
        super().__init__()
        self.lab_for, self.marker, self.twin = lab_for, dict(marker), twin

    def episodes(self, spec: EnvironmentSpec, options: Mapping[str, object]) -> list[Episode]:
        played = super().episodes(spec, {"controls": [TWIN] if self.twin else []})
        return [
            replace(e, identity={"live": self.marker},
                    provenance={**e.provenance, "episode_source": "live"})
            for e in played
        ]  # fmt: skip

    def play(self, spec: EnvironmentSpec, episode: Episode, agent: Agent, sink: EventSink) -> None:
        if episode.parent is None:
            lab = self.lab_for(spec)
            write = lambda: sink.advance(1)  # noqa: E731  (a lab told "accepted" loses nothing)
            make_env = lambda s: LiveEnv(s, lab, sink.stored, write)  # noqa: E731
        else:  # the twin: the same stream, as its parent recorded it
            lab = LiveLab(spec, RecordedStream(sink.parent), wait_s=0.0)
            agent = control_agent(spec, episode.branch, agent, sink.parent, episode.seed)
            make_env = lambda s: LiveEnv(s, lab, sink.stored)  # noqa: E731
        initial = None if episode.parent is None else pre_campaign_forecast(sink.parent)
        play_branch(
            spec, agent, sink, episode.seed, initial, self.max_invalid_streak,
            make_env=make_env,
        )  # fmt: skip


class RecordedStream:
    """The lab side of a twin: a live branch's accepted posts about each experiment, posted
    again when the twin's prior forecast for it is in (a result it never got: a `no_result`
    deviation at once)."""

    def __init__(self, events: Sequence[Mapping[str, object]]) -> None:
        self.posts: dict[str, list[JsonObject]] = {}
        for event in split_panel(events)[0]:
            payload = event["payload"]
            if event["kind"] == LAB_KIND:
                assert isinstance(payload, dict)
                post = payload["post"]
                if payload["accepted"] and experiment_post(post):  # not a note or record
                    self.posts.setdefault(str(post["experiment_id"]), []).append(post)

    def forecast_asked(self, lab: LiveLab, experiment_id: str) -> None:
        for post in self.posts.get(experiment_id, []):
            lab.post(post)

    def selection_wanted(self, lab: LiveLab) -> None:
        del lab  # never asked: the twin replays its parent's selections as its own


def play_live(
    specs: Sequence[EnvironmentSpec],
    agent: ResolvedAgent,
    store: Store,
    service: LabService,
    *,
    seed: int,
    marker: Mapping[str, object],
    wait_s: float,
    side_for: Callable[[EnvironmentSpec], LabSide] | None = None,
    twin: bool = False,
    selections: str = "agent",
) -> list[dict[str, object]]:
    """Play each spec as a live campaign whose lab posts through `service` (`side_for(spec)`:
    a lab told of each forecast asked, e.g. an emulated one); the runner records one `live`
    run per spec (and its forecast-only twin's, with `twin`) and returns their summaries;
    `selections`: who selects the experiments, the agent or the lab (`live.lab`)."""

    def lab_for(spec: EnvironmentSpec) -> LiveLab:
        side = side_for(spec) if side_for is not None else None
        service.labs[spec.spec_id] = LiveLab(spec, side, wait_s, selections)
        return service.labs[spec.spec_id]

    suite = LiveEpisodes(lab_for, marker, twin)
    return run_suite(suite, specs, agent, store, seed=seed, options={})


__all__ = ["TWIN", "LiveEpisodes", "RecordedStream", "play_live"]
