"""Fixtures of the harness tests: real campaign specs on disk (and canaried copies), and the
environment a served subprocess needs to import this checkout."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from labreplay.compile.spec import EnvironmentSpec


def write_spec_dir(out: Path, specs: list[EnvironmentSpec]) -> Path:
    from labreplay.suites.campaign.compiler import write_specs

    index = {
        "assignments": [
            {
                "id": s.body["assignment"]["id"],
                "file": f"{s.body['assignment']['id']}.json",
                "spec_hash": s.spec_hash,
            }
            for s in specs
        ]
    }
    write_specs(out, index, specs)
    return out


@pytest.fixture(scope="session")
def data_dir() -> Path:
    value = os.environ.get("LABREPLAY_DATA_DIR")
    if not value:
        pytest.fail("LABREPLAY_DATA_DIR must point at the shared real data")
    return Path(value)


@pytest.fixture(scope="session")
def campaign_specs(compiled_campaign: Callable[..., Any]) -> list[EnvironmentSpec]:
    _, specs, _ = compiled_campaign(record="precursor-genome", seed=0)
    return [s for s in specs if s.body["assignment"]["id"] in ("short-1", "short-2")]


@pytest.fixture(scope="session")
def spec_dir(campaign_specs: list[EnvironmentSpec], tmp_path_factory: Any) -> Path:
    return write_spec_dir(tmp_path_factory.mktemp("specs"), campaign_specs)


@pytest.fixture(scope="session")
def canaried(
    campaign_specs: list[EnvironmentSpec], tmp_path_factory: Any
) -> tuple[Path, dict[str, str]]:
    """short-1 with a canary in every evaluator-private field, on disk."""
    from labreplay.suites.campaign.canaries import plant_canaries

    planted, by_item = plant_canaries(campaign_specs[0])
    return write_spec_dir(tmp_path_factory.mktemp("canary-specs"), [planted]), by_item


@pytest.fixture(scope="session")
def question_file(data_dir: Path, tmp_path_factory: Any) -> Path:
    """A slice of the edbo_mitsunobu questions, compiled from the real table, with a canary
    planted in each question's evaluator-side metadata."""
    from labreplay.suites.conditions.compiler import compile_datasets
    from labreplay.suites.conditions.questions import load_questions, write_questions
    from labreplay.suites.conditions.report import write_compiled

    root = tmp_path_factory.mktemp("conditions")
    write_compiled(compile_datasets(["edbo_mitsunobu"], data_dir, seed=0), root / "all.jsonl")
    path = root / "mitsunobu60.jsonl"
    questions = load_questions(root / "all.jsonl")[:60]
    for q in questions:  # a canary in the evaluator-side metadata of every question
        q["meta"]["canary"] = f"CANARY-META-{q['id']}"
    write_questions(path, questions)
    assert all(q["meta"]["canary"].startswith("CANARY-") for q in load_questions(path))
    return path


@pytest.fixture(scope="session")
def served_env() -> dict[str, str]:
    """The environment of a served subprocess: this checkout's sources first."""
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([src, *filter(None, [env.get("PYTHONPATH")])])
    return env
