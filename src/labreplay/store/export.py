"""Export the store's tables for analysis in pandas / duckdb.

Schema (one file per table, `<table>.parquet` | `.csv` | `.jsonl`):
- runs: run_id, suite, spec_hash, spec_id, branch, parent_run_id, agent, agent_params (JSON),
  model, endpoint, seed, status, provenance (JSON), started, finished, summary (JSON)
- specs: spec_hash, suite, protocol, spec_id, body (canonical JSON), created
- events: run_id, seq, kind, payload (JSON), prev_hash, hash
- scores: run_id, metric, value, detail (JSON)
- llm_calls: run_id, call_index, request_hash, model, prompt_tokens, completion_tokens,
  latency_s, finish_reason, retries, error, cached (1 = answered from the response cache),
  purpose (policy | checkpoint | answer), cached_tokens (provider prefix cache), resolved_model
  (the model id the provider answered with), parse_error (why the reply was unusable),
  max_tokens (the response budget sent), prompt_chars, reply_chars, cost_usd (USD spent at
  the run's prices: provider-cached tokens at the cached rate, 0 for a response-cache hit,
  NULL when the model's price was unknown)
- signatures: subject (a run id, or `*store*` for the manifest of signed runs), key_id,
  message (the exact ASCII JSON signed), signature (Ed25519, base64), signed: written by
  `labreplay store sign` (docs/signing.md); empty for an unsigned store
The rows' JSON Schema (event payloads by kind included) is published beside this module as
`export_schema.json` (generated from `export_rows` and the suites' `events` modules).
JSON columns hold canonical JSON text. No cell holds a credential (every text is scrubbed on
export as when it was stored: `labreplay._provenance.scrub_text`).
"""

from __future__ import annotations

import json
from pathlib import Path

from labreplay._atomic import atomic_directory
from labreplay._provenance import scrub_text
from labreplay.errors import StoreError
from labreplay.store.sqlite import Store

TABLES = ("runs", "specs", "events", "scores", "llm_calls", "signatures")
FORMATS = ("parquet", "csv", "jsonl")


def export_store(
    store: Store, out_dir: str | Path, formats: tuple[str, ...] = FORMATS
) -> list[Path]:
    """Write every table in every format into `out_dir`, all or nothing: the files are built in
    a temporary directory beside it and moved in only when all of them are complete."""
    import pandas as pd

    unknown = set(formats) - set(FORMATS)
    if unknown:
        raise StoreError(f"unknown export format(s) {sorted(unknown)}; choose from {FORMATS}")
    if not formats:
        raise StoreError(f"no export format given; choose from {FORMATS}")
    out = Path(out_dir)
    names = []
    with atomic_directory(out) as tmp:
        for name in TABLES:
            # Scrubbed again on the way out: a store written by an older version, or before
            # a key was known, may hold one (`scrub_text`; JSON texts stay JSON).
            # A signature is exported as stored (base64 and ASCII JSON: nothing to scrub, and
            # a scrubbed message would no longer verify).
            keep = name == "signatures"
            rows = [
                {k: scrub_text(v) if isinstance(v, str) and not keep else v for k, v in row.items()}
                for row in (store.table(name) if store.has_table(name) else [])
            ]
            # Columns from the schema, not the rows: an empty table still exports a header
            # that reads back (a header-less empty CSV makes pandas raise EmptyDataError).
            columns = store.columns(name) if store.has_table(name) else store.schema_columns(name)
            frame = pd.DataFrame(rows, columns=columns)
            for fmt in formats:
                path = tmp / f"{name}.{fmt}"
                if fmt == "parquet":
                    frame.to_parquet(path, index=False)
                elif fmt == "csv":
                    frame.to_csv(path, index=False)
                else:
                    with path.open("w", encoding="utf-8") as handle:
                        for row in rows:
                            handle.write(json.dumps(row, ensure_ascii=False, sort_keys=True))
                            handle.write("\n")
                names.append(path.name)
    return [out / n for n in names]
