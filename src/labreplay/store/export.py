"""Export the store's tables for analysis in pandas / duckdb.

Schema (one file per table, `<table>.parquet` | `.csv` | `.jsonl`):
- runs: run_id, suite, spec_hash, spec_id, branch, parent_run_id, agent, agent_params (JSON),
  model, endpoint, seed, status, provenance (JSON), started, finished, summary (JSON)
- specs: spec_hash, suite, protocol, spec_id, body (canonical JSON), created
- events: run_id, seq, kind, payload (JSON), prev_hash, hash
- forecasts: run_id, seq, scope, step, payload (JSON)
- scores: run_id, metric, value, detail (JSON)
- llm_calls: run_id, call_index, request_hash, model, prompt_tokens, completion_tokens,
  latency_s, finish_reason, retries, error, cached (1 = answered from the response cache)
JSON columns hold canonical JSON text.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from labreplay.errors import StoreError
from labreplay.store.sqlite import Store

TABLES = ("runs", "specs", "events", "forecasts", "scores", "llm_calls")
FORMATS = ("parquet", "csv", "jsonl")


def export_store(store: Store, out_dir: Path, formats: tuple[str, ...] = FORMATS) -> list[Path]:
    import pandas as pd

    unknown = set(formats) - set(FORMATS)
    if unknown:
        raise StoreError(f"unknown export format(s) {sorted(unknown)}; choose from {FORMATS}")
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name in TABLES:
        rows = store.table(name)
        # Columns from the schema, not the rows: an empty table still exports a header that
        # reads back (a header-less empty CSV makes pandas raise EmptyDataError).
        frame = pd.DataFrame(rows, columns=store.columns(name))
        for fmt in formats:
            path = out_dir / f"{name}.{fmt}"
            tmp = path.with_name(path.name + ".tmp")
            if fmt == "parquet":
                frame.to_parquet(tmp, index=False)
            elif fmt == "csv":
                frame.to_csv(tmp, index=False)
            else:
                with tmp.open("w", encoding="utf-8") as handle:
                    for row in rows:
                        handle.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
            os.replace(tmp, path)  # never leave a half-written export behind
            written.append(path)
    return written
