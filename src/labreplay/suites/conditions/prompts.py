"""Prompt text for each question type (our own wording) and a tolerant answer parser.

Options and candidates are numbered from 1 in the prompt. A text answer is parsed into the
structured form the scorer reads: ``{"option": i}`` (MC) or ``{"choices": {key: i}}`` (FIB),
0-based; what cannot be read becomes ``{"invalid": reason}`` and scores as wrong.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from labreplay.sdk.events import JsonObject, JsonValue
from labreplay.suites.conditions.questions import QuestionView, value_label


def _value(components: object) -> str:
    comps = components if isinstance(components, list) else [components]
    parts = []
    for c in comps:
        if isinstance(c, Mapping):
            name, smi = str(c.get("content") or ""), str(c.get("SMILES") or "")
            aliases = c.get("aliases")
            if name and isinstance(aliases, list) and aliases:  # one structure, several names
                name = f"{name} (also {', '.join(map(str, aliases))})"
            parts.append(f"{name} [{smi}]" if smi and smi != name else (name or smi))
        else:
            parts.append(str(c))
    return " + ".join(parts)


def _conditions(conds: Mapping[str, object]) -> str:
    return "; ".join(f"{k} = {_value(v)}" for k, v in conds.items()) or "(none)"


def _outcome(outcome: Mapping[str, object]) -> str:
    parts = []
    for name, unit in (("yield", "%"), ("ee", "% ee"), ("er", " er"), ("dr", " dr"), ("rr", " rr")):
        v = outcome.get(name)
        if v is not None:
            parts.append(f"{name} {v:g}{unit}" if isinstance(v, float | int) else f"{name} {v}")
    ratio = outcome.get("response_ratio")
    if isinstance(ratio, float | int):  # a declared relative response, never a yield
        parts.append(f"product/standard response ratio {ratio:g} (relative, not a yield)")
    return ", ".join(parts) or "outcome not reported"


def render_prompt(view: QuestionView) -> str:
    """The full user prompt for one question view."""
    qtype = view["question_type"]
    lines = [
        "You are advising on reaction-condition optimisation. The conditions below were all "
        "tested in the same screening study; pick what gave the best outcome (yield, weighted "
        "by stereo-/regioselectivity where reported).",
        "",
        "Reaction",
        f"  reactants: {', '.join(_value(c) for c in view.get('reactants', [])) or '(not given)'}",
        f"  products: {', '.join(_value(c) for c in view.get('products', [])) or '(not given)'}",
        f"  conditions held constant: {_conditions(view.get('constant_conditions', {}))}",
    ]
    if view.get("fixed_conditions"):
        lines.append(f"  also fixed for this question: {_conditions(view['fixed_conditions'])}")
    if view.get("precedents"):
        lines += [
            "",
            "Earlier results from related experiments of the same study (other conditions or "
            "substrates; shown whatever their outcome):",
        ]
        for i, p in enumerate(view["precedents"], 1):
            lines.append(f"  {i}. {_conditions(p['conditions'])} -> {_outcome(p['outcome'])}")
    lines.append("")
    if qtype == "fib_all":
        keys = view["varying_keys"]
        lines.append(
            "Fill every slot below with one candidate so that the combination is the best one "
            "the study tested. Only combinations that were actually run in this context count."
        )
        for k in keys:
            lines.append(f"  {k}:")
            for i, c in enumerate(view["candidates"][k], 1):
                lines.append(f"    ({i}) {_value(c)}")
        example = ", ".join(f'"{k}": 1' for k in keys)
        lines += [
            "",
            f"Reply with one JSON object mapping each slot to a candidate number, "
            f"e.g. {{{example}}}.",
        ]
    else:
        keys = view["varying_keys"]
        what = f"the {keys[0]}" if qtype == "mc_single" else "the full set of conditions"
        lines.append(f"Which option for {what} gave the best outcome?")
        for i, opt in enumerate(view["options"], 1):
            lines.append(f"  ({i}) {_conditions(opt)}")
        lines += ["", "Reply with the option number on the last line as: Answer: <number>"]
    return "\n".join(lines)


_ANSWER_LINE = re.compile(r"answer\s*[:=]?\s*(?:option\s*)?\(?\s*(\d+)\s*\)?", re.I)
_OPTION_WORD = re.compile(r"option\s*\(?\s*(\d+)\s*\)?", re.I)
_BARE = re.compile(r"^\W*\(?(\d+)\)?\W*$")


def _in_range(n: int, size: int) -> int | None:
    return n - 1 if 1 <= n <= size else None


def _parse_mc(text: str, view: QuestionView) -> JsonObject:
    size = len(view["options"])
    for pattern in (_ANSWER_LINE, _OPTION_WORD):
        found = pattern.findall(text)
        if found:
            idx = _in_range(int(found[-1]), size)
            return (
                {"option": idx}
                if idx is not None
                else {"invalid": f"option {found[-1]} out of range"}
            )
    for line in reversed([ln for ln in text.strip().splitlines() if ln.strip()]):
        m = _BARE.match(line)
        if m:
            idx = _in_range(int(m.group(1)), size)
            return (
                {"option": idx}
                if idx is not None
                else {"invalid": f"option {m.group(1)} out of range"}
            )
        break
    # By name: exactly one option whose labels all appear in the reply.
    lowered = text.lower()
    named = [
        i
        for i, opt in enumerate(view["options"])
        if all(value_label(v).lower() in lowered for v in opt.values())
    ]
    if len(named) == 1:
        return {"option": named[0]}
    return {"invalid": "no option number or unambiguous option name found"}


def _json_object(text: str) -> JsonObject | None:
    for match in reversed(list(re.finditer(r"\{[^{}]*\}", text, re.S))):
        try:
            obj = json.loads(match.group(0))
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            return obj
    return None


def _parse_fib(text: str, view: QuestionView) -> JsonObject:
    keys = view["varying_keys"]
    cands = view["candidates"]
    obj = _json_object(text) or {}
    lower = {str(k).strip().lower(): v for k, v in obj.items()}
    choices: dict[str, JsonValue] = {}
    for k in keys:
        raw: JsonValue = lower.get(k.lower())
        if raw is None:  # "key: 2" or "key = (2)" lines
            m = re.search(rf"{re.escape(k)}\s*[:=]\s*\(?\s*(\d+)", text, re.I)
            raw = int(m.group(1)) if m else None
        if isinstance(raw, list) and len(raw) == 1:
            raw = raw[0]
        if isinstance(raw, str) and raw.strip().isdigit():
            raw = int(raw.strip())
        if isinstance(raw, int) and not isinstance(raw, bool):
            idx = _in_range(raw, len(cands[k]))
            if idx is None:
                return {"invalid": f"slot {k}: candidate {raw} out of range"}
            choices[k] = idx
        elif isinstance(raw, str):  # a candidate named instead of numbered
            names = [value_label(c).lower() for c in cands[k]]
            if raw.strip().lower() in names:
                choices[k] = names.index(raw.strip().lower())
            else:
                return {"invalid": f"slot {k}: {raw!r} is not a candidate"}
        else:
            return {"invalid": f"slot {k} not filled"}
    return {"choices": choices}


def parse_answer(text: str, view: QuestionView) -> JsonObject:
    """Free text -> structured answer (or {"invalid": reason})."""
    if not isinstance(text, str) or not text.strip():
        return {"invalid": "empty reply"}
    if view["question_type"] == "fib_all":
        return _parse_fib(text, view)
    return _parse_mc(text, view)


def normalise_answer(raw: object, view: QuestionView) -> JsonObject:
    """Whatever an agent returned -> the scorer's form. Structured answers are 0-based; a
    {"text": ...} reply goes through `parse_answer` (1-based numbers, as in the prompt)."""
    if not isinstance(raw, Mapping):
        return {"invalid": f"answer is a {type(raw).__name__}, not an object"}
    if "text" in raw and "option" not in raw and "choices" not in raw:
        return parse_answer(str(raw["text"]), view)
    if view["question_type"] == "fib_all":
        choices = raw.get("choices")
        if not isinstance(choices, Mapping):
            return {"invalid": "FIB answer needs 'choices'"}
        return {"choices": dict(choices)}
    if "option" not in raw:
        return {"invalid": "MC answer needs 'option'"}
    return {"option": raw["option"]}
