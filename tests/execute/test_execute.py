"""The executor layer on real campaigns: in-process and a real Dask LocalCluster store the
same bytes as the original in-process runner; resumes never duplicate work."""

from __future__ import annotations

import sqlite3

import pytest
from tests.execute.conftest import store_rows

from labreplay.compile.spec import EnvironmentSpec
from labreplay.errors import LabreplayError, SpecError
from labreplay.execute import DaskExecutor, InProcessExecutor, WorkUnit
from labreplay.store import Store
from labreplay.suites.campaign.api import agent_factory, run_assignment
from labreplay.suites.campaign.runner import run_assignments


@pytest.fixture(scope="module")
def reference_store(tmp_path_factory: pytest.TempPathFactory, few_specs: list[EnvironmentSpec]):
    """The original path: `run_assignment(spec, factory, store, seed)` for each spec."""
    path = tmp_path_factory.mktemp("reference") / "ref.sqlite"
    with Store(path) as store:
        summaries = [run_assignment(s, agent_factory("bayes"), store, 0) for s in few_specs]
    return path, summaries


def test_in_process_executor_writes_the_same_store(tmp_path, few_specs, reference_store):
    ref_path, ref_summaries = reference_store
    with Store(tmp_path / "s.sqlite") as store:
        summaries = run_assignments(few_specs, "bayes", store, 0, executor=InProcessExecutor())
    assert summaries == ref_summaries
    assert store_rows(tmp_path / "s.sqlite") == store_rows(ref_path)


def test_dask_local_cluster_matches_in_process_byte_for_byte(tmp_path, few_specs, reference_store):
    from distributed import LocalCluster

    ref_path, ref_summaries = reference_store
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        DaskExecutor(cluster=cluster) as executor,
        Store(tmp_path / "dask.sqlite") as store,
    ):
        summaries = run_assignments(few_specs, "bayes", store, 0, executor=executor)
    heads = [b["head_hash"] for s in summaries for b in s["branches"].values()]
    ref_heads = [b["head_hash"] for s in ref_summaries for b in s["branches"].values()]
    assert heads == ref_heads and len(heads) == 3 * len(few_specs)
    assert store_rows(tmp_path / "dask.sqlite") == store_rows(ref_path)


def test_restarted_driver_resumes_without_duplicates(tmp_path, few_specs, reference_store):
    ref_path, _ = reference_store
    path = tmp_path / "resume.sqlite"
    with Store(path) as store:
        run_assignments(few_specs, "bayes", store, 0)
    # A crash mid-branch: the random control of the long assignment lost its tail, its scores
    # and its completion mark; another assignment was never started.
    conn = sqlite3.connect(path)
    long_random = conn.execute(
        "SELECT run_id FROM runs WHERE branch='random' AND spec_id LIKE '%long-2'"
    ).fetchone()[0]
    conn.execute("DELETE FROM events WHERE run_id=? AND seq > 20", (long_random,))
    conn.execute("DELETE FROM scores WHERE run_id=?", (long_random,))
    conn.execute("UPDATE runs SET status='running', summary=NULL WHERE run_id=?", (long_random,))
    short4 = [r[0] for r in conn.execute("SELECT run_id FROM runs WHERE spec_id LIKE '%short-4'")]
    for table in ("events", "scores", "runs"):
        conn.executemany(f"DELETE FROM {table} WHERE run_id=?", [(r,) for r in short4])
    conn.commit()
    conn.close()
    with Store(path) as store:
        run_assignments(few_specs, "bayes", store, 0)
        run_assignments(few_specs, "bayes", store, 0)  # everything complete: read back only
    assert store_rows(path) == store_rows(ref_path)


def test_a_stored_run_that_disagrees_is_refused(tmp_path, few_specs):
    path = tmp_path / "tampered.sqlite"
    with Store(path) as store:
        run_assignments(few_specs[:1], "bayes", store, 0)
    conn = sqlite3.connect(path)
    conn.execute(
        "UPDATE events SET hash='0' || substr(hash, 2) WHERE seq=3 AND run_id IN "
        "(SELECT run_id FROM runs WHERE branch='adaptive')"
    )
    conn.execute("UPDATE runs SET status='running' WHERE branch='adaptive'")
    conn.commit()
    conn.close()
    with (
        Store(path) as store,
        pytest.raises(LabreplayError, match=r"does not verify|differs from the stored"),
    ):
        run_assignments(few_specs[:1], "bayes", store, 0)


def test_work_unit_refuses_a_modified_spec(few_specs, tmp_path):
    import copy

    from labreplay.execute import ThreadedExecutor

    spec = copy.deepcopy(few_specs[0])
    assert spec.spec_hash == few_specs[0].spec_hash  # hashed, then changed in place
    spec.body["budgets"]["evidence"] += 9
    with Store(tmp_path / "s.sqlite") as store, ThreadedExecutor(1) as threads:
        with pytest.raises(SpecError, match="work unit"):
            run_assignments([spec], "bayes", store, 0, executor=threads)
        with pytest.raises(SpecError, match="in-process"):
            run_assignments([spec], "bayes", store, 0)


def test_executor_contracts():
    units = [WorkUnit("a", sum, ([1, 2],)), WorkUnit("a", sum, ([3],))]
    with pytest.raises(LabreplayError, match="given twice"):
        list(InProcessExecutor().run(units))
    assert list(InProcessExecutor().run(units[:1])) == [("a", 3)]
    with pytest.raises(LabreplayError, match="exactly one"):
        DaskExecutor()
    with pytest.raises(LabreplayError, match="exactly one"):
        DaskExecutor("tcp://127.0.0.1:1", cluster=object())


def test_threaded_executor_matches_in_process(tmp_path, sdl1_specs):
    """Campaigns in flight on threads store exactly what the sequential run stores."""
    from labreplay.execute import InProcessExecutor, ThreadedExecutor
    from labreplay.store.sqlite import Store
    from labreplay.suites.campaign.runner import run_assignments

    chosen = [sdl1_specs[6], sdl1_specs[7], sdl1_specs[8]]
    heads = []
    for name, executor in (("seq", InProcessExecutor()), ("thr", ThreadedExecutor(3))):
        with Store(tmp_path / f"{name}.sqlite") as store, executor:
            results = run_assignments(
                chosen, "bayes", store, 0, ("random", "no-evidence"), executor
            )
            heads.append(
                [
                    r["branches"][b]["head_hash"]
                    for r in results
                    for b in ("adaptive", "random", "no-evidence")
                ]
            )
    assert heads[0] == heads[1]
