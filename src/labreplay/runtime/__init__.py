"""Runtime building blocks shared by suites: the hash-chained trajectory and its recorder."""

from labreplay.runtime.recorder import Recorder, RunHeader, open_recorder, open_run
from labreplay.runtime.trajectory import GENESIS, Event, Trajectory

__all__ = ["GENESIS", "Event", "Recorder", "RunHeader", "Trajectory", "open_recorder", "open_run"]
