"""A live campaign as the runner plays it: the adaptive branch only (matched controls replay
the same experiments under another policy, which a live lab cannot), its environment reading
the live source, its run marked `live` (in the header's parameters, so a live run and the
replay of the same spec are two runs) and scored by the campaign's own `score`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from labreplay.sdk.agents import Agent
from labreplay.sdk.engine import EnvironmentSpec
from labreplay.sdk.episodes import Episode, EventSink
from labreplay.suites.campaign.episodes import CampaignEpisodes, play_branch
from labreplay.suites.campaign.live.lab import LiveEnv, LiveLab


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
        play_branch(
            spec, agent, sink, episode.seed, None, self.max_invalid_streak,
            make_env=lambda s: LiveEnv(s, lab),
        )  # fmt: skip


__all__ = ["LiveEpisodes"]
