"""The engine for suite authors: the store, environment specs, executors, the episode runner,
trajectories, the failed-run rule, and the `Suite` protocol with the `ReportSection` its
`report_section` returns.

    from labreplay.sdk.engine import Store, EnvironmentSpec, open_executor, run_suite

Names are imported from the core on first use (PEP 562), so importing this module is cheap
and a name costs what importing it from its core module did.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from labreplay._lazy import lazy_attributes

if TYPE_CHECKING:
    from labreplay.api import compile, run
    from labreplay.compile.spec import (
        EnvironmentSpec,
        load_spec,
        read_spec_text,
        spec_from_stored,
        spec_from_text,
        write_spec,
    )
    from labreplay.engine.runner import play_detached, raise_failed, run_suite, run_verdict
    from labreplay.execute.base import Executor, WorkUnit
    from labreplay.execute.driver import open_executor
    from labreplay.runtime.failure import (
        AGENT_RAISED,
        AGENT_UNAVAILABLE,
        CAUSES,
        MODEL_CALLS_FAILED,
        REPLIES_INVALID,
        RunHealth,
        Verdict,
        cap_kind,
        decision_failed,
    )
    from labreplay.runtime.trajectory import Trajectory
    from labreplay.store.signing import load_public_key
    from labreplay.store.sqlite import RunInfo, Store, run_isolation, run_key
    from labreplay.store.verify import require_verified
    from labreplay.suite import ContentMissing, Rederived, ReportSection, Suite

_SOURCES: dict[str, tuple[str, ...]] = {
    # the one door (`labreplay.compile` / `labreplay.run`), for a suite's own CLI commands
    "labreplay.api": ("compile", "run"),
    "labreplay.compile.spec": (
        "EnvironmentSpec",
        "load_spec",
        "read_spec_text",
        "spec_from_stored",
        "spec_from_text",
        "write_spec",
    ),
    "labreplay.engine.runner": ("play_detached", "raise_failed", "run_suite", "run_verdict"),
    "labreplay.execute.base": ("Executor", "WorkUnit"),
    "labreplay.execute.driver": ("open_executor",),
    "labreplay.runtime.failure": (
        "AGENT_RAISED",
        "AGENT_UNAVAILABLE",
        "CAUSES",
        "MODEL_CALLS_FAILED",
        "REPLIES_INVALID",
        "RunHealth",
        "Verdict",
        "cap_kind",
        "decision_failed",
    ),
    "labreplay.runtime.trajectory": ("Trajectory",),
    "labreplay.store.signing": ("load_public_key",),
    "labreplay.store.verify": ("require_verified",),
    "labreplay.store.sqlite": (
        "RunInfo",
        "Store",
        "run_isolation",
        "run_key",
    ),
    "labreplay.suite": (
        "ContentMissing",
        "Rederived",
        "ReportSection",
        "Suite",
    ),
}

__all__ = [
    "AGENT_RAISED",
    "AGENT_UNAVAILABLE",
    "CAUSES",
    "MODEL_CALLS_FAILED",
    "REPLIES_INVALID",
    "ContentMissing",
    "EnvironmentSpec",
    "Executor",
    "Rederived",
    "ReportSection",
    "RunHealth",
    "RunInfo",
    "Store",
    "Suite",
    "Trajectory",
    "Verdict",
    "WorkUnit",
    "cap_kind",
    "compile",
    "decision_failed",
    "load_public_key",
    "load_spec",
    "open_executor",
    "play_detached",
    "raise_failed",
    "read_spec_text",
    "require_verified",
    "run",
    "run_isolation",
    "run_key",
    "run_suite",
    "run_verdict",
    "spec_from_stored",
    "spec_from_text",
    "write_spec",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_attributes(__name__, globals(), _SOURCES)
