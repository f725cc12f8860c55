"""Record cards: built-in cards give the same bytes as --record; a lab's table compiles; bad
cards exit 2 with one line naming the card, the field and the value, and write nothing."""

from __future__ import annotations

import csv
import hashlib
from pathlib import Path

import numpy as np
import pytest
from tests.campaign.conftest import refused_card

from labreplay.cli.main import run
from labreplay.suites.campaign.card import builtin_card_path, card_schema, load_card

GOOD = """\
card_version = 1
name = "toy-screen"
grouping = ["ligand"]

[[sources]]
path = "screen.csv"
sha256 = "{sha}"

[table]
file = "screen.csv"

[experiment]
id = "well"
descriptors = ["ligand", "base", "temperature_c"]

[outcome]
rule = "bins"
column = "yield"
bins = [{{ category = "low", below = 10 }}, {{ category = "mid", below = 50 }}, {{ category = "high" }}]

[[evidence]]
kind = "yield_assay"
reveals = "yield"
shows = "the measured yield (%)"
budget = "evidence"
price = 1
"""


def _table(folder: Path, rows: int = 400) -> str:
    rng = np.random.default_rng(7)
    path = folder / "screen.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        out = csv.writer(handle)
        out.writerow(["well", "ligand", "base", "temperature_c", "constant", "yield"])
        for i in range(rows):
            out.writerow([f"W{i:04d}", f"L{i % 12}", f"B{i % 3}", 40 + i % 37, "same",
                          f"{rng.uniform(0, 100):.2f}" if i % 17 else ""])  # fmt: skip
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _card(folder: Path, text: str) -> Path:
    path = folder / "toy-screen.card.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_builtin_cards_validate_and_schema_is_published():
    assert card_schema()["title"].startswith("labreplay record card")
    for name in ("precursor-genome", "alab-pipeline"):
        card = load_card(builtin_card_path(name))
        assert card.name == name and card.rule == name and card.grouping == ("precursors",)


def test_builtin_card_gives_byte_identical_specs(campaign_specs_source, tmp_path):
    # by name: the session's `campaign compile` at its defaults (record precursor-genome)
    by_name, by_card = campaign_specs_source, tmp_path / "by-card"
    card = str(builtin_card_path("precursor-genome"))
    assert run(["campaign", "compile", "--record-card", card, "--out", str(by_card)]) == 0
    files = sorted(p.relative_to(by_name) for p in by_name.rglob("*") if p.is_file())
    assert len(files) == 12 + 12 + 2  # visible + sealed specs, index + sealed index
    assert files == sorted(p.relative_to(by_card) for p in by_card.rglob("*") if p.is_file())
    for f in files:
        assert (by_name / f).read_bytes() == (by_card / f).read_bytes(), f


def test_table_card_compiles_with_declared_scaling(tmp_path, capsys):
    sha = _table(tmp_path)
    card = _card(tmp_path, GOOD.format(sha=sha))
    out = tmp_path / "specs"
    assert run(["campaign", "compile", "--record-card", str(card), "--seeds", "0-1",
                "--out", str(out), "--json"]) == 0  # fmt: skip
    import json

    indexes = json.loads(capsys.readouterr().out)
    for index in indexes:
        long = [a for a in index["assignments"] if a["kind"] == "long"]
        short = [a for a in index["assignments"] if a["kind"] == "short"]
        assert long and short
        assert max(a["candidates"] for a in short) <= min(a["candidates"] for a in long)
        params = index["protocol_params"]
        assert params["evidence_prices"] == {"yield_assay": 1}
        assert params["evidence_budget"] >= 1 and params["review_budget"] == 0
    spec = json.loads(next((out / "seed0").glob("long-1.json")).read_text())
    assert spec["body"]["categories"] == ["low", "mid", "high"]
    assert spec["body"]["record"]["grouping"] == ["ligand"]
    assert all(g.startswith("ligand=") for g in spec["body"]["eval_precursors"])


def test_yaml_card(tmp_path):
    pytest.importorskip("yaml")
    sha = _table(tmp_path)
    text = f"""
card_version: 1
name: toy-screen
grouping: [ligand]
sources: [{{path: screen.csv, sha256: "{sha}"}}]
table: {{file: screen.csv}}
experiment: {{id: well, descriptors: [ligand, base]}}
outcome:
  rule: bins
  column: yield
  bins: [{{category: low, below: 30}}, {{category: high}}]
evidence: [{{kind: yield_assay, reveals: yield, shows: the yield, budget: evidence, price: 1}}]
"""
    path = tmp_path / "toy-screen.card.yaml"
    path.write_text(text, encoding="utf-8")
    assert run(["campaign", "compile", "--record-card", str(path), "--json"]) == 0


BAD = {
    "unknown card field": (
        lambda t: t.replace('name = "toy-screen"', 'name = "toy-screen"\ncolour = "blue"'),
        "colour", "unknown card field",
    ),
    "missing column": (
        lambda t: t.replace('id = "well"', 'id = "plate_well"'), "experiment.id", "plate_well"
    ),
    "missing file": (
        lambda t: t.replace('path = "screen.csv"', 'path = "gone.csv"').replace(
            'file = "screen.csv"', 'file = "gone.csv"'
        ),
        "sources[0].path", "gone.csv",
    ),
    "category with no rows": (
        lambda t: t.replace('below = 50 }}, {{ category = "high" }}', 'below = 50 }}, {{ category = "high", below = 100 }}, {{ category = "over" }}'),
        "outcome.bins[3].category", "over",
    ),
    "empty bin": (
        lambda t: t.replace('category = "low", below = 10', 'category = "low", below = -5'),
        "outcome.bins[0].category", "low",
    ),
    "grouping key with one level": (
        lambda t: t.replace('grouping = ["ligand"]', 'grouping = ["constant"]'),
        "grouping[0]", "constant",
    ),
    "evidence pointing at nothing": (
        lambda t: t.replace('reveals = "yield"', 'reveals = "hplc_trace"'),
        "evidence[0].reveals", "hplc_trace",
    ),
    "wrong sha256": (lambda t: t.replace("{sha}", "0" * 64), "sources[0].sha256", "0000"),
    "claim supported by nothing": (
        lambda t: t + '\n[[claims]]\nname = "yield_ok"\nsupported_by = ["hplc_trace"]\n',
        "claims[0].supported_by", "hplc_trace",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_card_exits_2_with_one_line_and_writes_nothing(case, tmp_path, capsys):
    edit, field, value = BAD[case]
    sha = _table(tmp_path)
    refused_card(_card(tmp_path, edit(GOOD).format(sha=sha)), field, value, capsys)


# A card may not put the outcome in front of the agent: a column it sees before the result
# (the id, a descriptor, a grouping key) is neither an outcome column nor one evidence reveals.
_THERMO = '\n[[evidence]]\nkind = "thermocouple"\nreveals = "temperature_c"\nshows = "t"\nbudget = "evidence"\nprice = 1\n'
SHOWS_OUTCOME = {
    "descriptor is the outcome": (
        lambda t: t.replace('"temperature_c"]', '"temperature_c", "yield"]'),
        "experiment.descriptors[3]", "yield",
    ),
    "grouping by the outcome": (
        lambda t: t.replace('grouping = ["ligand"]', 'grouping = ["yield"]'), "grouping[0]", "yield"
    ),
    "id is the outcome": (lambda t: t.replace('id = "well"', 'id = "yield"'), "experiment.id", "yield"),
    "descriptor an evidence kind reveals": (
        lambda t: t + _THERMO, "experiment.descriptors[2]", "temperature_c"
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(SHOWS_OUTCOME))
def test_card_showing_the_outcome_to_the_agent_isrefused_card(case, tmp_path, capsys):
    edit, field, value = SHOWS_OUTCOME[case]
    card = _card(tmp_path, edit(GOOD).format(sha=_table(tmp_path)))
    assert "in front of the agent" in refused_card(card, field, value, capsys)


def test_columns_rule_valid_column_is_not_a_descriptor(tmp_path, capsys):
    text = GOOD.replace('"temperature_c"]', '"temperature_c", "constant"]').replace(
        'rule = "bins"\ncolumn = "yield"\n'
        'bins = [{{ category = "low", below = 10 }}, {{ category = "mid", below = 50 }}, '
        '{{ category = "high" }}]',
        'rule = "columns"\ncategory_column = "yield"\nvalid_column = "constant"\n'
        'categories = ["a", "b"]',
    )
    card = _card(tmp_path, text.format(sha=_table(tmp_path)))
    err = refused_card(card, "experiment.descriptors[3]", "constant", capsys)
    assert "outcome.valid_column" in err


# Sources stay inside the card's folder: the table lies one folder up (so each path below
# names a real file), and the card is refused before reading it.
@pytest.mark.parametrize("how", ["dotdot", "absolute", "symlink"])
def test_source_outside_the_card_folder_isrefused_card(how, tmp_path, capsys):
    sha = _table(tmp_path)
    folder = tmp_path / "cards"
    folder.mkdir()
    if how == "symlink":
        (folder / "screen.csv").symlink_to(tmp_path / "screen.csv")
        path = "screen.csv"
    else:
        path = "../screen.csv" if how == "dotdot" else str(tmp_path / "screen.csv")
    text = GOOD.format(sha=sha).replace('"screen.csv"', f'"{path}"')
    err = refused_card(_card(folder, text), "sources[0].path", path, capsys)
    assert "card's folder" in err


def test_symlink_inside_the_card_folder_is_accepted(tmp_path):
    (tmp_path / "data").mkdir()
    sha = _table(tmp_path / "data")
    (tmp_path / "screen.csv").symlink_to(tmp_path / "data" / "screen.csv")
    card = _card(tmp_path, GOOD.format(sha=sha))
    assert run(["campaign", "compile", "--record-card", str(card)]) == 0


def _yaml_card(folder: Path, description: str, shows: str = "the yield") -> Path:
    sha = _table(folder)
    path = folder / "toy-screen.card.yaml"
    path.write_text(
        f"""card_version: 1
name: toy-screen
{description}
grouping: [ligand]
sources: [{{path: screen.csv, sha256: "{sha}"}}]
table: {{file: screen.csv}}
experiment: {{id: well, descriptors: [ligand, base]}}
outcome: {{rule: bins, column: yield, bins: [{{category: low, below: 30}}, {{category: high}}]}}
evidence: [{{kind: yield_assay, reveals: yield, shows: {shows}, budget: evidence, price: 1}}]
""",
        encoding="utf-8",
    )
    return path


def test_yaml_alias_isrefused_card(tmp_path, capsys):
    pytest.importorskip("yaml")
    card = _yaml_card(tmp_path, "description: &d the measured yield", shows="*d")
    assert "alias" in refused_card(card, "file", "*d", capsys)


def test_billion_laughs_card_is_refused_at_once(tmp_path):
    """Nine levels of nested aliases in 700 bytes (10^9 strings once expanded): refused from
    the event stream, nothing built. In a child process, so a regression fails by timeout."""
    import subprocess
    import sys

    pytest.importorskip("yaml")
    levels = ['a0: &a0 "lol"']
    levels += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    text = "description:\n" + "\n".join("  " + line for line in levels)
    card = _yaml_card(tmp_path, text)
    proc = subprocess.run(
        [sys.executable, "-m", "labreplay.cli.main", "campaign", "compile", "--record-card",
         str(card), "--out", str(tmp_path / "specs")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-300:]
    assert len(proc.stderr.strip().splitlines()) == 1 and "alias" in proc.stderr
    assert not (tmp_path / "specs").exists()


@pytest.mark.parametrize("case", ["long value", "deep nesting", "big card"])
def test_refusal_shows_a_bounded_value(case, tmp_path, capsys):
    """A huge or deeply nested card is one short line (exit 2), never its whole value."""
    text = GOOD.format(sha=_table(tmp_path))
    if case == "long value":
        text = text.replace('name = "toy-screen"', f'name = "{"x y" * 50_000}"')
    elif case == "deep nesting":
        text = text.replace('grouping = ["ligand"]', f"grouping = {'[' * 50_000}{']' * 50_000}")
    else:
        text += "# " + "pad " * 300_000 + "\n"
    card = _card(tmp_path, text)
    out = tmp_path / "specs"
    assert run(["campaign", "compile", "--record-card", str(card), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and card.name in err and len(err) < 400, err[:400]
    assert not out.exists()


def test_too_small_record_is_refused_with_the_numbers(tmp_path, capsys):
    sha = _table(tmp_path, rows=24)
    card = _card(
        tmp_path, GOOD.format(sha=sha).replace('grouping = ["ligand"]', 'grouping = ["base"]')
    )
    out = tmp_path / "specs"
    assert run(["campaign", "compile", "--record-card", str(card), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "record too small" in err and "panel" in err, err
    assert not out.exists()


def test_compile_prints_qc(tmp_path, capsys):
    card = _card(tmp_path, GOOD.format(sha=_table(tmp_path)))
    assert run(["campaign", "compile", "--record-card", str(card)]) == 0
    text = capsys.readouterr().out
    assert "rows decidable (high" in text and "base-rate score -" in text


EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "cards"


@pytest.mark.parametrize(
    "name", ["buchwald-hartwig-ahneman2018", "edbo-direct-arylation-shields2021"]
)
def test_example_cards_compile_on_the_real_tables(name, compiled_campaign):
    # the session's compile, shared with test_card_learner (the same options)
    _, specs, index = compiled_campaign(record_card=EXAMPLES / f"{name}.card.toml", seed=0)
    qc = index["qc"]
    assert qc["decidable_rows"] == qc["rows"] and len(qc["rows_per_category"]) == 3
    long = [s for s in specs if s.body["assignment"]["kind"] == "long"]
    short = [s for s in specs if s.body["assignment"]["kind"] == "short"]
    assert len(long) >= 2
    assert max(len(s.body["candidates"]) for s in short) <= len(long[0].body["candidates"])
    assert all(s.body["prices"] == {"yield_assay": 1} for s in specs)
    assert all(s.body["budgets"]["evidence"] >= 1 for s in specs)
    assert all(v["base_rate_score"] is not None for v in qc["scores"])


@pytest.mark.parametrize(
    "name", ["buchwald-hartwig-ahneman2018", "edbo-direct-arylation-shields2021"]
)
def test_bayes_and_matched_controls_run_on_example_cards(name, data_dir):
    """Small settings (2 long x 8, 2 short): bayes, random and no-evidence close the same
    experiments, buy the card's assay, and the reference rows score the panel."""
    from labreplay.suites.campaign.agents import REFERENCE_AGENTS
    from labreplay.suites.campaign.api import compile_specs
    from labreplay.suites.campaign.ceiling import context_score
    from labreplay.suites.campaign.runner import run_assignment_branches

    _, specs, _ = compile_specs(
        record_card=EXAMPLES / f"{name}.card.toml", seed=0, data_dir=data_dir,
        long_assignments=2, short_assignments=2, long_candidates=8, experiment_budget=3,
        evidence_budget=3,
    )  # fmt: skip
    assert [s.body["assignment"]["kind"] for s in specs] == ["long", "long", "short", "short"]
    for spec in specs:
        results = run_assignment_branches(spec, REFERENCE_AGENTS["bayes"], None, 0)
        adaptive, rnd, ne = (results[b] for b in ("adaptive", "random", "no-evidence"))
        closed = adaptive.metrics["experiments_closed"]
        assert closed == spec.body["budgets"]["experiments"]
        assert rnd.metrics["experiments_closed"] == ne.metrics["experiments_closed"] == closed
        assert all(r.metrics["invalid_actions"] == 0 for r in results.values())
        # the table's own claim, not the four solid-state ones: stated at every closure and
        # supported exactly when the outcome's assay was bought (bayes buys it: no overclaim)
        assert spec.body["claims"] == [
            {"name": "outcome_category", "supported_by": ["yield_assay"]}
        ]
        assert adaptive.metrics["claim_log_loss"] is not None
        assert adaptive.metrics["overclaim_rate"] == 0.0
        assert adaptive.metrics["held_out_gain"] != 0.0
        assert -5.0 < context_score(spec.body) < 0.0


def test_python_api_takes_record_card(tmp_path):
    import labreplay

    card = _card(tmp_path, GOOD.format(sha=_table(tmp_path)))
    specs = labreplay.compile("campaign", record_card=card, seed=1)
    assert specs and all(s.body["record"]["source"] == "toy-screen" for s in specs)
    declared = specs[0].body["record"]["outcome_from_evidence"]
    assert declared["fields"] == {"category": ["yield_assay"]}
    with pytest.raises(Exception, match="record_cards"):
        labreplay.compile("campaign", record_cards=card)
