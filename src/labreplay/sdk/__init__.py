"""The public SDK for suite authors: everything a suite (in this repository or outside it)
needs from the core, under names that stay stable.

    from labreplay.sdk import canonical_json, sha256_json, make_rng, atomic_write_text

- hashing: `canonical_json` (sorted keys, floats to 12 significant digits) and the sha256
  helpers every spec, trajectory and dataset hash is built from;
- randomness: `make_rng(seed, *keys)` / `derive_seed(seed, *keys)`, one recorded stream per key;
- files: atomic writes (a reader never sees a half-written file); the two path rules
  (`writable_file`: labreplay writes regular files only; `read_file`/`readable_file`: it reads
  regular files of bounded size, a FIFO or a device named for what it is);
- records: the typed `Missing` value and its JSON tag;
- runs: `HEADER_KIND`, the kind of the header event a suite places where the runner says
  (runs themselves are opened, recorded and finished by the episode runner alone);
- errors: the `LabreplayError` family the CLI turns into one-line, exit-2 messages.

The rest of the SDK is grouped by concept, one module each:

- `labreplay.sdk.agents`: agent contracts, resolution and isolation; the LLM client, config,
  budgets, caps and usage;
- `labreplay.sdk.engine`: the store, environment specs, executors and the run driver,
  trajectories, the failed-run rule, the `Suite` protocol and its `ReportSection`;
- `labreplay.sdk.data`: the data directory, source checksums, strict JSON loading;
- `labreplay.sdk.scoring`: campaign curves, proper scoring rules, paired statistics;
- `labreplay.sdk.harness`: the external-agent bridge and the MCP server behind `serve`;
- `labreplay.sdk.options`: options classes and the validators they use;
- `labreplay.sdk.report`: HTML blocks, figures, the generic report section;
- `labreplay.sdk.testing`: the firewall canary and the schema-answering stub model;
- `labreplay.sdk.cli`: typer options and validators for a suite's command group (kept apart so
  a suite's runtime does not import typer or rich).

A suite imports the core only through these modules and `labreplay.errors` (a test enforces
it). Every SDK module, this one included, imports a name's core module on first use (PEP 562),
so importing it adds nothing to start-up time (`labreplay <suite> --help` needs no numpy). The core modules these names come from (`labreplay._hashing`,
`labreplay.store.sqlite`, ...) may change; these do not without a deprecation.
"""

from typing import TYPE_CHECKING

from labreplay._lazy import lazy_attributes

if TYPE_CHECKING:
    from labreplay._atomic import (
        atomic_directory,
        atomic_open,
        atomic_write_bytes,
        atomic_write_text,
        describe_os_error,
    )
    from labreplay._files import (
        MAX_INPUT_BYTES,
        FileKindError,
        path_kind,
        read_file,
        readable_dir,
        readable_file,
        writable_dir,
        writable_file,
    )
    from labreplay._hashing import (
        HASH_SCHEME_VERSION,
        canonical_bytes,
        canonical_form,
        canonical_json,
        normalised,
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
    from labreplay.runtime.header import HEADER_KIND

_SOURCES: dict[str, tuple[str, ...]] = {
    "labreplay._atomic": (
        "atomic_directory",
        "atomic_open",
        "atomic_write_bytes",
        "atomic_write_text",
        "describe_os_error",
    ),
    "labreplay._files": (
        "MAX_INPUT_BYTES",
        "FileKindError",
        "path_kind",
        "read_file",
        "readable_dir",
        "readable_file",
        "writable_dir",
        "writable_file",
    ),
    "labreplay._hashing": (
        "HASH_SCHEME_VERSION",
        "canonical_bytes",
        "canonical_form",
        "canonical_json",
        "normalised",
        "sha256_bytes",
        "sha256_file",
        "sha256_json",
        "short_hash",
    ),
    "labreplay._rng": (
        "derive_seed",
        "first_in_seeded_order",
        "make_rng",
    ),
    "labreplay.errors": (
        "AgentError",
        "DataError",
        "DownloadError",
        "LabreplayError",
        "RunFailedError",
        "SpecError",
        "StoreError",
    ),
    "labreplay.records._types": (
        "MISSING_TAG",
        "Missing",
        "Record",
        "from_json",
        "is_missing",
        "to_json",
        "value_or",
    ),
    "labreplay.runtime.header": ("HEADER_KIND",),
}

__all__ = [
    "HASH_SCHEME_VERSION",
    "HEADER_KIND",
    "MAX_INPUT_BYTES",
    "MISSING_TAG",
    "AgentError",
    "DataError",
    "DownloadError",
    "FileKindError",
    "LabreplayError",
    "Missing",
    "Record",
    "RunFailedError",
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
    "normalised",
    "path_kind",
    "read_file",
    "readable_dir",
    "readable_file",
    "sha256_bytes",
    "sha256_file",
    "sha256_json",
    "short_hash",
    "to_json",
    "value_or",
    "writable_dir",
    "writable_file",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_attributes(__name__, globals(), _SOURCES)
