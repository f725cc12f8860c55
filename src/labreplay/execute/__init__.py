"""Run many work units: in-process by default, or on a Dask cluster for scale-out.

Executors run keyed work units; only the calling process writes the store. The episode runner
(`labreplay.engine.runner.run_suite`) submits one unit per spec through them. See
`labreplay.execute.dask_executor` for running on a Dask cluster or an HPC scheduler.
"""

from labreplay.execute.base import Executor, InProcessExecutor, ThreadedExecutor, WorkUnit
from labreplay.execute.dask_executor import DaskExecutor

__all__ = [
    "DaskExecutor",
    "Executor",
    "InProcessExecutor",
    "ThreadedExecutor",
    "WorkUnit",
]
