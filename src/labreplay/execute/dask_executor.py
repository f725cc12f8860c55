"""Run work units on a Dask distributed cluster.

Workers need only the labreplay package (same version as the driver) and, for suites whose work
units load records, the data directory (`LABREPLAY_DATA_DIR`). Campaign work units carry their
frozen spec, so campaign workers need no data at all. Workers return results; only the driver
writes the store.

Each unit is submitted under its own key, so Dask computes a key once even if it is submitted
twice, and a worker lost mid-task is retried on another worker (`retries`). A driver restarted
after a crash skips every unit whose runs are already complete in the store.

Running on an HPC scheduler (SLURM, PBS, SGE, LSF) with dask-jobqueue
---------------------------------------------------------------------
Install `dask-jobqueue` next to labreplay on the cluster and start the workers as batch jobs
from the driver (a login node or a small job of its own)::

    import labreplay
    from dask_jobqueue import SLURMCluster
    from labreplay.execute import DaskExecutor

    cluster = SLURMCluster(
        cores=1, processes=1, memory="4GB", walltime="02:00:00",
        job_script_prologue=["source /path/to/venv/bin/activate",
                             "export LABREPLAY_DATA_DIR=/path/to/data"],
    )
    cluster.scale(jobs=24)            # or cluster.adapt(minimum=0, maximum=48)
    with DaskExecutor(cluster=cluster) as executor:
        labreplay.run("campaign", specs, "bayes", "runs.sqlite", seed=0, executor=executor)

Keep the store on a filesystem local to the driver (SQLite over NFS/Lustre locking is
unreliable); the workers never open it. To share one scheduler between several drivers, start
it once (`dask scheduler`, workers via `dask worker` in job scripts) and pass its address:
`DaskExecutor("tcp://host:8786")`. If the driver dies, rerun the same command: completed
assignments are read back from the store and only the rest are submitted again.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from labreplay._closing import Closing
from labreplay.errors import LabreplayError
from labreplay.execute.base import R, WorkUnit, check_unique


def _connect_timeout() -> str:
    """How long to wait for a scheduler: $LABREPLAY_DASK_CONNECT_TIMEOUT seconds (default 30;
    an operator behind a slow network raises it, a test of an unreachable address lowers it)."""
    import os

    from labreplay.validate import finite_float

    raw = os.environ.get("LABREPLAY_DASK_CONNECT_TIMEOUT", "30")
    return f"{finite_float('LABREPLAY_DASK_CONNECT_TIMEOUT', raw, lo=0, lo_open=True):g}s"


class DaskExecutor(Closing):
    """`DaskExecutor("tcp://host:8786")`, `DaskExecutor(cluster=LocalCluster(...))`, or
    `DaskExecutor(client=existing_client)`. Closes only the client it created."""

    name = "dask"

    def __init__(
        self,
        address: str | None = None,
        *,
        cluster: Any = None,
        client: Any = None,
        retries: int = 2,
    ) -> None:
        try:
            from distributed import Client
        except ImportError as exc:
            raise LabreplayError(
                "the Dask executor needs dask.distributed: pip install 'labreplay[dist]'"
            ) from exc
        given = sum(x is not None for x in (address, cluster, client))
        if given != 1:
            raise LabreplayError(
                "DaskExecutor needs exactly one of a scheduler address, a cluster or a client"
            )
        self.retries = retries
        self._owns_client = client is None
        if client is not None:
            self.client = client
        else:
            target = address if address is not None else cluster
            try:
                self.client = Client(target, timeout=_connect_timeout())  # type: ignore[no-untyped-call]
            except OSError as exc:
                raise LabreplayError(
                    f"cannot reach Dask scheduler {address or cluster!r}: {exc}"
                ) from exc

    def run(self, units: Sequence[WorkUnit[R]]) -> Iterator[tuple[str, R]]:
        check_unique(units)
        futures = [
            self.client.submit(
                unit.function,
                *unit.args,
                key=f"labreplay-{unit.key}",
                pure=False,
                retries=self.retries,
            )
            for unit in units
        ]
        try:
            # Results are taken in submission order so the driver writes the store in the same
            # order as an in-process run; the cluster keeps computing the later units meanwhile.
            for unit, future in zip(units, futures, strict=True):
                yield unit.key, future.result()
        finally:
            for future in futures:
                future.release()

    def close(self) -> None:
        if self._owns_client:
            self.client.close()
