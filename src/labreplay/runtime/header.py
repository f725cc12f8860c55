"""The `header` event: what a run is, bound into its own hash chain.

The `runs` row says which agent ran, with which parameters, how it was isolated, under which
seed, branch and spec. Those columns are plain table cells; the run id derived from them is a
public, unkeyed function, so a forger who edits a column can recompute the id. The header
event puts the same facts into the chain (campaign: right after its `reset` event; every other
suite: at seq 0), so `store verify` compares the row with the chain: an edited row no longer
matches its chain, and the chain cannot be edited without re-hashing it, which the finished
record (`chain`) and, against a whole-store forger, only a signature (docs/signing.md) catch.

Runs stored before the header existed have none: they resume without one (a replayed run
never gains a header mid-chain) and `store verify` lists them as unverifiable, not as failed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from labreplay._hashing import canonical_json
from labreplay._provenance import scrub_secrets
from labreplay._version import __version__
from labreplay.runtime.event_types import (  # the one definition (typed events)
    HeaderPayload,
    JsonValue,
)

HEADER_KIND = "header"
IN_PROCESS = "in-process"
# where a header sits at most: campaign puts it after `reset` (seq 1), the others at seq 0
_HEADER_SEQS = (0, 1)
# the row fields a header binds, in the order problems are said
_BOUND = ("agent", "agent_params", "isolation", "seed", "branch", "spec_hash")
# Fields headers gained after headers were first written: a stored header without one keeps
# lacking it when its run resumes (its chain is the record), and `store verify` says the row's
# value rests on the row alone.
LATER_FIELDS = ("model",)


def header_payload(
    *,
    agent: str,
    agent_params: Mapping[str, JsonValue],
    isolation: str,
    sandbox: str,
    seed: int,
    branch: str,
    spec_hash: str,
    protocol: str,
    model: str | None = None,
) -> HeaderPayload:
    """The header of a run, its parameters as the runs row stores them (credentials
    scrubbed), so the stored row and the stored header compare like with like. `model`: the
    model the row names, as `RunHeader.model` gives it (the campaign board calls an
    in-process run with a model a model-endpoint run, so the chain must say it)."""
    return {
        "agent": agent,
        "agent_params": scrub_secrets(dict(agent_params)),
        "isolation": isolation,
        "sandbox": sandbox,
        "model": model,
        "seed": int(seed),
        "branch": branch,
        "spec_hash": spec_hash,
        "protocol": protocol,
        "labreplay_version": __version__,
    }


def find_header(
    events: Sequence[Mapping[str, object]],
) -> tuple[int, Mapping[str, JsonValue]] | None:
    """(seq, payload) of a run's header event, None for a run stored before headers."""
    for seq in _HEADER_SEQS:
        if seq < len(events) and events[seq]["kind"] == HEADER_KIND:
            payload = events[seq]["payload"]
            if isinstance(payload, Mapping):
                return seq, payload
    return None


def as_first_written(
    payload: Mapping[str, object], stored: Mapping[str, object]
) -> dict[str, object]:
    """`payload` (a run's header now) without the `LATER_FIELDS` that its stored header,
    written before headers had them, lacks: a resumed chain goes on as it began."""
    return {k: v for k, v in payload.items() if k in stored or k not in LATER_FIELDS}


def row_isolation(
    agent_params: Mapping[str, JsonValue], provenance: Mapping[str, JsonValue]
) -> str:
    """The isolation a runs row claims: campaign records it in provenance (`agent_isolation`),
    conditions in the parameters (`isolation`), configsearch in the user optimiser's
    parameters (`optimizer.isolation`); a row that claims none ran in-process."""
    if "agent_isolation" in provenance:
        return str(provenance["agent_isolation"])
    if "isolation" in agent_params:
        return str(agent_params["isolation"])
    optimizer = agent_params.get("optimizer")
    if isinstance(optimizer, Mapping) and "isolation" in optimizer:
        return str(optimizer["isolation"])
    return IN_PROCESS


def header_problems(
    header: Mapping[str, JsonValue],
    row: Mapping[str, JsonValue],
    protocol: str,
) -> list[str]:
    """Where a runs row (`row`: agent, agent_params, isolation, seed, branch, spec_hash, model,
    and the sandbox its provenance claims, None where it claims none) differs from the header
    of its chain, and the header's protocol from the spec's. (The provenance's version is what
    the row's opening recorded; the header keeps the version that opened the chain.)"""
    problems = []
    later = tuple(key for key in LATER_FIELDS if key in header)
    claims_sandbox = ("sandbox",) if row.get("sandbox") is not None else ()
    for key in (*_BOUND, *later, *claims_sandbox):
        stored, bound = row.get(key), header.get(key)
        same = (
            canonical_json(stored) == canonical_json(bound)
            if key == "agent_params"
            else stored == bound
        )
        if not same:
            field = "provenance.agent_sandbox" if key == "sandbox" else key
            problems.append(
                f"table runs, field {field}: {_short(stored)}, but the run's header event "
                f"says {_short(bound)} (edited row?)"
            )
    if header.get("protocol") != protocol:
        problems.append(
            f"table events, header: protocol {_short(header.get('protocol'))}, but the run's "
            f"spec is {protocol!r}"
        )
    return problems


def _short(value: object) -> str:
    text = canonical_json(value) if isinstance(value, dict | list) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


__all__ = [
    "HEADER_KIND",
    "LATER_FIELDS",
    "HeaderPayload",
    "as_first_written",
    "find_header",
    "header_payload",
    "header_problems",
    "row_isolation",
]
