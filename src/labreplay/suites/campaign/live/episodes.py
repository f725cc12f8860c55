"""A live campaign as the runner plays it: the adaptive branch only (matched controls replay
the same experiments under another policy, which a live lab cannot), its environment reading
the live source, its run marked `live` (in the header's parameters, so a live run and the
replay of the same spec are two runs) and scored by the campaign's own `score`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from labreplay.sdk.agents import Agent, ResolvedAgent
from labreplay.sdk.engine import EnvironmentSpec, Store, run_suite
from labreplay.sdk.episodes import Episode, EventSink
from labreplay.suites.campaign.episodes import CampaignEpisodes, play_branch
from labreplay.suites.campaign.live.lab import LabSide, LiveEnv, LiveLab

if TYPE_CHECKING:
    from labreplay.suites.campaign.live.service import LabService


class LiveEpisodes(CampaignEpisodes):
    """`labreplay.sdk.episodes.EpisodeSuite` for a live campaign: `lab_for(spec)` is the live
    source of each spec's episode; `marker` says which lab (recorded with the run)."""

    def __init__(
        self, lab_for: Callable[[EnvironmentSpec], LiveLab], marker: Mapping[str, object]
    ) -> None:
        super().__init__()
        self.lab_for, self.marker = lab_for, dict(marker)

    def episodes(self, spec: EnvironmentSpec, options: Mapping[str, object]) -> list[Episode]:
        adaptive = super().episodes(spec, {})[0]
        provenance = {**adaptive.provenance, "episode_source": "live"}
        return [replace(adaptive, identity={"live": self.marker}, provenance=provenance)]

    def play(self, spec: EnvironmentSpec, episode: Episode, agent: Agent, sink: EventSink) -> None:
        lab = self.lab_for(spec)
        write = lambda: sink.advance(1)  # noqa: E731  (a lab told "accepted" loses nothing)
        play_branch(
            spec, agent, sink, episode.seed, None, self.max_invalid_streak,
            make_env=lambda s: LiveEnv(s, lab, sink.stored, write),
        )  # fmt: skip


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
) -> list[dict[str, object]]:
    """Play each spec as a live campaign whose lab posts through `service` (`side_for(spec)`:
    a lab told of each forecast asked, e.g. an emulated one); the runner records one `live`
    run per spec and returns its summaries."""

    def lab_for(spec: EnvironmentSpec) -> LiveLab:
        side = side_for(spec) if side_for is not None else None
        service.labs[spec.spec_id] = LiveLab(spec, side, wait_s)
        return service.labs[spec.spec_id]

    return run_suite(LiveEpisodes(lab_for, marker), specs, agent, store, seed=seed, options={})


__all__ = ["LiveEpisodes", "play_live"]
