"""Campaign spec bodies are checked against a declared schema on load: a spec that is
self-consistent (its hash matches its bytes) but absurd is one line naming the field, exit 2,
and no run row (each case below ran `complete`, hung, or raised a traceback before)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from labreplay.compile.spec import EnvironmentSpec, write_spec
from labreplay.store.sqlite import Store
from labreplay.suites.campaign.api import load_specs

from .conftest import assert_one_line_error, copy_of
from .conftest import run_cli_in_process as run_cli


@pytest.fixture(scope="module")
def specs_dir(
    tmp_path_factory: pytest.TempPathFactory, copy_campaign_specs: Callable[[Path], Path]
) -> Path:
    return copy_campaign_specs(tmp_path_factory.mktemp("schema") / "specs")


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(body: dict[str, Any]) -> None:
        *parents, leaf = path.split(".")
        node = body
        for p in parents:
            node = node[p]
        node[leaf] = value

    return edit


def _drop_evaluator_record(body: dict[str, Any]) -> None:
    del body["evaluator"][body["candidates"][0]["experiment_id"]]


CASES: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "huge-budget": (_set("budgets.experiments", 10**12), "budgets.experiments"),
    "string-budget": (_set("budgets.experiments", "12"), "budgets.experiments"),
    "negative-budget": (_set("budgets.evidence", -1), "budgets.evidence"),
    "eps-zero": (_set("eps", 0), "eps"),
    "eps-negative": (_set("eps", -1), "eps"),
    "negative-price": (_set("prices.xrd_scan", -2), "prices.xrd_scan"),
    "no-candidates": (_set("candidates", []), "candidates"),
    "no-queries": (_set("queries", []), "queries"),
    "candidate-without-record": (_drop_evaluator_record, "candidates[0]"),
}


def _rewrite_first(specs: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    """Edit the first spec's (joined) body and write it back self-consistent: inline evaluator,
    new hash, index updated, its sealed file removed."""
    spec = load_specs(specs)[0]
    body = copy.deepcopy(spec.body)
    edit(body)
    new = EnvironmentSpec(spec.suite, spec.protocol, spec.version, spec.spec_id, body)
    index_path = specs / "index.json"
    index = json.loads(index_path.read_text(encoding="utf-8"))
    entry = index["assignments"][0]
    write_spec(new, specs / entry["file"])
    (specs / "sealed" / f"{body['assignment']['id']}.sealed.json").unlink(missing_ok=True)
    entry["spec_hash"] = new.spec_hash
    index_path.write_text(json.dumps(index), encoding="utf-8")


@pytest.mark.parametrize(("edit", "field"), [CASES[c] for c in sorted(CASES)], ids=sorted(CASES))
def test_absurd_self_consistent_spec_is_refused_on_load(
    edit: Callable[[dict[str, Any]], None], field: str, specs_dir: Path, tmp_path: Path
) -> None:
    specs = copy_of(specs_dir, tmp_path / "specs")
    _rewrite_first(specs, edit)
    store = tmp_path / "s.sqlite"
    proc = run_cli(
        "campaign", "run", "--specs", str(specs), "--store", str(store),
        "--agent", "random", "--controls", "random",
    )  # fmt: skip
    line = assert_one_line_error(proc)
    assert repr(field) in line, line
    assert not store.exists() or Store(store, readonly=True).runs() == []


def test_index_without_assignments_is_refused(specs_dir: Path, tmp_path: Path) -> None:
    """Defect: an index.json with no assignments exited 0 (nothing run, nothing said)."""
    specs = copy_of(specs_dir, tmp_path / "specs")
    (specs / "index.json").write_text('{"assignments": []}', encoding="utf-8")
    line = assert_one_line_error(
        run_cli("campaign", "run", "--specs", str(specs), "--store", str(tmp_path / "s.sqlite"))
    )
    assert "assignments" in line and "empty" in line
    assert not (tmp_path / "s.sqlite").exists()
