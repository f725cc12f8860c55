"""Every `configsearch` option value checked before any store, cache or data is touched.

The pipeline loads data, fits t-SNE and writes cache stages before it meets most values, so a
bad value used to be refused seconds later (or never: `--cost-alpha nan` searched with NaN
acquisitions), after the store was created. These checks need no data: what they refuse is
wrong whatever the data (a share r outside [0, 1], more clusters than OOD candidates, a
held-out depth beyond s_max, no configuration with enough test points). The validators are
the shared ones of `labreplay.validate` (one line, the option and the value, exit 2).
"""

from __future__ import annotations

from pathlib import Path

from labreplay.errors import SpecError
from labreplay.sdk import MAX_INPUT_BYTES, readable_file
from labreplay.sdk.options import bad, number_list
from labreplay.suites.configsearch.pipeline import PipelineSettings
from labreplay.suites.configsearch.space import PAPER_N, PAPER_R, PAPER_S, ConfigSpace


def settings(n_total: int, n_ood: int) -> PipelineSettings:
    """The pipeline settings of `--n-total`/`--n-ood` (their own check, as one line)."""
    try:
        return PipelineSettings(n_total=n_total, n_ood=n_ood)
    except SpecError as exc:
        raise bad("--n-ood", n_ood, f"is refused: {exc}") from None


def config_space(
    r_values: str | None,
    n_values: str | None,
    s_values: str | None,
    pipeline: PipelineSettings,
    min_test_points: int | None = None,
) -> ConfigSpace | None:
    """The restricted space of `--r/n/s-values` (None: the paper's), each value in range, and
    with `min_test_points` at least one configuration with n*s >= it (else a search has no
    candidate; the message names the values)."""
    if r_values is None and n_values is None and s_values is None and min_test_points is None:
        return None
    r = PAPER_R if r_values is None else number_list("--r-values", r_values, lo=0, hi=1)
    n = (
        PAPER_N
        if n_values is None
        else number_list(
            "--n-values",
            n_values,
            integer=True,
            lo=1,
            hi=pipeline.n_ood,
            why=f"n clusters are cut from the --n-ood {pipeline.n_ood} OOD candidates",
        )
    )
    s = (
        PAPER_S
        if s_values is None
        else number_list(
            "--s-values",
            s_values,
            integer=True,
            lo=1,
            hi=pipeline.s_max,
            why=f"the held-out depth per fold is at most s_max={pipeline.s_max}",
        )
    )
    space = ConfigSpace(tuple(r), tuple(n), tuple(s), s_cap=((60, 8),))
    if min_test_points is not None and not any(
        c.n * c.s >= min_test_points for c in space.points()
    ):
        raise bad(
            "--n-values/--s-values",
            f"n {','.join(map(str, n))}; s {','.join(map(str, s))}",
            f"leave no feasible configuration with n*s >= --min-test-points {min_test_points} "
            "test points (give larger values or lower --min-test-points)",
        )
    if r_values is None and n_values is None and s_values is None:
        return None
    return space


def task_or_dataset(
    task: str | None, dataset: Path | None, target: str | None, dataset_b: Path | None
) -> None:
    """Exactly one of a known `--task` or an existing `--dataset` with its `--target`."""
    from labreplay.suites.configsearch.data import task_def

    if (task is None) == (dataset is None):
        raise SpecError("give either --task NAME or --dataset FILE --target FIELD")
    if task is not None:
        try:
            task_def(task)
        except SpecError as exc:
            raise bad("--task", task, f"is refused: {exc}") from None
        if dataset_b is not None or target is not None:
            raise SpecError("--dataset-b and --target go with --dataset, not with --task")
        return
    if not target:
        raise SpecError("--dataset needs --target FIELD (the numeric property to predict)")
    for option, path in (("--dataset", dataset), ("--dataset-b", dataset_b)):
        if path is not None:  # missing, a FIFO, a device...: named for what it is
            readable_file(path, f"{option} dataset file", MAX_INPUT_BYTES)
    from labreplay.suites.configsearch.dataset import check_dataset

    assert dataset is not None  # given exactly one of task and dataset, checked above
    check_dataset(dataset, target, dataset_b)


def data_files(data_dir: Path | None, tasks: list[str], allow_modified: bool) -> list[str]:
    """The built-in tasks' shared files checked against the manifest before the store is
    opened: a modified one is one line naming it (exit 2) unless `allow_modified`; then the
    modified paths, which the run's spec records as `unverified_data`."""
    from labreplay.sdk.data import resolve_data_dir
    from labreplay.suites.configsearch.data import unverified_files

    root = resolve_data_dir(data_dir)
    return sorted({f for task in tasks for f in unverified_files(root, task, allow_modified)})


__all__ = [
    "config_space",
    "data_files",
    "settings",
    "task_or_dataset",
]
