"""`campaign run --isolate`: the reference agents in a child process that holds only the
observations give exactly the trajectories they give in-process."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from labreplay.store.sqlite import Store
from labreplay.suites.campaign.api import agent_factory, load_specs
from labreplay.suites.campaign.runner import run_assignment_branches

from .conftest import assert_one_line_error
from .conftest import run_cli_in_process as run_cli  # the isolated agent is the child process


@pytest.fixture(scope="module")
def spec(campaign_specs_source: Path) -> object:
    return load_specs(campaign_specs_source)[0]


@pytest.mark.parametrize("agent", ["random", "bayes", "no-evidence"])
def test_isolated_agent_gives_the_in_process_trajectory(agent: str, spec: object) -> None:
    inline = run_assignment_branches(spec, agent_factory(agent), None, 3)  # type: ignore[arg-type]
    isolated = run_assignment_branches(spec, agent_factory(agent, isolate=True), None, 3)  # type: ignore[arg-type]
    assert inline.keys() == isolated.keys()
    for branch in inline:
        # the same events but the header (seq 1), which says how the agent ran; the chains
        # differ from the header on
        ours, theirs = inline[branch].events, isolated[branch].events
        assert ours[1]["kind"] == theirs[1]["kind"] == "header"
        assert (ours[1]["payload"]["isolation"], theirs[1]["payload"]["isolation"]) == (
            "in-process",
            "subprocess",
        )
        assert [(e["kind"], e["payload"]) for i, e in enumerate(theirs) if i != 1] == [
            (e["kind"], e["payload"]) for i, e in enumerate(ours) if i != 1
        ], branch


def test_cli_isolate_records_the_mode(
    tmp_path: Path, copy_campaign_specs: Callable[[Path], Path]
) -> None:
    specs = copy_campaign_specs(tmp_path / "specs")
    first = json.loads((specs / "index.json").read_text(encoding="utf-8"))["assignments"][0]["id"]
    store = tmp_path / "s.sqlite"
    done = run_cli(
        "campaign",
        "run",
        "--specs",
        str(specs),
        "--store",
        str(store),
        "--only",
        first,
        "--agent",
        "random",
        "--isolate",
    )
    assert done.returncode == 0, done.stderr
    with Store(store, readonly=True) as db:
        modes = {r.provenance["agent_isolation"] for r in db.runs()}
    assert modes == {"subprocess"}
    refused = run_cli(
        "campaign",
        "run",
        "--specs",
        str(specs),
        "--store",
        str(store),
        "--agent",
        "openai:x",
        "--isolate",
    )
    assert_one_line_error(refused)


# --------------------------------------------------------------------------- sealed evaluator
def test_compile_writes_visible_specs_and_a_bound_sealed_evaluator(
    tmp_path: Path, copy_campaign_specs: Callable[[Path], Path]
) -> None:
    from labreplay.compile.spec import load_spec
    from labreplay.errors import SpecError

    # what `campaign compile --out` wrote (once per session), copied: this test damages it
    specs = copy_campaign_specs(tmp_path / "specs")
    index = json.loads((specs / "index.json").read_text(encoding="utf-8"))
    hashes = json.loads((specs / "sealed" / "index.sealed.json").read_text(encoding="utf-8"))
    for entry in index["assignments"]:
        visible = json.loads((specs / entry["file"]).read_text(encoding="utf-8"))
        assert "evaluator" not in visible["body"]  # no recorded outcome in the visible spec
        assert not ({"outcome", "valid"} & _all_keys(visible["body"]))
        spec = load_spec(specs / entry["file"])  # rejoined and verified
        assert (
            spec.spec_hash == hashes["assignments"][entry["id"]]["spec_hash"]
            and "evaluator" in spec.body
        )
        assert "spec_hash" not in entry and "spec_hash" not in visible  # evaluator-side
    first = specs / index["assignments"][0]["file"]
    sealed = specs / visible["sealed"]["file"]
    other = specs / "sealed" / (first.stem + ".sealed.json")
    # A sealed file from another spec, or a missing one, is refused in one line.
    original = other.read_bytes()
    other.write_bytes(sealed.read_bytes())
    with pytest.raises(SpecError, match=r"sha256 differs|differs from that file.s sha256"):
        load_spec(first)
    other.unlink()
    with pytest.raises(SpecError, match=r"sealed evaluator file .* is missing"):
        load_spec(first)
    other.write_bytes(original)
    assert (
        load_spec(first).spec_hash
        == hashes["assignments"][index["assignments"][0]["id"]]["spec_hash"]
    )


def _all_keys(value: object) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _all_keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _all_keys(v)}
    return set()


def test_isolate_after_in_process_records_a_new_isolated_run(
    tmp_path: Path, copy_campaign_specs: Callable[[Path], Path]
) -> None:
    """Defect: running in-process, then `--isolate` on the same store, kept the in-process runs
    (provenance `in-process`), so an untrusted agent's in-process result passed for isolated."""
    specs = copy_campaign_specs(tmp_path / "specs")
    first = json.loads((specs / "index.json").read_text(encoding="utf-8"))["assignments"][0]["id"]
    store = tmp_path / "s.sqlite"
    base = ["campaign", "run", "--specs", str(specs), "--store", str(store), "--only", first]
    # bayes: a ranked agent (no-evidence is a reference row); one random replicate keeps it small
    base += ["--agent", "bayes", "--controls", "random", "--random-replicates", "1"]
    assert run_cli(*base).returncode == 0
    with Store(store, readonly=True) as db:
        in_process = {r.run_id for r in db.runs()}
    done = run_cli(*base, "--isolate")
    assert done.returncode == 0, done.stderr
    with Store(store, readonly=True) as db:
        runs = db.runs()
    isolated = {r.run_id for r in runs if r.provenance["agent_isolation"] == "subprocess"}
    assert len(isolated) == 2 and not isolated & in_process  # new rows, not the old ones
    assert {r.run_id for r in runs} == in_process | isolated
    # The reverse: in-process after isolated finds the in-process rows, not the isolated ones.
    assert run_cli(*base).returncode == 0
    with Store(store, readonly=True) as db:
        assert len(db.runs()) == 4
    board = run_cli("campaign", "leaderboard", "--store", str(store), "--json")
    assert board.returncode == 0, board.stderr
    rows = json.loads(board.stdout)["rows"]
    assert {(r["system"], r["isolation"]) for r in rows} == {
        ("bayes", "in-process"),
        ("bayes#isolated", "subprocess"),
    }
    strict = run_cli(
        "campaign", "leaderboard", "--store", str(store), "--json", "--require-isolated"
    )
    assert strict.returncode == 0, strict.stderr
    strict_board = json.loads(strict.stdout)
    assert [r["system"] for r in strict_board["rows"]] == ["bayes#isolated"]
    assert strict_board["not_isolated"] == ["bayes"]
    text = run_cli("campaign", "leaderboard", "--store", str(store))
    # (the text board's columns are cut to the terminal width; the JSON above has the modes)
    assert text.returncode == 0 and "bayes" in text.stdout, text.stderr
    assert run_cli("store", "verify", "--store", str(store)).returncode == 0
