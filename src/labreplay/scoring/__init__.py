"""Pure scoring functions (no I/O). Definitions: METRICS.md."""
