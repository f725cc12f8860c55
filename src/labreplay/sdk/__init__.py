"""The public SDK for suite authors: everything a suite (in this repository or outside it)
needs from the core, under names that stay stable.

    from labreplay.sdk import canonical_json, sha256_json, make_rng, atomic_write_text

- hashing: `canonical_json` (sorted keys, floats to 12 significant digits) and the sha256
  helpers every spec, trajectory and dataset hash is built from;
- randomness: `make_rng(seed, *keys)` / `derive_seed(seed, *keys)`, one recorded stream per key;
- files: atomic writes (a reader never sees a half-written file);
- records: the typed `Missing` value and its JSON tag;
- runs: `Recorder` / `RunHeader` / `open_recorder` (the hash-chained trajectory recorder);
- errors: the `LabreplayError` family the CLI turns into one-line, exit-2 messages.

CLI helpers (typer options and validators for a suite's command group) are in
`labreplay.sdk.cli`, kept apart so a suite's runtime does not import typer or rich.
The private modules these names come from (`labreplay._hashing`, ...) may change; this one
does not without a deprecation.
"""

from labreplay._atomic import (
    atomic_directory,
    atomic_open,
    atomic_write_bytes,
    atomic_write_text,
    describe_os_error,
)
from labreplay._hashing import (
    HASH_SCHEME_VERSION,
    canonical_bytes,
    canonical_form,
    canonical_json,
    sha256_bytes,
    sha256_file,
    sha256_json,
    short_hash,
)
from labreplay._rng import derive_seed, first_in_seeded_order, make_rng
from labreplay.errors import (
    AgentError,
    DataError,
    DownloadError,
    LabreplayError,
    RunFailedError,
    SpecError,
    StoreError,
)
from labreplay.records._types import (
    MISSING_TAG,
    Missing,
    Record,
    from_json,
    is_missing,
    to_json,
    value_or,
)
from labreplay.runtime.recorder import DEFAULT_BATCH, Recorder, RunHeader, open_recorder, open_run

__all__ = [
    "DEFAULT_BATCH",
    "HASH_SCHEME_VERSION",
    "MISSING_TAG",
    "AgentError",
    "DataError",
    "DownloadError",
    "LabreplayError",
    "Missing",
    "Record",
    "Recorder",
    "RunFailedError",
    "RunHeader",
    "SpecError",
    "StoreError",
    "atomic_directory",
    "atomic_open",
    "atomic_write_bytes",
    "atomic_write_text",
    "canonical_bytes",
    "canonical_form",
    "canonical_json",
    "derive_seed",
    "describe_os_error",
    "first_in_seeded_order",
    "from_json",
    "is_missing",
    "make_rng",
    "open_recorder",
    "open_run",
    "sha256_bytes",
    "sha256_file",
    "sha256_json",
    "short_hash",
    "to_json",
    "value_or",
]
