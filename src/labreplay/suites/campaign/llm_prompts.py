"""What the LLM campaign agent sends: our policy prompt and the deterministic rendering of
observations and checkpoint snapshots into a multi-turn chat built for providers' prompt caches.

A conversation starts (and restarts) from the whole visible state, in three parts:

1. CAMPAIGN, closing the system message: the policy prompt, the rules and every state key that
   has not changed since the campaign's first turn (assignment, budgets, categories, candidates
   without their status, held-out queries, context). The same bytes all campaign long, and a
   message of its own, so that a provider that caches at message boundaries (Anthropic) serves
   it as a whole, and one that caches byte prefixes (OpenAI, vLLM, llama.cpp) too.
2. HISTORY: one line per closed experiment, in the order closed (table rows under one COLUMNS
   line).
3. NOW: what changes turn by turn (budgets left, the open experiment, candidate statuses,
   phase, step, the result of the last action), then the task and its JSON Schema.

Each later policy turn appends the action taken (canonical JSON) and a user message with only
what changed: the NOW keys whose values changed (an object lists only its keys that changed,
recursively; any other value whole), the keys no longer in the state, the turn's phase, step
and result, the task, and a schema given earlier in the conversation by its label (`SCHEMA S2
(given above)`) instead of again. So every request extends the previous one and a provider's
cache serves all of it. A conversation runs for one experiment and at most MAX_KEPT_TURNS
policy turns: it restarts from the whole state when the history changes (an experiment
closed), a campaign-long key changes or it holds that many turns, and at reset; a checkpoint forecast is asked at the end of the conversation but is not kept in it (its
reply, a panel of numbers, would otherwise be re-sent with every later turn). The agent is
shown the same information as with one full-state message per turn (`lr-llm-prompts-3`): the
state of every turn is the restart's plus the changes since, and a test rebuilds it.

A card table's context of more than CONTEXT_ROWS_SHOWN rows is shown as its outcome counts
(one CAMPAIGN line says how many rows were summarised). The notation is compact so that a long
assignment fits a small model's context: canonical JSON (sorted keys, no whitespace), except
that a list of objects sharing one set of keys becomes a table, `{"columns": [...], "rows":
[[...], ...]}` (a nested object column is flattened into `parent.child` columns, a column of
word lists is written `x[]` with the words separated by spaces), an object of count objects
becomes a table (absent counts written 0), and in the CAMPAIGN part a missing-value marker that
is the only one of its kind is written `"?"` with its meaning stated once. A state key that
does change after the first turn moves from CAMPAIGN to NOW for the rest of the campaign, so
nothing is ever shown stale. A checkpoint's panel is not repeated when it equals the state's
`held_out_queries`; the prompt says so, and the forecast is asked for as one row of numbers per
query (`llm_panel`). The layout depends only on the observations and actions since reset, so a
replayed campaign renders the same bytes (and hits the same response-cache entries).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import TypedDict, TypeGuard

from labreplay.sdk import canonical_json
from labreplay.sdk.events import JsonValue
from labreplay.suites.campaign.card_text import rules_of
from labreplay.suites.campaign.compiler import ContextSummary, outcome_summary
from labreplay.suites.campaign.env import RULES
from labreplay.suites.campaign.json_values import json_list, json_object
from labreplay.suites.campaign.llm_panel import panel_wire

PROMPT_VERSION = "lr-llm-prompts-4"

# One system prompt for both campaign tasks, and the state before the task in every message: an
# action turn and a panel checkpoint then share their longest part as a common prefix.
CAMPAIGN_POLICY = (
    "You work for a materials-synthesis campaign that runs on a fixed budget. The first message "
    "shows the campaign state you are allowed to see and each later one what changed since the "
    "message before it; every message gives you one task: either choose the "
    "campaign's next action (you are its decision-making policy) or forecast held-out "
    "experiments (this changes nothing and costs no budget). Use only the visible state and "
    "assume nothing about results you have not been shown. Answer with exactly one JSON object "
    "that satisfies the JSON Schema given with the task: no explanations, no markdown, no "
    "second object."
)
# A record card's table (its state shows `table`): the same prompt, of the lab's campaign.
TABLE_POLICY = CAMPAIGN_POLICY.replace("a materials-synthesis campaign", "a lab's campaign")
NOTATION = (
    'NOTATION: canonical JSON; a list of objects with the same keys is a table {"columns":[...],'
    '"rows":[[...]]} (a column "a.b" is key b of object a; a column "x[]" holds a list written '
    'as its items separated by spaces); an object of counts is a table whose column "key" is '
    "its key, an absent count written 0."
)
MISSING_KEY = "__missing__"
MISSING_CELL = "?"
# A card table's context beyond this many rows is summarised in the prompt (its outcome counts,
# overall and per group): thousands of rows would not fit a model's context. The state an agent
# sees keeps the rows; the built-in records' prompts do not change.
CONTEXT_ROWS_SHOWN = 200
# A conversation keeps at most this many policy turns before it restarts from the whole state:
# a long experiment (evidence and reviews, each followed by a forecast) would otherwise grow one
# request past what a small model's context holds.
MAX_KEPT_TURNS = 8
# State keys that change during a campaign by design: they always go to NOW.
_TURN_KEYS = ("budgets_left", "open_experiment", "experiments", "closed")


class Table(TypedDict):
    """A list of same-keyed objects (or an object of counts) written as a table."""

    columns: list[str]
    rows: list[list[object]]


def _json(value: object) -> str:
    return canonical_json(value)


def _is_missing(value: object) -> TypeGuard[Mapping[str, object]]:
    return isinstance(value, Mapping) and list(value) == [MISSING_KEY]


def compact(value: object) -> object:
    """`value` with every list of same-keyed objects written as a table (see module docstring)."""
    if isinstance(value, Mapping):
        if _is_count_table(value):
            return _count_table(value)
        return {str(k): compact(v) for k, v in value.items()}
    if not isinstance(value, list):
        return value
    if len(value) >= 2 and all(isinstance(v, Mapping) and not _is_missing(v) for v in value):
        keys = sorted(value[0])
        if all(sorted(v) == keys for v in value[1:]):
            return _table(value, keys)
    return [compact(v) for v in value]


def _is_count_table(value: Mapping[str, object]) -> bool:
    return len(value) >= 2 and all(
        isinstance(v, Mapping)
        and v
        and all(isinstance(n, int) and not isinstance(n, bool) for n in v.values())
        for v in value.values()
    )


def _count_table(value: Mapping[str, object]) -> Table:
    tables = [(k, json_object(counts)) for k, counts in value.items()]
    columns = sorted({str(c) for _, counts in tables for c in counts})
    rows: list[list[object]] = [
        [str(k), *(counts.get(c, 0) for c in columns)] for k, counts in tables
    ]
    return {"columns": ["key", *columns], "rows": rows}


def _word_list(cells: list[object]) -> bool:
    return all(
        isinstance(c, list)
        and c
        and all(isinstance(w, str) and w and not any(x.isspace() or x == '"' for x in w) for w in c)
        for c in cells
    )


def _table(rows: Sequence[Mapping[str, object]], keys: list[str]) -> Table:
    # An id column first reads better; the other columns in sorted order.
    keys = sorted(keys, key=lambda k: (k != "experiment_id", k))
    columns: list[tuple[str, str | None]] = []
    for key in keys:
        cells = [r[key] for r in rows]
        first = cells[0]
        nested = isinstance(first, Mapping) and not _is_missing(first) and len(first) > 0
        if (
            nested
            and isinstance(first, Mapping)
            and all(isinstance(c, Mapping) and sorted(c) == sorted(first) for c in cells[1:])
        ):
            columns += [(key, sub) for sub in sorted(first)]
        else:
            columns.append((key, None))
    names, getters = [], []
    for key, sub in columns:
        cells = [r[key] if sub is None else json_object(r[key])[sub] for r in rows]
        words = _word_list(cells)
        names.append((key if sub is None else f"{key}.{sub}") + ("[]" if words else ""))
        getters.append(words)
    body: list[list[object]] = []
    for r in rows:
        row: list[object] = []
        for (key, sub), words in zip(columns, getters, strict=True):
            cell = r[key] if sub is None else json_object(r[key])[sub]
            row.append(" ".join(map(str, json_list(cell))) if words else compact(cell))
        body.append(row)
    return {"columns": names, "rows": body}


def _reasons(value: object, found: set[str], strings: set[str]) -> None:
    """Collect the missing-value reasons and the plain strings in `value`."""
    if _is_missing(value):
        found.add(str(value[MISSING_KEY]))
    elif isinstance(value, Mapping):
        for v in value.values():
            _reasons(v, found, strings)
    elif isinstance(value, list):
        for v in value:
            _reasons(v, found, strings)
    elif isinstance(value, str):
        strings.add(value)


def _abbreviate(value: object, reason: str) -> object:
    if _is_missing(value) and value[MISSING_KEY] == reason:
        return MISSING_CELL
    if isinstance(value, Mapping):
        return {k: _abbreviate(v, reason) for k, v in value.items()}
    if isinstance(value, list):
        return [_abbreviate(v, reason) for v in value]
    return value


def _rows_summary(rows: Sequence[object]) -> ContextSummary:
    """The compiler's outcome counts of the context, read from the rows the agent sees."""
    pairs = [
        (json_object(r["descriptors"]), json_object(r["outcome"])) for r in map(json_object, rows)
    ]
    return outcome_summary(pairs)


def _split(
    state: Mapping[str, object],
) -> tuple[dict[str, object], dict[str, object], list[Mapping[str, object]]]:
    """(campaign-long keys, per-turn keys, closed-experiment records in closing order)."""
    fixed = {str(k): v for k, v in state.items() if k not in _TURN_KEYS}
    turn = {str(k): state[k] for k in _TURN_KEYS if k in state}
    candidates = fixed.get("candidates")
    if isinstance(candidates, list) and all(
        isinstance(c, Mapping) and "status" in c and "experiment_id" in c for c in candidates
    ):
        # A candidate's descriptors never change, its status does: the status goes to NOW.
        fixed["candidates"] = [{k: v for k, v in c.items() if k != "status"} for c in candidates]
        turn["candidate_status"] = {
            str(c["experiment_id"]): c["status"] for c in candidates if c["status"] != "available"
        }
    history: list[Mapping[str, object]] = []
    experiments, closed = turn.get("experiments"), turn.get("closed")
    if (
        isinstance(experiments, Mapping)
        and isinstance(closed, list)
        and all(isinstance(e, str) and e in experiments for e in closed)
    ):
        history = [{"experiment_id": e, **experiments[e]} for e in closed]
        turn["experiments"] = {k: v for k, v in experiments.items() if k not in closed}
        del turn["closed"]  # the history lists them, in this order
    return fixed, turn, history


class PromptLayout:
    """Remembers the campaign-long part since reset (see the module docstring)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._first: dict[str, object] | None = None
        self._volatile: list[str] = []
        self._text: tuple[tuple[str, ...], str] | None = None

    def render(self, state: Mapping[str, object]) -> tuple[str, list[str], dict[str, object]]:
        """(CAMPAIGN text, HISTORY lines, NOW mapping) for one state."""
        rows, note = state.get("context"), None
        if "table" in state and isinstance(rows, list) and len(rows) > CONTEXT_ROWS_SHOWN:
            counts = _rows_summary(rows)
            # a table's groups are `COLUMN=value`, not precursors
            context = {"n_experiments": counts["n_experiments"],
                       "outcome_counts": counts["outcome_counts"],
                       "per_group": counts["per_precursor"]}  # fmt: skip
            state = {**state, "context": context}
            note = (
                f"CONTEXT: the state's {len(rows)} context rows are summarised: `context` holds "
                "their outcome counts, overall and per group; the rows themselves are not in "
                "this prompt."
            )
        fixed, turn, history = _split(state)
        if self._first is None:
            # A private copy: a state object the environment mutates in place later must
            # still compare as changed.
            self._first = copy.deepcopy(fixed)
        for key in sorted(fixed):
            # Equality, not rendering, decides (the rendering of large unchanged values each
            # turn was most of a dry run's time).
            if key not in self._volatile and (
                key not in self._first or self._first[key] != fixed[key]
            ):
                self._volatile.append(key)
        lasting = tuple(k for k in sorted(fixed) if k not in self._volatile)
        if self._text is None or self._text[0] != lasting:
            # Rendered from the first values: the same bytes for as long as the keys last.
            self._text = (lasting, _campaign_text({k: self._first[k] for k in lasting}, note))
        changed = {k: fixed[k] for k in self._volatile if k in fixed}
        return self._text[1], _history_lines(history), {**changed, **turn}


def _history_lines(history: list[Mapping[str, object]]) -> list[str]:
    """One line per closed experiment: table rows under one columns line when the records
    share their keys (a new row only adds a line at the end), else one object per line."""
    if not history:
        return []
    keys = sorted(history[0])
    if not all(isinstance(h, Mapping) and sorted(h) == keys for h in history):
        return [_json(compact(h)) for h in history]
    table = _table(history, keys)
    return [f"COLUMNS: {_json(table['columns'])}", *(_json(row) for row in table["rows"])]


def _campaign_text(lasting: Mapping[str, object], note: str | None = None) -> str:
    reasons: set[str] = set()
    strings: set[str] = set()
    _reasons(lasting, reasons, strings)
    lines = [f"RULES: {rules_of(lasting, RULES)}", NOTATION, *([note] if note else [])]
    body = compact(lasting)
    if len(reasons) == 1 and MISSING_CELL not in strings:
        (reason,) = reasons
        body = _abbreviate(body, reason)
        marker = _json({MISSING_KEY: reason})
        lines.append(f'In this part "{MISSING_CELL}" stands for {marker} (not in the record).')
    return "\n".join([*lines, _json(body)])


class Conversation:
    """One campaign's chat (see the module docstring): the messages sent since the last
    restart, the state keys they showed and the schemas they gave. `turn` builds a turn's
    messages; `answered` keeps a policy turn and the action taken in the chat (a checkpoint's
    turn is not kept)."""

    def __init__(self) -> None:
        self.layout = PromptLayout()
        self.reset()

    def reset(self) -> None:
        self.layout.reset()
        self._sent: list[dict[str, str]] = []
        self._start: tuple[str, tuple[str, ...]] | None = None
        self._shown: dict[str, object] = {}
        self._schemas: list[str] = []  # in the order first given in `_sent`
        self._pending: _Turn = ([], ("", ()), {}, [])

    def turn(
        self,
        state: Mapping[str, object],
        now: Mapping[str, object],
        task: list[str],
        schema: object,
    ) -> list[dict[str, str]]:
        campaign, history, turn = self.layout.render(state)
        start, shown = (campaign, tuple(history)), {**turn, **now}
        if start != self._start or not self._sent or len(self._sent) > 2 * MAX_KEPT_TURNS:
            # A restart: the whole state, as a fresh conversation sees it.
            policy = TABLE_POLICY if "table" in state else CAMPAIGN_POLICY
            # The campaign-long part closes the system message: one block that providers
            # which cache at message boundaries (Anthropic) can serve as a whole.
            system = "\n".join([policy, "CAMPAIGN (the same all campaign long):", campaign])
            sent, schemas = [{"role": "system", "content": system}], []
            user = [
                "HISTORY (closed experiments in the order closed, one per line):",
                *history,
                "NOW:",
                _json(compact(shown)),
            ]
        else:
            sent, schemas = self._sent, list(self._schemas)
            # A checkpoint has no phase, step or result of its own: those are not gone.
            before = {k: v for k, v in self._shown.items() if k in shown or k not in _NOW_KEYS}
            gone: list[list[str]] = []
            patch = _patch(before, shown, [], gone)
            user = [
                "NOW (what changed since the previous message: an object lists only its keys "
                "whose values changed, any other value is shown whole):",
                _json(compact(patch if isinstance(patch, dict) else {})),
            ]
            if gone:
                user.append(f"NO LONGER IN THE STATE (paths of keys): {_json(gone)}")
        text = _json(schema)
        if text in schemas:
            user += [*task, f"SCHEMA S{schemas.index(text) + 1} (given above)"]
        else:
            schemas.append(text)
            user += [*task, f"SCHEMA S{len(schemas)}: {text}"]
        messages = [*sent, {"role": "user", "content": "\n".join(user)}]
        self._pending = (messages, start, shown, schemas)
        return messages

    def answered(self, action: Mapping[str, object]) -> None:
        """The policy turn just built was answered with `action`: both stay in the chat."""
        messages, self._start, self._shown, self._schemas = self._pending
        self._sent = [*messages, {"role": "assistant", "content": _json(action)}]


_Turn = tuple[list[dict[str, str]], tuple[str, tuple[str, ...]], dict[str, object], list[str]]
_SAME = object()
_NOW_KEYS = ("phase", "step", "result_of_previous_action")


def _patch(old: object, new: object, path: list[str], gone: list[list[str]]) -> object:
    """What a reader of `old` must be shown to know `new`: of an object only the keys whose
    values changed, recursively, the keys it lost added to `gone`; any other value whole.
    `_SAME` when nothing changed."""
    if old == new:
        return _SAME
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        gone += [[*path, str(k)] for k in old if k not in new]
        parts = {
            str(k): _patch(old[k], v, [*path, str(k)], gone) if k in old else v
            for k, v in new.items()
        }
        return {k: v for k, v in parts.items() if v is not _SAME} or _SAME
    return new


def campaign_messages(
    observation: Mapping[str, JsonValue], conversation: Conversation | None = None
) -> list[dict[str, str]]:
    """The chat messages for one campaign turn."""
    last = observation.get("last_result")
    now = {
        "phase": observation.get("phase"),
        "step": observation.get("step"),
        "result_of_previous_action": last if last is not None else "none (first turn)",
    }
    state = json_object(observation.get("state", {}), "state")
    rules = observation.get("rules", RULES)
    task = [
        *([f"RULES NOW: {rules}"] if rules != rules_of(state, RULES) else []),
        "TASK: choose the campaign's next action. Reply with one JSON object, the action you "
        "take now, valid under this JSON Schema of the actions permitted now:",
    ]
    schema = observation.get("action_schema", {})
    return (conversation or Conversation()).turn(state, now, task, schema)


def checkpoint_messages(
    snapshot: Mapping[str, JsonValue], conversation: Conversation | None = None
) -> list[dict[str, str]]:
    """The chat messages for one evaluator panel checkpoint."""
    state = snapshot.get("state", {})
    panel = snapshot.get("panel", [])
    if isinstance(state, Mapping) and panel == state.get("held_out_queries"):
        listed = f"the {len(json_list(panel))} held_out_queries in CAMPAIGN, in that order."
    else:
        listed = _json(compact(panel))
    wire = panel_wire(snapshot.get("response_schema"))
    if wire is None:
        reply = [
            "Reply with one JSON object holding a forecast for every experiment listed, valid "
            "under this JSON Schema:"
        ]
        schema: object = snapshot.get("response_schema", {})
    else:
        entries = panel if isinstance(panel, list) else []
        listed_ids = [q.get("experiment_id") for q in entries if isinstance(q, Mapping)]
        order = [] if listed_ids == list(wire.ids) else [f"ROW ORDER: {_json(list(wire.ids))}"]
        reply, schema = [*order, wire.instructions()], wire.schema
    task = [f"TASK: {snapshot.get('instructions', '')}", f"EXPERIMENTS TO FORECAST: {listed}"]
    shown = json_object(state, "state")
    return (conversation or Conversation()).turn(shown, {}, [*task, *reply], schema)
