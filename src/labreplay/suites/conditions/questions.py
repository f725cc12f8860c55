"""Question files in the RxnOptBench release layout: read, validate, write, and the agent view.

One JSON object per line: ``id``, ``question_type``, ``varying_keys``, ``input{reactants,
products, constant_conditions}``, ``options[{key: [{content, SMILES}]}]``, ``answer`` (option
indices, ties allowed) and ``meta`` (scores aligned with options). Our compiler adds
``input.fixed_conditions`` (MC_single context), ``input.reference_conditions`` (precedent twin)
and ``candidates`` (FIB per-key lists, in the order shown to the agent).

In memory ``question_type`` is our short name (mc_single, mc_all, fib_all); files carry the
official names (`OFFICIAL_TYPE_NAMES`). Reading a file keeps the name it used
(``question_type_official``), its ``answer``, its ``effective_scores`` and its FIB candidates in
their order (derived from the options in first-seen order only when the file has none), and
writing uses that name again. `agent_view` is the firewall: only what an agent may see.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Final, NotRequired, TypedDict, cast

from labreplay.errors import DataError
from labreplay.sdk import atomic_write_text, read_file
from labreplay.sdk.data import JsonLimitError, loads_strict
from labreplay.sdk.events import JsonValue


class Precedent(TypedDict):
    """One reference row shown with a precedent twin: its conditions (key -> components, as
    options show them) and its outcome as the release layout reports it."""

    conditions: dict[str, object]  # key -> components, as the options show them
    outcome: dict[str, object]  # yield and the selectivities the table records (null: none)


class QuestionInput(TypedDict, total=False):
    """A question's ``input``: components are release-layout JSON (``{content, SMILES}`` or
    lists of them), read through `value_label`."""

    reactants: list[object]
    products: list[object]
    constant_conditions: dict[str, object]
    fixed_conditions: dict[str, object]  # MC_single context
    reference_conditions: list[Precedent]  # precedent twin
    candidates: object  # FIB lists in some official files (`_candidates` reads them)


class Question(TypedDict):
    """One question record as `validate_question` checks it (and the compiler writes it).
    ``meta`` stays opaque JSON (official files carry their own fields): readers narrow it."""

    id: str
    question_type: str  # our short name in memory (mc_single, mc_all, fib_all)
    varying_keys: list[str]
    input: QuestionInput
    options: list[dict[str, object]]  # varying key -> components
    answer: list[int]  # option indices, ties allowed
    meta: dict[str, object]
    candidates: NotRequired[dict[str, list[object]]]  # FIB: per-key lists, in shown order
    question_type_official: NotRequired[str]
    source_line: NotRequired[str]
    candidates_resolved: NotRequired[bool]


class QuestionView(TypedDict):
    """What an agent sees of a question (`agent_view`); MC views carry ``options``, FIB views
    ``candidates``."""

    id: str  # the question's id (its answer is recorded under it)
    question_type: str  # "mc_single", "mc_all" or "fib_all"
    dataset: object  # the screening dataset the question was compiled from
    table_id: str  # its screening table (one reaction's conditions screen)
    varying_keys: list[str]  # the condition keys the question asks about
    reactants: list[object]  # components: {"content", "SMILES"}
    products: list[object]  # components, as the reactants
    constant_conditions: dict[str, object]  # conditions every row of the table shares
    fixed_conditions: dict[str, object]  # mc_single: the other keys, held at given values
    # precedent twins only: 2-5 rows of the same reaction (never an option), with outcomes
    precedents: list[Precedent]
    options: NotRequired[list[dict[str, object]]]  # MC: option cells, varying key -> components
    candidates: NotRequired[dict[str, list[object]]]  # FIB: per varying key, the values to pick


def view_of(question_view: Mapping[str, JsonValue]) -> QuestionView:
    """A view handed over the `QuestionAgent` contract (a plain JSON object there) as the
    `agent_view` shape the runner built it in."""
    return cast("QuestionView", question_view)


TYPE_ALIASES = {
    "mc_single": "mc_single",
    "multiple_choice_single_varying": "mc_single",
    "single_varying": "mc_single",
    "mc_all": "mc_all",
    "multiple_choice_all_varying": "mc_all",
    "all_varying": "mc_all",
    "fib_all": "fib_all",
    "fib": "fib_all",
    "all_blank": "fib_all",
    "fib_all_blank": "fib_all",
    "fill_in_blank": "fib_all",
    "fill_in_the_blank": "fib_all",
    "fill_in_blank_all_blank": "fib_all",
}


# The type names as the RxnOptBench paper prints them (MC_single: a "single_varying" item,
# MC_all: "all_varying", FIB: "all_blank").
OFFICIAL_TYPE_NAMES = {
    "mc_single": "single_varying",
    "mc_all": "all_varying",
    "fib_all": "all_blank",
}
TYPE_ALIASES.update({v: k for k, v in OFFICIAL_TYPE_NAMES.items()})


# Markers a loaded record carries in memory only: the source line when it was not written in
# our canonical form (written back verbatim while the record is unchanged, so an official file
# round-trips byte for byte), and whether `candidates` was resolved rather than read top-level.
SOURCE_LINE: Final = "source_line"
CANDIDATES_RESOLVED: Final = "candidates_resolved"
_PRIVATE = ("question_type_official", SOURCE_LINE, CANDIDATES_RESOLVED)
_ENCODER = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)


def table_id_of(q: Question) -> str:
    """The question's table: ``meta.parent_table_id``, or the question itself when an official
    record does not name one (each such question is then its own table)."""
    meta = q.get("meta") or {}
    return str(meta.get("parent_table_id") or q["id"])


def normalise_type(raw: JsonValue) -> str | None:
    return TYPE_ALIASES.get(str(raw).strip().lower().replace("-", "_"))


def value_label(components: object) -> str:
    """The identity of one condition value: its component names joined (SMILES if unnamed)."""
    if isinstance(components, Mapping):
        components = [components]
    if not isinstance(components, list):
        return str(components)
    parts = []
    for c in components:
        if isinstance(c, Mapping):
            parts.append(str(c.get("content") or c.get("SMILES") or ""))
        else:
            parts.append(str(c))
    return " + ".join(parts)


def _fail(
    path: Path, line: int, qid: JsonValue, field: str, value: JsonValue, message: str
) -> DataError:
    record = f"line {line}" + (f" (id {qid})" if qid is not None else "")
    return DataError(message, file=str(path), record=record, field=field, value=value)


def _finite_or_null(value: JsonValue) -> bool:
    if value is None:
        return True
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def validate_question(q: object, path: Path, line: int) -> Question:
    """Check one record of the release layout; return it with a normalised question_type."""
    if not isinstance(q, dict):
        raise _fail(path, line, None, "$", type(q).__name__, "expected a JSON object")
    qid = q.get("id")
    if not isinstance(qid, str) or not qid:
        raise _fail(path, line, None, "id", qid, "missing or non-string id")
    qtype = normalise_type(q.get("question_type"))
    if qtype is None:
        raise _fail(
            path, line, qid, "question_type", q.get("question_type"), "unknown question type"
        )
    keys = q.get("varying_keys")
    if not isinstance(keys, list) or not keys or not all(isinstance(k, str) for k in keys):
        raise _fail(path, line, qid, "varying_keys", keys, "expected a non-empty list of strings")
    if not isinstance(q.get("input"), dict):
        raise _fail(path, line, qid, "input", None, "missing input object")
    options = q.get("options")
    if not isinstance(options, list) or len(options) < 1:
        raise _fail(path, line, qid, "options", None, "expected a non-empty list")
    for i, opt in enumerate(options):
        if not isinstance(opt, dict) or set(opt) != set(keys):
            got = sorted(opt) if isinstance(opt, dict) else opt
            raise _fail(
                path, line, qid, f"options[{i}]", got, "option keys must equal varying_keys"
            )
    answer = q.get("answer")
    if (
        not isinstance(answer, list)
        or not answer
        or not all(isinstance(a, int) and not isinstance(a, bool) for a in answer)
        or not all(0 <= a < len(options) for a in answer)
    ):
        raise _fail(path, line, qid, "answer", answer, "expected option indices in range")
    meta = q.get("meta")
    if not isinstance(meta, dict):
        raise _fail(path, line, qid, "meta", None, "missing meta object")
    for name in ("option_relative_scores", "effective_scores", "scores"):
        if name in meta and (not isinstance(meta[name], list) or len(meta[name]) != len(options)):
            raise _fail(path, line, qid, f"meta.{name}", None, "must align with options")
    for name in ("option_relative_scores", "effective_scores"):
        for i, value in enumerate(meta.get(name) or []):
            if not _finite_or_null(value):  # a string or NaN score would poison every mean
                raise _fail(
                    path, line, qid, f"meta.{name}[{i}]", value, "expected a finite number or null"
                )
    if not any(n in meta for n in ("option_relative_scores", "effective_scores", "scores")):
        raise _fail(path, line, qid, "meta", sorted(meta), "no per-option scores")
    # checked above: the fields a Question declares have its shape (meta stays opaque JSON)
    out = cast("Question", dict(q))
    out["question_type"] = qtype
    out["question_type_official"] = str(q["question_type"])
    if qtype == "fib_all":
        out["candidates"] = _candidates(q, keys, path, line, qid)
        if "candidates" not in q:  # resolved for scoring, never written back (round trip)
            out[CANDIDATES_RESOLVED] = True
    return out


def _candidates(
    q: Mapping[str, object], keys: list[str], path: Path, line: int, qid: str
) -> dict[str, list[object]]:
    """The file's FIB candidate lists in their order; derived (first-seen order) if absent."""
    inp, meta = q.get("input"), q.get("meta")
    for where, found in (
        ("candidates", q.get("candidates")),
        ("input.candidates", inp.get("candidates") if isinstance(inp, Mapping) else None),
        ("meta.candidates", meta.get("candidates") if isinstance(meta, Mapping) else None),
    ):
        if found is None:
            continue
        if not isinstance(found, Mapping) or set(found) != set(keys):
            raise _fail(path, line, qid, where, None, "FIB candidates must map every varying key")
        lists: dict[str, list[object]] = {}
        for k in keys:
            listed = found[k]
            if not isinstance(listed, list) or not listed:
                raise _fail(path, line, qid, f"{where}.{k}", listed, "expected a non-empty list")
            lists[k] = list(listed)
        return lists
    cands: dict[str, list[object]] = {}
    options = q["options"]
    assert isinstance(options, list)  # validate_question checked: a list of objects
    for k in keys:
        seen: dict[str, object] = {}
        for opt in options:
            seen.setdefault(value_label(opt[k]), opt[k])
        cands[k] = list(seen.values())
    return cands


def load_questions(path: str | Path) -> list[Question]:
    """Read and validate a question file (ours or the official release)."""
    path = Path(path)
    try:
        lines = read_file(path, "question file").decode("utf-8").split("\n")
    except UnicodeDecodeError as exc:
        raise DataError(f"not valid UTF-8 (byte offset {exc.start})", file=str(path)) from exc
    questions: list[Question] = []
    seen: set[str] = set()
    for line_no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:  # depth-limited and NaN/Infinity refused: a deep line or a NaN score is one line
            raw = loads_strict(line)
        except JsonLimitError as exc:
            raise _fail(path, line_no, None, "$", line[:60], str(exc)) from exc
        q = validate_question(raw, path, line_no)
        if _ENCODER.encode(raw) != line:
            q[SOURCE_LINE] = line
        if q["id"] in seen:
            raise _fail(path, line_no, q["id"], "id", q["id"], "duplicate question id")
        seen.add(q["id"])
        questions.append(q)
    if not questions:
        raise DataError("question file holds no questions", file=str(path))
    return questions


def write_questions(path: Path, questions: Iterable[Question]) -> None:
    """Sorted-key compact JSON per line: same questions -> same bytes. (The compiler rounds
    every float to 6 decimals, so plain json.dumps is already stable; canonical_json would
    cost seconds on a 10k-question file.)"""
    atomic_write_text(path, "".join(_line(q) + "\n" for q in questions))


def _line(q: Question) -> str:
    record = _as_written(q)
    source = q.get(SOURCE_LINE)
    if isinstance(source, str) and json.loads(source) == record:
        return source  # unchanged since it was read: the same bytes
    return _ENCODER.encode(record)


def _as_written(q: Question) -> Mapping[str, object]:
    """The record with its official type name (the one it was read with, if any), without the
    in-memory markers (and without candidates the file did not hold at the top level)."""
    out: dict[str, object] = {k: v for k, v in q.items() if k not in _PRIVATE}
    if q.get(CANDIDATES_RESOLVED):
        out.pop("candidates", None)
    qtype = str(q["question_type"])
    out["question_type"] = q.get("question_type_official") or OFFICIAL_TYPE_NAMES.get(qtype, qtype)
    return out


def agent_view(q: Question) -> QuestionView:
    """Everything an agent may see of a question, and nothing it may not (no answer, no meta
    scores, no legal-row set for FIB)."""
    inp = q["input"]
    meta = q.get("meta", {})
    view: QuestionView = {
        "id": q["id"],
        "question_type": q["question_type"],
        "dataset": meta.get("dataset", ""),
        "table_id": table_id_of(q),
        "varying_keys": list(q["varying_keys"]),
        "reactants": inp.get("reactants", []),
        "products": inp.get("products", []),
        "constant_conditions": inp.get("constant_conditions", {}),
        "fixed_conditions": inp.get("fixed_conditions", {}),
        "precedents": inp.get("reference_conditions", []),
    }
    if q["question_type"] == "fib_all":
        view["candidates"] = q["candidates"]
    else:
        view["options"] = q["options"]
    return view
