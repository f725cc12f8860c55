"""Record cards: a declarative description of a lab's record, validated against a JSON Schema.

A card (`NAME.card.toml`, or `NAME.card.yaml` when PyYAML is installed) names the source files
with their sha256, the experiment id, the descriptors visible before the result, the outcome
rule, the evidence kinds an agent can buy, the grouping key(s) of the panel partition and
protocol overrides. The schema (`card_schema.json`, shipped in the package) is the published
contract; `check_schema` checks a card against it without a jsonschema dependency (the schema
uses only type (one or a list), enum, pattern, minimum, minItems, minLength, required,
properties and additionalProperties (false or a schema), all checked here). The built-in records are cards in `cards/`.

Every refusal is a `DataError` naming the card file, the field (a dotted path) and the value
(cut to 80 characters before it is rendered: no error path serialises an unbounded value).
A card cannot put the outcome in front of the agent: a column an agent sees before the result
(the id, a descriptor, a grouping key) may not be an outcome column or one an evidence kind
reveals. Sources lie inside the card's folder (no `..`, no absolute path, no symlink leading
out; a `data-dir` source inside the data dir). YAML aliases are refused (a few hundred bytes of
nested aliases expand to gigabytes), as is a card over 1 MiB or nested over 32 levels.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, Literal, NotRequired, TypedDict, cast

from labreplay.errors import DataError
from labreplay.sdk import path_kind, read_file
from labreplay.sdk.events import JsonValue
from labreplay.suites.campaign.protocol import ProtocolOverrides

BUILTIN_RULES = ("precursor-genome", "alab-pipeline")
TABLE_RULES = ("bins", "columns")
CARD_SUFFIXES = (".card.toml", ".card.yaml", ".card.yml")
MAX_CARD_BYTES = 1 << 20
MAX_CARD_DEPTH = 32
MAX_TABLE_ROWS = 200_000  # `table.max_rows` by default: each spec of a seed holds its context rows
SHOWN = 80  # characters of a refused value (and of its field path) in a refusal
OUTCOME_COLUMNS: tuple[Literal["column", "category_column", "valid_column"], ...] = (
    "column",
    "category_column",
    "valid_column",
)


class SchemaNode(TypedDict, total=False):
    """The JSON Schema keywords the card schema uses (all that `check_schema` checks)."""

    type: str | list[str]  # a list: any of these (keywords apply to the values they fit)
    enum: list[JsonValue]
    pattern: str
    minimum: float
    minLength: int
    minItems: int
    required: list[str]
    properties: dict[str, SchemaNode]
    additionalProperties: bool | SchemaNode  # a schema: what every unlisted field must be
    items: SchemaNode
    description: str


# A card as the schema (`card_schema.json`) admits it.
class SourceEntry(TypedDict):
    path: str
    sha256: str


class TableEntry(TypedDict):
    file: str
    format: NotRequired[Literal["csv", "tsv"]]
    max_rows: NotRequired[int]
    filter: NotRequired[dict[str, str | float | list[str | float]]]
    header: NotRequired[bool]
    columns: NotRequired[list[str]]


class IdEntry(TypedDict, total=False):
    row_number: bool
    columns: list[str]


class ExperimentEntry(TypedDict):
    id: str | IdEntry
    descriptors: list[str]


class BinEntry(TypedDict):
    category: str
    below: NotRequired[float]


class QuantilesEntry(TypedDict):
    quantiles: int


class OutcomeEntry(TypedDict):
    rule: str
    column: NotRequired[str]
    bins: NotRequired[list[BinEntry] | QuantilesEntry]
    category_column: NotRequired[str]
    categories: NotRequired[list[str]]
    valid_column: NotRequired[str]
    censored: NotRequired[Literal["bounds", "undecidable"]]
    secondary: NotRequired[list[str]]


class EvidenceEntry(TypedDict):
    kind: str
    reveals: str
    shows: str
    budget: str
    price: int


class ClaimEntry(TypedDict):
    name: str
    supported_by: list[str]  # evidence kinds that must all have been inspected


class ScalingEntry(TypedDict, total=False):
    evidence_share: float
    panel_share: float


class CardData(TypedDict):
    card_version: int
    name: str
    description: NotRequired[str]
    sources_root: NotRequired[Literal["card", "data-dir"]]
    sources: list[SourceEntry]
    table: NotRequired[TableEntry]
    experiment: ExperimentEntry
    outcome: OutcomeEntry
    evidence: list[EvidenceEntry]
    claims: NotRequired[list[ClaimEntry]]
    grouping: list[str]
    protocol: NotRequired[ProtocolOverrides]
    scaling: NotRequired[ScalingEntry]


@dataclass(frozen=True)
class Source:
    path: str
    sha256: str


@dataclass(frozen=True)
class EvidenceKind:
    kind: str
    reveals: str
    shows: str
    budget: str
    price: int


@dataclass(frozen=True)
class Bin:
    category: str
    below: float | None


@dataclass(frozen=True)
class RecordCard:
    """A validated card. `file` is where it was read from; `root` what source paths are
    relative to (the card's folder, or the data dir when `sources_root = "data-dir"`)."""

    file: Path
    name: str
    description: str
    sources_root: str
    sources: tuple[Source, ...]
    table_file: str | None
    table_format: str
    # a headerless table's column names (`header = false`); (): the file's first line names them
    header_columns: tuple[str, ...]
    # (column, accepted values): a row is kept when every column holds one of its values
    filters: tuple[tuple[str, tuple[str | float, ...]], ...]
    # the id column(s), joined by " | " when several; () when the id is the row number
    id_columns: tuple[str, ...]
    descriptors: tuple[str, ...]
    rule: str
    outcome_column: str | None
    bins: tuple[Bin, ...]
    category_column: str | None
    categories: tuple[str, ...]
    valid_column: str | None
    evidence: tuple[EvidenceKind, ...]
    grouping: tuple[str, ...]
    protocol: ProtocolOverrides
    censored: str = "undecidable"  # "bounds": `>99`, `<1` are read as bounds (rule bins)
    quantiles: int | None = None  # bins at these quantiles of the context rows (`bins` is ())
    secondary: tuple[str, ...] = ()  # other outcome columns: recorded (sealed), never shown
    scaling: ScalingEntry | None = None  # declared scaling rules (`card_compile.table_protocol`)
    # (name, evidence kinds that support it); None: the rule's own (the SDL-1 four, or a
    # table's default `outcome_category`, see `table_claims`)
    claims: tuple[tuple[str, tuple[str, ...]], ...] | None = None
    max_rows: int = MAX_TABLE_ROWS  # rows kept (`table.max_rows`): larger tables are refused

    @property
    def builtin(self) -> bool:
        return self.rule in BUILTIN_RULES

    def error(self, message: str, field: str, value: object) -> DataError:
        return card_error(self.file, message, field, value)


def card_error(file: Path, message: str, field: str, value: object) -> DataError:
    return DataError(message, file=f"card {file.name}", field=_cut(field), value=preview(value))


def _cut(text: str, limit: int = SHOWN) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def preview(value: object, limit: int = SHOWN) -> object:
    """`value` as a refusal shows it: a short string or number as is, anything else as JSON
    text cut to `limit` characters, rendered piece by piece and stopped there (a huge or
    deeply nested value costs `limit` characters, never its full size)."""
    if isinstance(value, str):
        return _cut(value, limit)
    if value is None or isinstance(value, bool | float) or _small_int(value):
        return value
    text = ""
    for piece in _pieces(value, limit, 0):
        text += piece
        if len(text) > limit:
            break
    return _cut(text, limit)


def _small_int(value: object) -> bool:
    return isinstance(value, int) and value.bit_length() < 64


def _pieces(value: object, limit: int, depth: int) -> Iterator[str]:
    if depth > MAX_CARD_DEPTH:
        yield "..."
    elif isinstance(value, Mapping):
        yield "{"
        for i, (key, item) in enumerate(value.items()):
            yield (", " if i else "") + json.dumps(_cut(str(key), limit)) + ": "
            yield from _pieces(item, limit, depth + 1)
        yield "}"
    elif isinstance(value, list | tuple):
        yield "["
        for i, item in enumerate(value):
            yield ", " if i else ""
            yield from _pieces(item, limit, depth + 1)
        yield "]"
    elif isinstance(value, str):
        yield json.dumps(_cut(value, limit))
    elif value is None or isinstance(value, bool | float) or _small_int(value):
        yield json.dumps(value)
    else:
        yield f"<{type(value).__name__}>"


@lru_cache(maxsize=1)
def card_schema() -> SchemaNode:
    """The published JSON Schema of record cards (version 1)."""
    text = resources.files("labreplay.suites.campaign").joinpath("card_schema.json").read_text()
    schema: SchemaNode = json.loads(text)
    return schema


def builtin_card_path(record: str) -> Path:
    """The packaged card of a built-in record (`precursor-genome`, `alab-pipeline`)."""
    base = resources.files("labreplay.suites.campaign").joinpath("cards")
    return Path(str(base.joinpath(f"{record}.card.toml")))


def read_card_file(path: Path) -> dict[str, Any]:
    """The card's raw mapping (TOML, or YAML with PyYAML); bad syntax names the card."""
    name = path.name
    if not name.endswith(CARD_SUFFIXES):
        raise card_error(path, f"a card file is named NAME{' or NAME'.join(CARD_SUFFIXES)}",
                         "file", name)  # fmt: skip
    # a FIFO or a device is named, never read; a card is at most MAX_CARD_BYTES
    raw = read_file(path, "record card", MAX_CARD_BYTES)
    try:
        if name.endswith(".card.toml"):
            data: object = tomllib.loads(raw.decode("utf-8"))
        else:
            data = _load_yaml(path, raw)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, ValueError) as exc:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise card_error(
            path, f"not a valid card file: {_cut(message, 200)}", "file", name
        ) from exc
    except RecursionError as exc:  # the parsers recurse per nesting level
        raise card_error(path, f"nested over {MAX_CARD_DEPTH} levels", "file", name) from exc
    if not isinstance(data, dict):
        raise card_error(path, "a card is a mapping of fields", "file", name)
    if _depth(data) > MAX_CARD_DEPTH:
        raise card_error(path, f"nested over {MAX_CARD_DEPTH} levels", "file", name)
    return data


def _depth(value: object) -> int:
    """Nesting depth of parsed card data (a tree: aliases are refused), without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_CARD_DEPTH:
            break
        if isinstance(item, dict):
            stack += [(v, depth + 1) for v in item.values()]
        elif isinstance(item, list):
            stack += [(v, depth + 1) for v in item]
    return deepest


def _load_yaml(path: Path, raw: bytes) -> object:
    try:
        import yaml
    except ImportError as exc:
        raise card_error(
            path, "YAML cards need PyYAML: pip install pyyaml (or write NAME.card.toml)",
            "file", path.name,
        ) from exc  # fmt: skip
    text = raw.decode("utf-8")
    try:
        # Aliases first, from the event stream (nothing is built): `*name` can repeat a
        # node that itself repeats nodes, so a few hundred bytes expand to gigabytes.
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent):
                raise card_error(
                    path, "YAML aliases are not allowed in a card (write the value out)",
                    "file", f"*{event.anchor}",
                )  # fmt: skip
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(str(exc).replace("\n", " ")) from exc


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}


def check_schema(value: object, schema: SchemaNode, where: str) -> tuple[str, str] | None:
    """The first violation as (dotted field, reason), or None. Covers the keywords the card
    schema uses; an unknown field is refused by `additionalProperties: false`."""
    kind = schema.get("type")
    if kind is not None:
        kinds = [kind] if isinstance(kind, str) else kind
        ok = any(
            isinstance(value, _JSON_TYPES[k]) and (k == "boolean" or not isinstance(value, bool))
            for k in kinds
        )
        if not ok:
            return where, f"expected {' or '.join(kinds)}"
    if "enum" in schema and value not in schema["enum"]:
        return where, f"expected one of {schema['enum']}"
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            return where, "empty"
        if "pattern" in schema and not re.search(schema["pattern"], value):
            return where, f"does not match {schema['pattern']}"
    if isinstance(value, int | float) and "minimum" in schema and value < schema["minimum"]:
        return where, f"below the minimum {schema['minimum']}"
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            return where, f"needs at least {schema['minItems']} item(s)"
        for i, item in enumerate(value):
            if (found := check_schema(item, schema.get("items", {}), f"{where}[{i}]")) is not None:
                return found
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for key in schema.get("required", ()):
            if key not in value:
                return _join(where, key), "required field is missing"
        for key, item in value.items():
            sub = _join(where, str(key))
            extra = schema.get("additionalProperties", True)
            if key not in props:
                if extra is False:
                    return sub, f"unknown card field (known: {', '.join(sorted(props))})"
                if extra is True:
                    continue
            if (found := check_schema(item, props.get(key) or cast(SchemaNode, extra), sub)) is not None:  # fmt: skip
                return found
    return None


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def load_card(path: str | Path) -> RecordCard:
    """Read and validate a card: the schema first, then the rules the schema cannot say."""
    path = Path(path)
    data = read_card_file(path)
    if (found := check_schema(data, card_schema(), "")) is not None:
        field, reason = found
        raise card_error(path, reason, field, _value_at(data, field))
    return _semantic(path, cast(CardData, data))  # checked against the card schema above


def _value_at(data: Mapping[str, object], field: str) -> object:
    value: object = data
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", field):
        if part.startswith("[") and isinstance(value, list):
            value = value[int(part[1:-1])]
        elif isinstance(value, Mapping) and part in value:
            value = value[part]
        else:
            return None
    return value


def _semantic(path: Path, data: CardData) -> RecordCard:
    outcome = data["outcome"]
    rule = str(outcome["rule"])
    table = data.get("table")
    sources = tuple(Source(s["path"], s["sha256"]) for s in data["sources"])

    def refuse(message: str, field: str, value: object) -> DataError:
        return card_error(path, message, field, value)

    paths = [s.path for s in sources]
    for i, source in enumerate(sources):
        if _leaves_root(source.path):
            raise refuse("a source path stays inside the card's folder (or the data dir): "
                         "no '..', no absolute path", f"sources[{i}].path", source.path)  # fmt: skip
    if len(set(paths)) != len(paths):
        raise refuse("a source is listed twice", "sources", sorted(p for p in paths if paths.count(p) > 1)[0])  # fmt: skip
    if rule in TABLE_RULES:
        if table is None:
            raise refuse(f"rule {rule!r} reads a table: declare table.file", "table", None)
        if table["file"] not in paths:
            raise refuse("the table is not one of the sources", "table.file", table["file"])
    declared_bins = outcome.get("bins", [])
    quantiles = declared_bins.get("quantiles") if isinstance(declared_bins, dict) else None
    bins = tuple(Bin(str(b["category"]), b.get("below")) for b in declared_bins if isinstance(b, dict))  # fmt: skip
    if rule == "bins" and quantiles is not None:
        if "column" not in outcome:
            raise refuse("rule 'bins' needs outcome.column", "outcome.rule", rule)
        categories = tuple(outcome.get("categories", [f"q{k}" for k in range(1, quantiles + 1)]))
        if len(categories) != quantiles:
            raise refuse(f"quantile bins name {quantiles} categories", "outcome.categories",
                         list(categories))  # fmt: skip
    elif rule == "bins":
        if "column" not in outcome or not bins:
            raise refuse("rule 'bins' needs outcome.column and outcome.bins", "outcome.rule", rule)
        for i, b in enumerate(bins):
            last = i == len(bins) - 1
            if (b.below is None) != last:
                raise refuse("every bin but the last has `below`; the last has none",
                             f"outcome.bins[{i}].below", b.below)  # fmt: skip
            if i and b.below is not None and bins[i - 1].below is not None and b.below <= bins[i - 1].below:  # type: ignore[operator]  # fmt: skip
                raise refuse("bin bounds must increase", f"outcome.bins[{i}].below", b.below)
        categories = tuple(b.category for b in bins)
    elif rule == "columns":
        if "category_column" not in outcome or "categories" not in outcome:
            raise refuse("rule 'columns' needs outcome.category_column and outcome.categories",
                         "outcome.rule", rule)  # fmt: skip
        categories = tuple(outcome["categories"])
    else:
        categories = ()
    if "censored" in outcome and rule != "bins":
        raise refuse("censored values are read as bounds of a binned column (rule 'bins')",
                     "outcome.censored", outcome["censored"])  # fmt: skip
    if len(set(categories)) != len(categories):
        raise refuse("a category is declared twice", "outcome.categories", list(categories))
    evidence = tuple(
        EvidenceKind(e["kind"], e["reveals"], e["shows"], e["budget"], int(e["price"]))
        for e in data["evidence"]
    )
    kinds = [e.kind for e in evidence]
    for i, e in enumerate(evidence):
        if kinds.count(e.kind) > 1:
            raise refuse("an evidence kind is declared twice", f"evidence[{i}].kind", e.kind)
        if rule in TABLE_RULES and e.budget != "evidence":
            raise refuse("a table's evidence is bought from the evidence budget",
                         f"evidence[{i}].budget", e.budget)  # fmt: skip
    id_columns = _id_columns(refuse, data["experiment"]["id"])
    id_field = (
        "experiment.id" if isinstance(data["experiment"]["id"], str) else "experiment.id.columns"
    )
    shown = [(id_field if len(id_columns) < 2 else f"{id_field}[{i}]", c) for i, c in enumerate(id_columns)]  # fmt: skip
    shown += [(f"experiment.descriptors[{i}]", str(c)) for i, c in enumerate(data["experiment"]["descriptors"])]  # fmt: skip
    shown += [(f"grouping[{i}]", str(c)) for i, c in enumerate(data["grouping"])]
    secondary = tuple(outcome.get("secondary", []))
    _refuse_outcome_in_view(refuse, outcome, rule, evidence, shown)
    declared = table.get("filter", {}) if table is not None else {}
    filters = tuple((c, tuple(v) if isinstance(v, list) else (v,)) for c, v in declared.items())
    outcome_columns = {str(outcome[k]) for k in OUTCOME_COLUMNS if k in outcome}
    for i, column in enumerate(secondary):
        if rule not in TABLE_RULES:
            raise refuse("a built-in rule reads its own outcomes", "outcome.secondary", column)
        if column in outcome_columns or secondary.index(column) < i:
            raise refuse("a secondary outcome is another column than the outcome's, named once",
                         f"outcome.secondary[{i}]", column)  # fmt: skip
    outcome_columns.update(secondary)
    for column, _ in filters:
        if column in outcome_columns:
            raise refuse("a filter on an outcome column would choose rows by their result",
                         f"table.filter.{column}", column)  # fmt: skip
    claims = None
    if "claims" in data:
        if rule not in TABLE_RULES:
            raise refuse("a built-in rule keeps its own claims", "claims", rule)
        claims = tuple((str(c["name"]), tuple(map(str, c["supported_by"]))) for c in data["claims"])
        names_ = [n for n, _ in claims]
        for i, (name, supported_by) in enumerate(claims):
            if names_.count(name) > 1:
                raise refuse("a claim is declared twice", f"claims[{i}].name", name)
            unknown = [k for k in supported_by if k not in kinds]
            if unknown:
                raise refuse("a claim is supported by an evidence kind the card does not declare",
                             f"claims[{i}].supported_by", unknown[0])  # fmt: skip
    return RecordCard(
        file=path,
        name=str(data["name"]),
        description=str(data.get("description", "")),
        sources_root=str(data.get("sources_root", "card")),
        sources=sources,
        table_file=None if table is None else table["file"],
        table_format=_table_format(table),
        header_columns=_header_columns(refuse, table),
        max_rows=table.get("max_rows", MAX_TABLE_ROWS) if table is not None else MAX_TABLE_ROWS,
        filters=filters,
        id_columns=id_columns,
        descriptors=tuple(data["experiment"]["descriptors"]),
        rule=rule,
        outcome_column=outcome.get("column"),
        bins=bins,
        category_column=outcome.get("category_column"),
        categories=categories,
        valid_column=outcome.get("valid_column"),
        evidence=evidence,
        grouping=tuple(data["grouping"]),
        protocol=data.get("protocol", {}).copy(),
        claims=claims,
        censored=outcome.get("censored", "undecidable"),
        quantiles=quantiles,
        secondary=secondary,
        scaling=_scaling(refuse, data, rule),
    )


def _scaling(refuse: Callable[[str, str, object], DataError], data: CardData, rule: str) -> ScalingEntry | None:  # fmt: skip
    """The declared scaling rules: shares in (0, 1], not also fixed by `[protocol]`."""
    scaling = data.get("scaling")
    if scaling is None:
        return None
    if rule not in TABLE_RULES:
        raise refuse("a built-in rule keeps its own protocol", "scaling", rule)
    fixed = {"evidence_share": "evidence_budget", "panel_share": "eval_precursors"}
    shares = {"evidence_share": scaling.get("evidence_share"), "panel_share": scaling.get("panel_share")}  # fmt: skip
    for key, share in shares.items():
        if share is None:
            continue
        if not 0 < share <= 1:
            raise refuse("a share lies in (0, 1]", f"scaling.{key}", share)
        if fixed[key] in data.get("protocol", {}):
            raise refuse(f"declare scaling.{key} or protocol.{fixed[key]}, not both",
                         f"scaling.{key}", share)  # fmt: skip
    return scaling.copy()


def _id_columns(refuse: Callable[[str, str, object], DataError], entry: str | IdEntry) -> tuple[str, ...]:  # fmt: skip
    """The id column(s): one column, several (a composite id), or none (the row number)."""
    if isinstance(entry, str):
        return (entry,)
    if len(entry) != 1:
        raise refuse("the id is a column, {row_number = true} or {columns = [...]} (one of them)",
                     "experiment.id", entry)  # fmt: skip
    columns = entry.get("columns", [])
    if len(set(columns)) != len(columns):
        raise refuse("an id column is named twice", "experiment.id.columns", columns)
    return tuple(columns)


def _header_columns(refuse: Callable[[str, str, object], DataError], table: TableEntry | None) -> tuple[str, ...]:  # fmt: skip
    """A headerless table's declared column names (`header = false` with `columns`)."""
    if table is None or table.get("header", True):
        if table is not None and "columns" in table:
            raise refuse("table.columns names a headerless file's columns: declare header = false",
                         "table.columns", table["columns"])  # fmt: skip
        return ()
    if "columns" not in table:
        raise refuse("a headerless table (header = false) names its columns in table.columns",
                     "table.header", False)  # fmt: skip
    columns = table["columns"]
    if len(set(columns)) != len(columns):
        raise refuse("a column is named twice", "table.columns",
                     next(c for c in columns if columns.count(c) > 1))  # fmt: skip
    return tuple(columns)


def _table_format(table: TableEntry | None) -> str:
    """The declared format, else the file's suffix says (`.tsv`), else csv."""
    if table is not None and "format" in table:
        return table["format"]
    return "tsv" if table is not None and table["file"].endswith(".tsv") else "csv"


def _leaves_root(path: str) -> bool:
    pure = PurePosixPath(path.replace("\\", "/"))
    return pure.is_absolute() or ".." in pure.parts or PureWindowsPath(path).drive != ""


def _refuse_outcome_in_view(
    refuse: Callable[[str, str, object], DataError],
    outcome: OutcomeEntry,
    rule: str,
    evidence: Sequence[EvidenceKind],
    shown: Sequence[tuple[str, str]],
) -> None:
    """A column the agent sees before the result (`shown`: the id, the descriptors, the
    grouping keys, as (field, column)) must not hold the outcome, a secondary outcome, nor be
    one an evidence kind reveals (it would be bought for free)."""
    hidden = {
        str(outcome[key]): f"the outcome (outcome.{key})"
        for key in OUTCOME_COLUMNS
        if rule in TABLE_RULES and key in outcome
    }
    for i, column in enumerate(outcome.get("secondary", [])):
        hidden.setdefault(column, f"a secondary outcome (outcome.secondary[{i}])")
    for i, e in enumerate(evidence):
        hidden.setdefault(e.reveals, f"bought evidence (evidence[{i}].reveals)")
    for field, column in shown:
        if column in hidden:
            raise refuse(
                f"an agent sees this column before the result, but it is {hidden[column]}: "
                "the card would put it in front of the agent", field, column,
            )  # fmt: skip


def source_paths(card: RecordCard, data_dir: Path) -> dict[str, Path]:
    """Each source's path on disk (card-relative or data-dir-relative). A card-relative source
    must resolve inside the card's folder: a symlink leading out is refused (a card from
    elsewhere could otherwise read, and quote in its refusals, any file the user can read)."""
    if card.sources_root == "data-dir":
        return {s.path: data_dir / s.path for s in card.sources}
    root = card.file.parent
    inside = root.resolve()
    paths = {}
    for i, s in enumerate(card.sources):
        path = root / s.path
        if _leaves_root(s.path) or not path.resolve().is_relative_to(inside):
            raise card.error("a source resolves outside the card's folder (a symlink?)",
                             f"sources[{i}].path", s.path)  # fmt: skip
        paths[s.path] = path
    return paths


def check_sources(
    card: RecordCard, data_dir: Path, allow_modified: bool, known: Mapping[str, str] | None = None
) -> tuple[dict[str, str], list[str]]:
    """Hash every source; a missing file or a sha256 other than the card's stops the compile
    (unless `allow_modified`: then the real hash is recorded and the path returned as
    modified). `known`: digests already computed (path -> sha256) by the built-in loaders."""
    from labreplay.sdk import sha256_file

    files: dict[str, str] = {}
    modified: list[str] = []
    for i, (source, on_disk) in enumerate(zip(card.sources, source_paths(card, data_dir).values(), strict=True)):  # fmt: skip
        field = f"sources[{i}].path"
        digest = (known or {}).get(source.path)
        if digest is None:
            kind = path_kind(on_disk)
            if kind != "a regular file":  # hashing a FIFO would wait for ever
                why = "not found" if kind is None else f"is {kind}, not a regular file"
                raise card.error(f"source file {why}", field, source.path)
            try:
                digest = sha256_file(on_disk)
            except OSError as exc:
                raise card.error(
                    f"unreadable source ({exc.strerror or exc})", field, source.path
                ) from exc
        files[source.path] = digest
        if digest != source.sha256:
            if not allow_modified:
                raise card.error(
                    f"sha256 differs from the card's (real {digest[:16]}...); restore the file, "
                    "fix the card, or pass --allow-modified-data",
                    f"sources[{i}].sha256", source.sha256[:16] + "...",
                )  # fmt: skip
            modified.append(source.path)
    return files, modified
