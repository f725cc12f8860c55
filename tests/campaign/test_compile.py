"""The sdl1 partition on the real Precursor Genome: exact protocol numbers, frozen bytes."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from tests.reliability.conftest import run_cli_in_process

from labreplay.compile.spec import load_spec
from labreplay.suites.campaign.api import compile_specs


def test_sdl1_protocol_numbers(pg_compiled):
    part, specs, index = pg_compiled
    assert len(part.eval_precursors) == 6
    assert index["panel_size"] == 255
    assert index["context_size"] == 780
    long = [s for s in specs if s.body["assignment"]["kind"] == "long"]
    short = [s for s in specs if s.body["assignment"]["kind"] == "short"]
    assert len(long) == 6 and len(short) == 6
    assert all(len(s.body["candidates"]) == 32 for s in long)
    assert index["long_experiments"] == 192 and index["short_experiments"] == 63
    cand = Counter(c["experiment_id"] for s in long for c in s.body["candidates"])
    query = Counter(q["experiment_id"] for s in long for q in s.body["queries"])
    assert len(cand) == 192 and set(cand.values()) == {1}
    assert set(query) == set(cand) and set(query.values()) == {1}
    for s in long:  # a query of an assignment is never one of its own candidates
        own = {c["experiment_id"] for c in s.body["candidates"]}
        assert own.isdisjoint(q["experiment_id"] for q in s.body["queries"])
        assert s.body["budgets"] == {"experiments": 12, "evidence": 36, "reviews": 3}
    short_cand = Counter(c["experiment_id"] for s in short for c in s.body["candidates"])
    assert len(short_cand) == 63 and set(short_cand.values()) == {1}
    assert set(short_cand).isdisjoint(cand)
    # Every panel experiment contains an evaluation precursor; no context one does.
    eval_set = set(part.eval_precursors)
    for s in specs:
        for c in s.body["candidates"]:
            assert eval_set.intersection(c["descriptors"]["precursors"])


def test_agent_view_has_no_outcomes(pg_specs):
    for s in pg_specs:
        for entry in (*s.body["candidates"], *s.body["queries"]):
            assert set(entry) == {"experiment_id", "descriptors"}
            assert "outcome" not in json.dumps(entry["descriptors"])


def test_compile_is_byte_identical_and_seed_dependent(pg_records, pg_compiled):
    _, a, ia = pg_compiled  # the session's compile, made in another call (often another process)
    _, b, ib = compile_specs(records=pg_records, seed=0)
    assert [s.to_file_text() for s in a] == [s.to_file_text() for s in b]
    assert ia == ib
    _, c, _ = compile_specs(records=pg_records, seed=1)
    assert [s.spec_hash for s in a] != [s.spec_hash for s in c]


def test_cli_compile_twice_gives_identical_files(campaign_specs_source: Path, tmp_path: Path):
    """The session's `campaign compile` at its defaults (another process) and this one, with
    every default spelled out, write the same bytes."""
    out = tmp_path / "one"
    proc = run_cli_in_process(
        "campaign", "compile", "--record", "precursor-genome", "--protocol", "sdl1",
        "--seed", "0", "--out", str(out), "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["panel_size"] == 255
    outs = [
        {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
        for root in (out, campaign_specs_source)
    ]
    assert outs[0] == outs[1]
    # 12 agent-visible specs + 12 sealed evaluators + index.json + its sealed hashes
    assert len(outs[0]) == 26
    spec = load_spec(tmp_path / "one" / "long-1.json")
    assert spec.body["assignment"]["id"] == "long-1"
