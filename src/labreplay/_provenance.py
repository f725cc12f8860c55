"""What every stored run records about where it came from."""

from __future__ import annotations

import datetime as _dt
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

from labreplay import __version__

# Parameter names that must never be persisted, whatever an agent puts in its params.
_SECRET_MARKERS = ("key", "token", "secret", "password", "authorization")


def utc_now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds")


def git_state(start: Path | None = None) -> dict[str, Any]:
    """Commit and dirty flag of the labreplay source tree, or nulls outside a checkout."""
    where = start or Path(__file__).resolve().parent
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True, timeout=5
        )
        if commit.returncode != 0:
            return {"git_commit": None, "git_dirty": None}
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=where,
            capture_output=True,
            text=True,
            timeout=5,
        )
        return {"git_commit": commit.stdout.strip(), "git_dirty": bool(status.stdout.strip())}
    except (OSError, subprocess.SubprocessError):
        return {"git_commit": None, "git_dirty": None}


def scrub_secrets(params: dict[str, Any]) -> dict[str, Any]:
    """Drop any parameter whose name looks like a credential (recursively)."""
    clean: dict[str, Any] = {}
    for name, value in params.items():
        if any(marker in name.lower() for marker in _SECRET_MARKERS):
            continue
        clean[name] = scrub_secrets(value) if isinstance(value, dict) else value
    return clean


def base_provenance() -> dict[str, Any]:
    return {
        "labreplay_version": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        **git_state(),
    }
