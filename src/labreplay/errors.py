"""One error hierarchy for the whole tool.

Every message names what is at fault (file, record, field, value) so that a user can fix the
input without reading a traceback. The CLI maps these to exit code 2 (bad usage or data).
"""

from __future__ import annotations


class LabreplayError(Exception):
    """Base of every error labreplay raises on purpose."""

    exit_code = 2


class DataError(LabreplayError):
    """A data file is missing, corrupt, truncated, or does not match its schema or checksum."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        record: str | None = None,
        field: str | None = None,
        value: object = None,
    ) -> None:
        parts = []
        if file is not None:
            parts.append(f"file {file}")
        if record is not None:
            parts.append(f"record {record}")
        if field is not None:
            parts.append(f"field {field!r}")
        if value is not None:
            parts.append(f"value {value!r}")
        where = (", ".join(parts) + ": ") if parts else ""
        super().__init__(f"{where}{message}")
        self.file = file
        self.record = record
        self.field = field
        self.value = value


class SpecError(LabreplayError):
    """An environment spec is malformed, inconsistent, or its bytes do not match its hash."""


class AgentError(LabreplayError):
    """An agent could not be built or failed in a way that is not the agent's own decision."""


class StoreError(LabreplayError):
    """The results store is unreadable, of an unknown schema, or refused a write."""


class DownloadError(DataError):
    """A dataset download failed (offline, HTTP error, checksum mismatch)."""
