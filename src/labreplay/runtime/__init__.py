"""Runtime building blocks shared by suites: the hash-chained trajectory."""

from labreplay.runtime.trajectory import GENESIS, Trajectory

__all__ = ["GENESIS", "Trajectory"]
