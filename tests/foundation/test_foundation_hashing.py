"""Canonical JSON and content hashes: the identity of every spec, trajectory and cache entry."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labreplay._hashing import (
    HASH_SCHEME_VERSION,
    canonical_bytes,
    canonical_json,
    sha256_bytes,
    sha256_file,
    sha256_json,
)

# A fixed object touching every branch of the canonical form. If this hash changes, the hash
# scheme changed: bump HASH_SCHEME_VERSION and re-pin (old stored hashes no longer compare).
GOLDEN_OBJECT: dict[str, Any] = {
    "suite": "campaign",
    "protocol": "sdl1-replay",
    "version": 3,
    "precursors": ["Ag2O", "Al(OH)3"],
    "temperature_c": 200.0,
    "reaction_energy_ev_per_atom": -0.0509,
    "weights": [0.4656, 0.4732, 0.06115],
    "sum": 0.1 + 0.2,
    "zero": -0.0,
    "near_one": 0.9999999999999999,
    "big": 1e300,
    "flags": {"valid": True, "reviewed": False, "note": None},
    "label": "Å-phase, 25 °C, ±5 %, 反応",
}
GOLDEN_JSON = (
    '{"big":1e+300,"flags":{"note":null,"reviewed":false,"valid":true},'
    '"label":"Å-phase, 25 °C, ±5 %, 反応","near_one":1,'
    '"precursors":["Ag2O","Al(OH)3"],"protocol":"sdl1-replay",'
    '"reaction_energy_ev_per_atom":-0.0509,"suite":"campaign","sum":0.3,'
    '"temperature_c":200,"version":3,"weights":[0.4656,0.4732,0.06115],"zero":0}'
)
GOLDEN_SHA256 = "79b6d4c0aea5259d821207412ee02a67a5816c8b2175fe490d3a7e418cad7088"


def test_golden_canonical_form_and_hash_are_pinned() -> None:
    assert HASH_SCHEME_VERSION == "lr-cjson-2"
    assert canonical_json(GOLDEN_OBJECT) == GOLDEN_JSON
    assert sha256_json(GOLDEN_OBJECT) == GOLDEN_SHA256
    assert sha256_bytes(GOLDEN_JSON.encode("utf-8")) == GOLDEN_SHA256


def test_key_order_does_not_matter() -> None:
    forward = {"a": 1, "b": {"x": [1, 2], "y": "z"}, "c": None}
    backward = {"c": None, "b": {"y": "z", "x": [1, 2]}, "a": 1}
    assert canonical_json(forward) == canonical_json(backward)
    assert sha256_json(forward) == sha256_json(backward)
    assert canonical_json(forward) == '{"a":1,"b":{"x":[1,2],"y":"z"},"c":null}'


def test_list_order_does_matter() -> None:
    assert sha256_json([1, 2]) != sha256_json([2, 1])


def test_negative_zero_hashes_like_zero() -> None:
    assert canonical_json(-0.0) == canonical_json(0.0) == canonical_json(0) == "0"
    assert sha256_json({"x": [-0.0]}) == sha256_json({"x": [0.0]})


def test_float_noise_is_hidden() -> None:
    assert canonical_json(0.1 + 0.2) == canonical_json(0.3) == "0.3"
    # summation order changes the last bits, not the canonical form
    assert canonical_json(sum([0.1] * 10)) == canonical_json(1.0) == "1"
    assert canonical_json(1 - 1e-16) == "1"
    assert canonical_json(2.5) == "2.5"
    assert canonical_json(1e-7) == "1e-07"


def test_integral_floats_print_as_integers() -> None:
    assert canonical_json(200.0) == canonical_json(200) == "200"
    assert canonical_json([1.0, 2.0]) == "[1,2]"


def test_numpy_scalars_match_python_values() -> None:
    assert canonical_json(np.float64(0.1) + np.float64(0.2)) == canonical_json(0.3)
    assert canonical_json(np.int64(7)) == "7"
    assert canonical_json(np.bool_(True)) == "true"
    assert canonical_json(np.float64(-0.0)) == "0"
    assert canonical_json({"k": np.int32(3)}) == '{"k":3}'
    assert canonical_json(np.str_("Al2O3")) == '"Al2O3"'
    # float32 keeps its own (different) value; 12 digits show it honestly
    assert canonical_json(np.float32(0.5)) == "0.5"


def test_numpy_arrays_match_nested_lists() -> None:
    matrix = np.array([[0.1, -0.0], [2.0, 0.30000000000000004]])
    assert canonical_json(matrix) == canonical_json([[0.1, 0.0], [2, 0.3]]) == "[[0.1,0],[2,0.3]]"
    assert canonical_json(np.arange(4)) == "[0,1,2,3]"
    assert canonical_json(np.array(3.5)) == "3.5"  # 0-d array
    assert canonical_json(np.array([], dtype=float)) == "[]"
    assert canonical_json({"rows": np.array([True, False])}) == '{"rows":[true,false]}'


def test_tuples_hash_like_lists() -> None:
    assert sha256_json((1, "a", (2.0,))) == sha256_json([1, "a", [2]])


def test_non_ascii_text_is_kept_as_utf8() -> None:
    text = "Pd(OAc)₂ in 1,4-dioxane at 80 °C — ee 92 %"
    out = canonical_json({"solvent": text})
    assert text in out  # not \\u-escaped
    assert canonical_bytes({"solvent": text}) == out.encode("utf-8")
    assert sha256_json({"solvent": text}) == sha256_bytes(out.encode("utf-8"))
    # NFC and NFD spellings are different strings: the hash does not normalise them
    assert sha256_json("é") != sha256_json("e\u0301")


@pytest.mark.parametrize(
    "bad",
    [
        float("nan"),
        float("inf"),
        -float("inf"),
        np.float64("nan"),
        {"a": [1.0, float("nan")]},
        np.array([1.0, np.nan]),
    ],
)
def test_non_finite_numbers_are_rejected(bad: Any) -> None:
    with pytest.raises(ValueError, match="non-finite"):
        canonical_json(bad)


def test_error_names_the_path_of_the_bad_value() -> None:
    with pytest.raises(ValueError, match=r"\.scores\[2\]"):
        canonical_json({"scores": [0.1, 0.2, float("nan")]})
    with pytest.raises(ValueError, match="non-string key"):
        canonical_json({1: "x"})
    with pytest.raises(ValueError, match="unsupported type set"):
        canonical_json({"s": {1, 2}})
    with pytest.raises(ValueError, match="unsupported type bytes"):
        canonical_json(b"raw")


def test_sha256_file_matches_a_manifest_entry(data_dir: Any) -> None:
    from labreplay.records.manifest import get_source

    entry = get_source("reactions-summit").files[0]
    assert sha256_file(data_dir / entry.path) == entry.sha256
    assert sha256_file(data_dir / entry.path, chunk_size=7) == entry.sha256


json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_canonical_json_is_a_fixed_point_of_json_round_trips(value: Any) -> None:
    once = canonical_json(value)
    again = canonical_json(json.loads(once))
    assert again == once
    assert canonical_json(json.loads(again)) == once


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.text(max_size=6), json_scalars, min_size=2, max_size=8))
def test_hash_ignores_insertion_order(value: dict[str, Any]) -> None:
    reversed_order = dict(reversed(list(value.items())))
    assert sha256_json(reversed_order) == sha256_json(value)


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_a_float_and_its_canonical_print_hash_alike(number: float) -> None:
    assert sha256_json(json.loads(canonical_json(number))) == sha256_json(number)
