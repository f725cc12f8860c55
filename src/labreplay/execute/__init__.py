"""Run many work units: in-process by default, or on a Dask cluster for scale-out.

`run_assignments(specs, agent_name, store, seed, controls, executor)` runs the campaign suite's
assignments through any executor; only the calling process writes the store. See
`labreplay.execute.dask_executor` for running on a Dask cluster or an HPC scheduler.
"""

from labreplay.execute.base import Executor, InProcessExecutor, ThreadedExecutor, WorkUnit
from labreplay.execute.campaign import compute_assignment, run_assignments
from labreplay.execute.dask_executor import DaskExecutor

__all__ = [
    "DaskExecutor",
    "Executor",
    "InProcessExecutor",
    "ThreadedExecutor",
    "WorkUnit",
    "compute_assignment",
    "run_assignments",
]
