"""Lazy import of inspect_ai with an error that shows the install command."""

from __future__ import annotations

from labreplay.errors import LabreplayError

INSTALL_HINT = "pip install 'labreplay[inspect]'"


def require_inspect() -> None:
    try:
        import inspect_ai  # noqa: F401
    except ImportError as exc:
        raise LabreplayError(f"this needs the `inspect-ai` package: {INSTALL_HINT}") from exc
