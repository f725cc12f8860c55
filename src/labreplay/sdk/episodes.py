"""The episode protocol for suite authors: what a suite declares so that the core runner plays
and records it (`labreplay.engine.episodes` has the definitions and their contracts).

    from labreplay.sdk.episodes import Episode, EpisodeSuite, EventSink, Scored

A suite says which episodes a spec has, builds its agent where an episode plays, plays one into
an `EventSink` (which has no store behind it) and scores the events with a pure function; the
runner (`labreplay.sdk.engine.run_suite`) owns everything else. Names are imported from the
core on first use (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from labreplay._lazy import lazy_attributes

if TYPE_CHECKING:
    from labreplay.engine.episodes import Episode, EpisodeSuite, Event, EventSink, Scored

_SOURCES: dict[str, tuple[str, ...]] = {
    "labreplay.engine.episodes": ("Episode", "EpisodeSuite", "Event", "EventSink", "Scored"),
}

__all__ = ["Episode", "EpisodeSuite", "Event", "EventSink", "Scored"]

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_attributes(__name__, globals(), _SOURCES)
