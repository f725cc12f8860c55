"""One instrument: `configsearch run` and `labreplay.run("configsearch", ...)` share one
options class, so at their defaults (seed, budget, initial design, C_min, cost weight) they
store the same runs with the same scores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import labreplay
from labreplay.store.sqlite import Store
from labreplay.suites.configsearch.cli import app
from labreplay.suites.configsearch.options import SampleOptions, SpaceArgs
from labreplay.validate import OptionError

from .conftest import SMALL_SETTINGS

# the small declared setting of these tests (conftest), as CLI flags
SMALL = ["--task", "band_gap", "--n-total", "200", "--n-ood", "60"]
SMALL += ["--r-values", "0,0.5", "--n-values", "4,6", "--s-values", "1,2,3"]
SMALL += ["--min-test-points", "1"]  # n*s <= 18 here: C_min 30 would leave nothing


def _stored(path: Path) -> dict[str, tuple[int, str, dict[str, float | None]]]:
    with Store(path, readonly=True) as store:
        return {
            r.run_id: (
                r.seed,
                r.status,
                # wall-clock overheads (bo_overhead_*_s) are timings, not results
                {k: v for k, v in store.scores(r.run_id).items() if not k.endswith("_s")},
            )
            for r in store.runs()
        }


def test_configsearch_cli_and_api_at_defaults_store_the_same_runs(
    data_dir: Path, cache_dir: Path, tmp_path: Path
) -> None:
    by_cli = tmp_path / "cli.sqlite"
    done = CliRunner().invoke(app, ["run", *SMALL, "--store", str(by_cli), "--json"])
    assert done.exit_code == 0, done.output
    (row,) = json.loads(done.output)
    space = SpaceArgs(r_values="0,0.5", n_values="4,6", s_values="1,2,3").space(
        SampleOptions(n_total=200, n_ood=60), 1
    )
    specs = labreplay.compile(
        "configsearch", data_dir, task="band_gap", settings=SMALL_SETTINGS, space=space,
        min_test_points=1,
    )  # fmt: skip
    by_api = tmp_path / "api.sqlite"
    (result,) = labreplay.run(
        "configsearch", specs, "bo", by_api, data_dir=data_dir, settings=SMALL_SETTINGS,
        space=space, min_test_points=1,
    )  # fmt: skip
    assert result["seed"] == row["seed"] == 42  # the one default search seed
    assert result["run_id"] == row["run_id"]
    assert _stored(by_cli) == _stored(by_api)


def test_a_misspelled_configsearch_run_option_is_refused(data_dir: Path, tmp_path: Path) -> None:
    specs = labreplay.compile("configsearch", data_dir, task="band_gap", settings=SMALL_SETTINGS)
    with pytest.raises(OptionError, match="did you mean 'budget'"):
        labreplay.run("configsearch", specs, "bo", tmp_path / "x.sqlite", budgte=4)
    assert not (tmp_path / "x.sqlite").exists()


def _refusals() -> list[tuple[str, str, str]]:
    """(API name, flag, a value its check refuses) of every option both doors take."""
    from labreplay.option_fields import flags
    from labreplay.sdk.options import LlmOptions
    from labreplay.suites.configsearch.options import ConfigsearchRunOptions

    return [
        (field.name, declared.name, declared.check.refused)
        for cls in (ConfigsearchRunOptions, LlmOptions)
        for field, declared in flags(cls)
        if declared.cli and declared.api and declared.check and declared.check.refused is not None
    ]


@pytest.mark.parametrize(("name", "option", "value"), _refusals(), ids=lambda v: str(v))
def test_every_run_refusal_of_the_cli_is_the_apis(
    name: str, option: str, value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each value a `configsearch run` flag refuses is refused by `labreplay.run` in the same
    line (before any store or data: a placeholder spec is never read)."""
    from labreplay.cli._errors import expected_failure
    from labreplay.cli.main import run as cli
    from labreplay.compile.spec import EnvironmentSpec
    from labreplay.errors import LabreplayError

    store = tmp_path / "s.sqlite"
    code = cli(["configsearch", "run", "--task", "band_gap", "--store", str(store), option, value])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    spec = EnvironmentSpec("configsearch", "automatbench-ood", "1", "band_gap", {})
    with pytest.raises(LabreplayError) as refused:  # the value as the command line parses it
        labreplay.run("configsearch", [spec], "bo", store, **{name: _parsed(value)})
    assert err == f"labreplay: error: {expected_failure(refused.value)[0]}"
    assert not store.exists()


def _parsed(value: str) -> int | float | str:
    for parse in (int, float):
        try:
            return parse(value)
        except ValueError:
            pass
    return value
