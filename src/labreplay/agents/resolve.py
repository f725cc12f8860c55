"""Turn whatever names an agent into a factory checked against a suite's contract.

An agent may be given as
- an object that implements the contract (each run gets its own deep copy, so runs never
  share state; an object that cannot be copied is used as it is, one run after another);
- a factory: a class or any zero-argument callable returning such an object;
- a registered name: a suite's reference agent (e.g. `bayes`), or an entry point of the group
  `labreplay.agents` in any installed distribution:

      [project.entry-points."labreplay.agents"]
      my-agent = "my_package.agents:MyAgent"

- `MODULE:ATTR`: ATTR (an object or a factory) of a module importable from `PYTHONPATH` or
  the working directory, e.g. `--agent my_agents:Greedy`.

`resolve_agent` builds one probe agent and checks it: `name` a non-empty string, every method
of the contract present and callable, `params()` a JSON object. Anything wrong is one
`AgentError` line naming the agent, the method and what was wrong, raised before any store
is created (the CLI exits 2).
"""

from __future__ import annotations

import copy
import importlib
import inspect
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from labreplay._hashing import canonical_json
from labreplay.errors import AgentError
from labreplay.suite import entry_points_by_name

ENTRY_POINT_GROUP = "labreplay.agents"
_MODULE_ATTR = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")

AgentFactory = Callable[[], Any]


@dataclass(frozen=True)
class ResolvedAgent:
    """A checked agent: `make()` builds a fresh one; `ref` ("MODULE:ATTR") rebuilds it in
    another process (`--isolate`, Dask workers) when it came from an importable place;
    `label` is how the user named it (for messages)."""

    label: str
    make: AgentFactory
    name: str
    params: dict[str, Any]
    ref: str | None = None
    builtin: str | None = None  # the suite's own reference agent of this name
    probe: Any = field(default=None, compare=False, repr=False)


def contract_members(contract: type) -> tuple[list[str], list[str]]:
    """(attributes, methods) a contract Protocol requires (public names only)."""
    methods = sorted(
        n for n, v in vars(contract).items() if not n.startswith("_") and inspect.isfunction(v)
    )
    attributes = sorted(
        n for n in getattr(contract, "__annotations__", {}) if not n.startswith("_")
    )
    return attributes, methods


def registered_ref(name: str) -> str | None:
    """The `MODULE:ATTR` an entry point of `labreplay.agents` names (None if not registered);
    nothing is imported."""
    ep = entry_points_by_name(ENTRY_POINT_GROUP).get(name)
    return None if ep is None else str(ep.value)


def is_module_attr(text: str) -> bool:
    """Whether `text` has the form MODULE:ATTR (dotted names on both sides)."""
    return bool(_MODULE_ATTR.match(text))


def registered_agents() -> list[str]:
    """Names registered in the `labreplay.agents` entry-point group, sorted."""
    return sorted(entry_points_by_name(ENTRY_POINT_GROUP))


def import_attribute(ref: str, label: str | None = None) -> Any:
    """ATTR of MODULE for `MODULE:ATTR` (the working directory is importable too)."""
    label = label or ref
    module_name, _, attribute = ref.partition(":")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.append(cwd)  # after PYTHONPATH and site-packages: never shadows them
    try:
        target: Any = importlib.import_module(module_name)
    except Exception as exc:  # any error while importing user code is the user's, named
        raise AgentError(
            f"agent {label!r}: cannot import module {module_name!r} "
            f"({type(exc).__name__}: {_one_line(exc)})"
        ) from None
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise AgentError(f"agent {label!r}: module {module_name!r} has no attribute {part!r}")
        target = getattr(target, part)
    return target


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] if text else type(exc).__name__


def _is_factory(target: object, methods: list[str]) -> bool:
    if inspect.isclass(target):
        return True
    if all(callable(getattr(target, m, None)) for m in methods):
        return False  # an agent object (which may also be callable)
    return callable(target)


def _copying(obj: object) -> AgentFactory:
    def make() -> object:
        try:
            return copy.deepcopy(obj)
        except Exception:  # e.g. holds a lock or a socket: use it as it is
            return obj

    return make


def factory_of(target: object, methods: list[str]) -> AgentFactory:
    """A zero-argument factory for an object or factory."""
    if _is_factory(target, methods) and callable(target):  # (a factory is callable)
        return target
    return _copying(target)


def check_agent_object(agent: object, contract: type, label: str) -> tuple[str, dict[str, object]]:
    """(name, params) of `agent` if it satisfies `contract`, else one AgentError line."""
    attributes, methods = contract_members(contract)
    what = contract.__name__
    for method in methods:
        if not callable(getattr(agent, method, None)):
            raise AgentError(
                f"agent {label!r}: method {method}() is missing "
                f"(the {what} contract needs {', '.join(attributes + methods)})"
            )
    name = getattr(agent, "name", None)
    if "name" in attributes and (not isinstance(name, str) or not name.strip()):
        raise AgentError(
            f"agent {label!r}: attribute name must be a non-empty string, got {name!r}"
        )
    try:
        params = getattr(agent, "params")()  # noqa: B009 (an unchecked object of the user's)
    except Exception as exc:
        raise AgentError(
            f"agent {label!r}: method params() raised {type(exc).__name__}: {_one_line(exc)}"
        ) from None
    if not isinstance(params, Mapping):
        raise AgentError(
            f"agent {label!r}: method params() returned {type(params).__name__}, not a JSON object"
        )
    try:
        canonical_json(params)
    except (TypeError, ValueError) as exc:
        raise AgentError(
            f"agent {label!r}: method params() returned a non-JSON value ({_one_line(exc)})"
        ) from None
    return str(name), dict(params)


def resolve_agent(
    agent: object,
    contract: type,
    *,
    builtins: Mapping[str, AgentFactory] | None = None,
    builtin_ref: str | None = None,
    also_known: tuple[str, ...] = (),
) -> ResolvedAgent:
    """Resolve `agent` (object, factory, registered name or MODULE:ATTR) against `contract`.

    `builtins` are the suite's reference agents by name; `builtin_ref` ("MODULE:ATTR" of the
    mapping they come from) lets a child process rebuild them by name. `also_known` names
    agents the suite builds itself, for the message about an unknown name.
    """
    _, methods = contract_members(contract)
    ref: str | None = None
    builtin: str | None = None
    if isinstance(agent, str):
        label = agent
        known = dict(builtins or {})
        if agent in known:
            make, builtin = known[agent], agent
            ref = f"{builtin_ref}[{agent}]" if builtin_ref else None
        elif agent in entry_points_by_name(ENTRY_POINT_GROUP):
            ep = entry_points_by_name(ENTRY_POINT_GROUP)[agent]
            try:
                target = ep.load()
            except Exception as exc:
                raise AgentError(
                    f"agent {label!r}: entry point {ep.value!r} does not load "
                    f"({type(exc).__name__}: {_one_line(exc)})"
                ) from None
            make, ref = factory_of(target, methods), str(ep.value)
        elif _MODULE_ATTR.match(agent):
            make, ref = factory_of(import_attribute(agent), methods), agent
        else:
            raise unknown_agent(label, [*sorted({*known, *also_known}), *registered_agents()])
    else:
        label = getattr(agent, "name", None) or getattr(agent, "__name__", None) or repr(agent)
        label = str(label)
        make = factory_of(agent, methods)
    try:
        probe = make()
    except AgentError:
        raise
    except Exception as exc:
        raise AgentError(
            f"agent {label!r}: building it raised {type(exc).__name__}: {_one_line(exc)}"
        ) from None
    name, params = check_agent_object(probe, contract, label)
    return ResolvedAgent(label, make, name, params, ref, builtin, probe)


def unknown_agent(label: str, choices: Sequence[str]) -> AgentError:
    """One line naming the unknown agent, the nearest known name and what is known."""
    from labreplay.option_fields import nearest

    close = nearest(label, choices)
    hint = f"did you mean {close!r}? " if close is not None else ""
    return AgentError(
        f"agent {label!r}: unknown ({hint}give a reference agent "
        f"({', '.join(choices) or 'none'}), a registered name (entry point group "
        f"{ENTRY_POINT_GROUP}) or MODULE:ATTR)"
    )


def importable_ref(agent: object) -> str | None:
    """`MODULE:ATTR` of a class or function a child process can import back (defined at the
    top of a module other than `__main__`), or None."""
    module = getattr(agent, "__module__", None)
    qualname = getattr(agent, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) or module == "__main__":
        return None
    if "." in qualname or "<" in qualname:  # nested or local: not importable by name
        return None
    try:
        found = getattr(importlib.import_module(module), qualname, None)
    except Exception:
        return None
    return f"{module}:{qualname}" if found is agent else None


def isolated_ref(agent: object, builtin_refs: Mapping[str, str] | None = None) -> str:
    """The reference a child process builds `agent` from, without importing it here: a
    suite's reference agent (`builtin_refs`), a registered name or MODULE:ATTR."""
    known = dict(builtin_refs or {})
    if not isinstance(agent, str):
        importable = importable_ref(agent)
        if importable is None:
            raise AgentError(
                f"agent {agent!r}: isolate (--isolate) needs an importable agent (a reference "
                "agent, a registered name, MODULE:ATTR, or a class or factory defined at the top "
                "of an importable module), not an object of this process"
            )
        return importable
    if agent in known:
        return known[agent]
    registered = registered_ref(agent)
    if registered is not None:
        return registered
    if is_module_attr(agent):
        return agent
    raise unknown_agent(agent, [*sorted(known), *registered_agents()])


def resolve_isolated(
    agent: object,
    contract_ref: str,
    timeout_s: float | None = None,
    *,
    builtin_refs: Mapping[str, str] | None = None,
) -> ResolvedAgent:
    """`agent` served from a child process (`labreplay.agents.isolated`) that imports it and
    checks it against the contract at `contract_ref` ("MODULE:ATTR" of the Protocol); its
    module is never imported here. Each call is answered within `timeout_s` (default 60 s) or
    the run is recorded failed. A refused agent is one AgentError line, before any store."""
    from labreplay.agents.isolated import DEFAULT_TIMEOUT_S, IsolatedAgent

    ref = isolated_ref(agent, builtin_refs)
    wait = timeout_s or DEFAULT_TIMEOUT_S
    label = agent if isinstance(agent, str) else ref  # a class given as an object: its ref

    def make_isolated() -> IsolatedAgent:
        return IsolatedAgent(ref, contract_ref, timeout_s=wait, label=label)

    probe = make_isolated()  # the child builds and checks the agent
    name, params = probe.name, probe.params()
    probe.close()
    return ResolvedAgent(label, make_isolated, name, params, ref, None, None)


def build_from_ref(ref: str) -> Any:
    """Build an agent in another process from a `ResolvedAgent.ref`: `MODULE:ATTR`, or
    `MODULE:ATTR[NAME]` for an entry of a name -> factory mapping."""
    key = None
    if ref.endswith("]") and "[" in ref:
        ref, key = ref[:-1].split("[", 1)
    target = import_attribute(ref)
    if key is not None:
        if key not in target:
            raise AgentError(f"unknown agent {key!r}; choose from {sorted(target)}")
        target = target[key]
    if inspect.isclass(target) or (callable(target) and not hasattr(target, "name")):
        return target()
    return target


__all__ = [
    "ENTRY_POINT_GROUP",
    "ResolvedAgent",
    "build_from_ref",
    "check_agent_object",
    "contract_members",
    "factory_of",
    "import_attribute",
    "is_module_attr",
    "isolated_ref",
    "registered_agents",
    "registered_ref",
    "resolve_agent",
    "resolve_isolated",
]
