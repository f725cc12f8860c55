"""Card fields for tables as labs publish them: an id from the row number or several columns,
row filters, undecidable and censored outcome cells, replicates, quantile bins, readable QC.
Each table is written here (public-shaped, generated); a bad value exits 2 with one line
naming the card, the field and the value, and writes nothing (`refused_card`)."""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from tests.campaign.conftest import plate_card, refused_card

from labreplay.cli.main import run
from labreplay.suites.campaign.api import compile_specs

CARD = plate_card(
    "toy-plate",
    """\
[experiment]
id = {id}
descriptors = ["ligand", "base", "solvent"]

[outcome]
rule = "bins"
column = "yield"
bins = {bins}
{outcome}
[[evidence]]
kind = "yield_assay"
reveals = "yield"
shows = "the measured yield (%)"
budget = "evidence"
price = 1
""",
)
BINS = '[{ category = "low", below = 20 }, { category = "high" }]'


def plate(folder: Path, rows: int = 480, cell=None, index: bool = True, ligand=None) -> str:
    """A plate as pandas writes it: an unnamed index column first (`index`), no id column;
    `cell(i, value)` may replace row i's yield text. Returns the file's sha256."""
    rng = np.random.default_rng(3)
    path = folder / "plate.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        out = csv.writer(handle)
        out.writerow(
            [""] * index + ["plate_row", "plate_col", "ligand", "base", "solvent", "yield"]
        )
        for i in range(rows):
            value = f"{rng.uniform(0, 100):.1f}"
            text = cell(i, value) if cell is not None else value
            well = [chr(65 + i // 24), i % 24 + 1]
            name = ligand(i) if ligand is not None else f"L{i % 12}"
            out.writerow([i] * index + [*well, name, f"B{i % 5}", f"S{i % 2}", text])
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_card(folder: Path, sha: str, *, id: str = "{ row_number = true }", table: str = "",
               bins: str = BINS, outcome: str = "") -> Path:  # fmt: skip
    path = folder / "toy-plate.card.toml"
    text = CARD.format(sha=sha, id=id, table=table, bins=bins, outcome=outcome)
    path.write_text(text, encoding="utf-8")
    return path


def compiled(card: Path, seed: int = 0, **overrides: object):
    return compile_specs(record_card=card, seed=seed, **overrides)


# (a) the experiment id


def test_row_number_id_compiles_a_table_with_an_unnamed_index_column(tmp_path):
    sha = plate(tmp_path)
    card = write_card(tmp_path, sha)
    _, specs, index = compiled(card)
    assert hashlib.sha256((tmp_path / "plate.csv").read_bytes()).hexdigest() == sha
    ids = {c["experiment_id"] for s in specs for c in s.body["candidates"]}
    assert ids and all(i.startswith("row-") and 1 <= int(i[4:]) <= 480 for i in ids)
    assert index["qc"]["rows"] == 480


def test_composite_id_joins_its_columns(tmp_path):
    card = write_card(tmp_path, plate(tmp_path, index=False), id='{ columns = ["plate_row", "plate_col"] }')  # fmt: skip
    _, specs, _ = compiled(card)
    ids = {c["experiment_id"] for s in specs for c in s.body["candidates"]}
    assert ids and all(len(i.split(" | ")) == 2 for i in ids)


def test_composite_id_that_is_not_unique_isrefused_card(tmp_path, capsys):
    card = write_card(tmp_path, plate(tmp_path), id='{ columns = ["ligand", "base", "solvent"] }')  # fmt: skip
    err = refused_card(card, "experiment.id.columns", "ligand", capsys)
    assert "not unique" in err


@pytest.mark.parametrize(
    "id, field, value",
    [
        ("{ row_number = false }", "experiment.id.row_number", "False"),
        ('{ row_number = true, columns = ["a", "b"] }', "experiment.id", "row_number"),
        ('{ columns = ["plate_row"] }', "experiment.id.columns", "plate_row"),
        ('{ columns = ["plate_row", "well"] }', "experiment.id.columns[1]", "well"),
        ('{ columns = ["plate_row", "yield"] }', "experiment.id.columns[1]", "yield"),
    ],
)
def test_bad_id_isrefused_card(id, field, value, tmp_path, capsys):
    refused_card(write_card(tmp_path, plate(tmp_path), id=id), field, value, capsys)


# (b) row filters


def test_filter_keeps_the_named_rows_with_their_file_row_numbers(tmp_path):
    card = write_card(tmp_path, plate(tmp_path), table='filter = { solvent = "S1", base = ["B0", "B2"] }')  # fmt: skip
    _, specs, index = compiled(card)
    assert index["qc"]["rows"] == 480 // 2 * 2 // 5  # S1 and B0/B2: 96 rows
    seen = [c for s in specs for c in s.body["candidates"]] + specs[0].body["context_rows"]
    assert {c["descriptors"]["solvent"] for c in seen} == {"S1"}
    assert {c["descriptors"]["base"] for c in seen} == {"B0", "B2"}
    assert all(int(c["experiment_id"][4:]) % 2 == 0 for c in seen)  # row i+1 holds S{i % 2}


def test_numeric_filter_matches_the_cells_number(tmp_path):
    card = write_card(tmp_path, plate(tmp_path, index=False), table="filter = { plate_col = [1.0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12] }")  # fmt: skip
    assert compiled(card)[2]["qc"]["rows"] == 240


@pytest.mark.parametrize(
    "table, field, value",
    [
        ('filter = { solvent = "DMSO" }', "table.filter", "DMSO"),
        ("filter = { solvent = [] }", "table.filter.solvent", "[]"),
        ("filter = { temperature = 60 }", "table.filter.temperature", "temperature"),
        ('filter = { yield = "n.d." }', "table.filter.yield", "yield"),
        ("filter = { solvent = true }", "table.filter.solvent", "True"),
    ],
)
def test_bad_filter_isrefused_card(table, field, value, tmp_path, capsys):
    refused_card(write_card(tmp_path, plate(tmp_path), table=table), field, value, capsys)


# (c) undecidable and censored outcome cells

CELLS = {0: "n.d.", 1: ">99", 2: "<1", 3: "NaN", 4: "inf", 5: "", 6: ">10", 7: "\u22645"}


def _odd_cells(i: int, value: str) -> str:
    return CELLS.get(i % 40, value)


def test_undecidable_cells_are_counted_by_reason(tmp_path, capsys):
    card = write_card(tmp_path, plate(tmp_path, cell=_odd_cells))
    qc = compiled(card)[2]["qc"]
    assert qc["undecidable"] == {
        "censored value (the card does not read bounds)": 48,
        "not finite (NaN, inf)": 24,
        "not a number": 12,
        "empty cell": 12,
    }
    assert qc["decidable_rows"] == 480 - 96
    assert run(["campaign", "compile", "--record-card", str(card)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "undecidable rows" in x)
    assert "not a number 12" in line and "empty cell 12" in line


def test_censored_values_read_as_bounds_when_declared(tmp_path):
    from labreplay.sdk.data import resolve_data_dir
    from labreplay.suites.campaign.card import load_card
    from labreplay.suites.campaign.table_record import load_table_records

    card = write_card(tmp_path, plate(tmp_path, cell=_odd_cells), outcome='censored = "bounds"')
    records = load_table_records(load_card(card), resolve_data_dir(None))
    by_row = {int(r.record_id[4:]) - 1: r.outcome for r in records}
    assert by_row[1] == {"valid": True, "category": "high"}  # >99: [99, inf) in [20, inf)
    assert by_row[2] == {"valid": True, "category": "low"}  # <1: (-inf, 1) in (-inf, 20)
    assert by_row[7] == {"valid": True, "category": "low"}  # <=5
    assert by_row[6]["category"].reason == "censored bound spans bins"  # >10: low or high
    qc = compiled(card)[2]["qc"]
    assert qc["undecidable"]["censored bound spans bins"] == 12
    assert qc["decidable_rows"] == 480 - 60


@pytest.mark.parametrize(
    "text, expected",
    [(">=20", "high"), (">20", "high"), (">19.5", None), ("<20", "low"), ("<=20", None),
     ("\u2265 20", "high"), ("< 1e1", "low")],
)  # fmt: skip
def test_a_bound_is_in_a_bin_when_its_whole_interval_is(text, expected, tmp_path):
    from labreplay.suites.campaign.card import load_card
    from labreplay.suites.campaign.table_record import _binned

    card = load_card(write_card(tmp_path, "0" * 64, outcome='censored = "bounds"'))
    outcome = _binned(card, text, card.bins)
    assert outcome["category"] == expected if expected else outcome["valid"] is not True


def test_censored_on_a_columns_rule_isrefused_card(tmp_path, capsys):
    text = CARD.replace('column = "yield"\nbins = {bins}', 'category_column = "solvent"\ncategories = ["s0", "s1"]').replace('rule = "bins"', 'rule = "columns"')  # fmt: skip
    card = tmp_path / "toy-plate.card.toml"
    card.write_text(text.format(sha=plate(tmp_path), id="{ row_number = true }", table="", outcome='censored = "bounds"'), encoding="utf-8")  # fmt: skip
    refused_card(card, "outcome.censored", "bounds", capsys)


# (d) replicates: rows with the same descriptor values stay in one role


@pytest.mark.parametrize("seed", [0, 1])
def test_replicates_are_never_split_between_roles(seed, tmp_path, capsys):
    card = write_card(tmp_path, plate(tmp_path))  # 60 descriptor combinations x 8 rows each
    part, specs, index = compiled(card, seed=seed)
    assert index["qc"]["replicates"] == {"rows": 480, "groups": 60}
    key = {}
    for s in specs:
        for c in (*s.body["candidates"], *s.body["queries"], *s.body["context_rows"]):
            key[c["experiment_id"]] = json.dumps(c["descriptors"], sort_keys=True)
    groups: dict[str, set[str]] = {}
    for i, k in key.items():
        groups.setdefault(k, set()).add(i)
    context = set(part.context)
    blocks = [set(a.candidates) for a in part.assignments]
    for members in groups.values():
        assert members <= context or not members & context
        for block in blocks:
            assert members <= block or not members & block, members
    assert any(len(m & b) > 1 for m in groups.values() for b in blocks)
    assert run(["campaign", "compile", "--record-card", str(card), "--seed", str(seed)]) == 0
    assert "QC replicates: 480 rows in 60 groups" in capsys.readouterr().out


def test_first_fit_packing_keeps_singletons_in_order():
    from labreplay.suites.campaign.protocol import _pack

    blocks, rest = _pack([["a"], ["b", "c"], ["d"], ["e"], ["f", "g", "h"]], [2, 3])
    assert blocks == [("a", "d"), ("b", "c", "e")] and rest == [["f", "g", "h"]]
    assert _pack([[x] for x in "edcba"], [2, 2]) == ([("d", "e"), ("b", "c")], [["a"]])


# (e) quantile bins, cut on the context rows


def test_quantile_bins_are_cut_on_the_context_rows(tmp_path, capsys):
    card = write_card(tmp_path, plate(tmp_path, index=False), id='{ columns = ["plate_row", "plate_col"] }', bins="{ quantiles = 3 }")  # fmt: skip
    part, specs, index = compiled(card)
    with (tmp_path / "plate.csv").open(encoding="utf-8") as handle:
        yields = {f"{r['plate_row']} | {r['plate_col']}": float(r["yield"]) for r in csv.DictReader(handle)}  # fmt: skip
    context = [yields[i] for i in part.context]
    assert len(context) < 480
    assert index["qc"]["bins"]["below"] == pytest.approx(list(np.quantile(context, [1 / 3, 2 / 3])))  # fmt: skip
    balance = index["qc"]["bins"]["context_rows"]
    assert list(balance) == ["q1", "q2", "q3"] and max(balance.values()) - min(balance.values()) <= 1  # fmt: skip
    cut = index["qc"]["bins"]["below"][0]
    meanings = specs[0].body["record"]["table"]["categories"]
    assert meanings["q1"] == f"yield < {cut:g}"
    for s in specs:  # every held-out row binned by the context's cuts
        for i, e in s.body["evaluator"].items():
            assert (e["outcome"]["category"] == "q1") == (yields[i] < cut)
    assert run(["campaign", "compile", "--record-card", str(card)]) == 0
    assert "QC quantile bins cut at" in capsys.readouterr().out


def test_quantile_bins_with_declared_names(tmp_path):
    card = write_card(tmp_path, plate(tmp_path), bins="{ quantiles = 2 }", outcome='categories = ["low_yield", "high_yield"]')  # fmt: skip
    assert compiled(card)[1][0].body["categories"] == ["low_yield", "high_yield"]


@pytest.mark.parametrize(
    "bins, outcome, field, value",
    [
        ("{ quantiles = 3 }", "", "outcome.bins", "quantiles"),  # 70 % of the yields are 0
        ("{ quantiles = 3 }", 'categories = ["lo", "hi"]', "outcome.categories", "lo"),
        ("{ quantiles = 1 }", "", "outcome.bins.quantiles", "1"),
        ("{ quantile = 3 }", "", "outcome.bins.quantiles", ""),  # required field is missing
    ],
)
def test_bad_quantile_bins_arerefused_card(bins, outcome, field, value, tmp_path, capsys):
    sha = plate(tmp_path, cell=lambda i, v: "0" if i % 10 < 7 else v)
    err = refused_card(write_card(tmp_path, sha, bins=bins, outcome=outcome), field, value, capsys)
    assert "empty on the" in err or field != "outcome.bins"


def test_a_replicate_group_larger_than_a_block_gives_one_block_and_the_rest_is_withheld(tmp_path):
    card = write_card(tmp_path, plate(tmp_path))  # groups of 8 rows, blocks of 5
    part, specs, _ = compiled(card, long_candidates=5, experiment_budget=2)
    blocks = [set(a.candidates) for a in part.assignments]
    assert blocks and all(blocks)
    key = {}
    for s in specs:
        for c in (*s.body["candidates"], *s.body["queries"]):
            key[c["experiment_id"]] = json.dumps(c["descriptors"], sort_keys=True)
    for block in blocks:
        assert len({key[i] for i in block}) == 1  # one group's 5 rows
    assert len({key[i] for b in blocks for i in b}) == len(blocks)  # its other 3 in no block


# (f) readable QC lines

BRETTPHOS = "CCCCC1=CC(=C(C(=C1)C(C)C)C2=C(C=CC(=C2P(C3CCCCC3)C4CCCCC4)OC)OC)C(C)C"


def test_long_group_names_are_elided_in_the_printed_lines(tmp_path, capsys, natural_width):
    from labreplay.suites.campaign.cli import QC_NAME_WIDTH, elided

    plate(tmp_path)
    path = tmp_path / "plate.csv"
    text = path.read_text(encoding="utf-8")
    for k in range(12):  # L0..L11 become long SMILES-like names
        text = text.replace(f",L{k},", f",{BRETTPHOS}.{k},")
    path.write_text(text, encoding="utf-8")
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    card = write_card(tmp_path, sha)
    assert run(["campaign", "compile", "--record-card", str(card)]) == 0
    out = capsys.readouterr().out
    assert BRETTPHOS not in out
    head = next(x for x in out.splitlines() if "evaluation precursors" in x)
    names = head.split("evaluation precursors ")[1].split(", ")
    assert all(len(n) == QC_NAME_WIDTH and "..." in n for n in names), names
    assert elided("short") == "short" and len(elided("x" * 500)) == QC_NAME_WIDTH


# (g) declared scaling rules

PRICED = """
[[evidence]]
kind = "plate_map"
reveals = "plate_row"
shows = "the plate row"
budget = "evidence"
price = 2

[[evidence]]
kind = "well_map"
reveals = "plate_col"
shows = "the plate column"
budget = "evidence"
price = 4
"""


def test_evidence_share_binds_with_mixed_prices(tmp_path):
    card = write_card(tmp_path, plate(tmp_path))
    card.write_text(card.read_text(encoding="utf-8") + PRICED, encoding="utf-8")
    default = compiled(card)[2]["protocol_params"]
    every = default["experiment_budget"] * (1 + 2 + 4)  # every kind on every experiment
    assert default["evidence_budget"] > every  # the default rule never binds
    card.write_text(card.read_text(encoding="utf-8") + "\n[scaling]\nevidence_share = 0.5\n", encoding="utf-8")  # fmt: skip
    params = compiled(card)[2]["protocol_params"]
    assert params["evidence_budget"] == round(every / 2) and 4 <= params["evidence_budget"] < every  # fmt: skip


def _skewed(i: int) -> str:  # 48 ligands from 69 rows down to 5
    return f"L{int((i / 480) ** 2 * 48)}"


def test_panel_share_keeps_the_panel_size_stable_across_seeds(tmp_path):
    card = write_card(tmp_path, plate(tmp_path, ligand=_skewed))
    default = [len(compiled(card, seed)[0].panel) for seed in range(5)]
    card.write_text(card.read_text(encoding="utf-8") + "\n[scaling]\npanel_share = 0.25\n", encoding="utf-8")  # fmt: skip
    shared = [len(compiled(card, seed)[0].panel) for seed in range(5)]
    assert all(abs(s - 120) < 40 for s in shared), shared
    assert max(shared) - min(shared) < max(default) - min(default), (shared, default)


@pytest.mark.parametrize(
    "scaling, field, value",
    [
        ("evidence_share = 0", "scaling.evidence_share", "0"),
        ("panel_share = 1.5", "scaling.panel_share", "1.5"),
        ("panel_size = 100", "scaling.panel_size", "100"),
        ("panel_share = 0.2\n[protocol]\neval_precursors = 3", "scaling.panel_share", "0.2"),
    ],
)
def test_bad_scaling_isrefused_card(scaling, field, value, tmp_path, capsys):
    card = write_card(tmp_path, plate(tmp_path))
    card.write_text(card.read_text(encoding="utf-8") + f"\n[scaling]\n{scaling}\n", encoding="utf-8")  # fmt: skip
    refused_card(card, field, value, capsys)


# (g) a size limit: every spec of a seed holds the context rows


def test_a_table_over_max_rows_isrefused_card_naming_the_limit_and_how_to_raise_it(
    tmp_path, capsys
):
    card = write_card(tmp_path, plate(tmp_path), table="max_rows = 479")
    err = refused_card(card, "table.max_rows", "479", capsys)
    assert "480 rows" in err and "table.max_rows = 480" in err
    raised = write_card(tmp_path, plate(tmp_path), table="max_rows = 480")
    assert compiled(raised)[2]["qc"]["rows"] == 480


def test_a_filtered_table_is_held_to_the_limit_by_the_rows_it_keeps(tmp_path):
    card = write_card(tmp_path, plate(tmp_path), table='max_rows = 240\nfilter = { solvent = "S1" }')  # fmt: skip
    assert compiled(card)[2]["qc"]["rows"] == 240


def test_replicate_keys_find_rows_whose_numbers_differ_only_in_form():
    """The rough first pass must never split rows that canonical JSON calls equal."""
    from labreplay.sdk import Record
    from labreplay.suites.campaign.table_record import replicate_keys

    def row(i: int, t: object, c: object) -> Record:
        return Record(record_id=f"r{i}", source="t", descriptors={"t": t, "c": c, "groups": ["L=1"]},
                      outcome={}, evidence={}, provenance={})  # fmt: skip

    records = [row(0, 60, 0.0), row(1, 60.0, -0.0), row(2, 60.0000000000001, 0), row(3, 61, 0),
               row(4, "60", 0)]  # fmt: skip
    keys = replicate_keys(records)
    assert set(keys) == {"r0", "r1", "r2"} and len(set(keys.values())) == 1
