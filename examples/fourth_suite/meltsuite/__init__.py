"""meltsuite: the README's worked example of a fourth labreplay suite.

A small, complete suite written only against `labreplay.sdk*` and `labreplay.errors`: forecast
the melting point of held-out elements from a few recorded ones. It exists to show (and, in
the project's tests, to prove) that a suite outside the built-in three gets the CLI, the
Python API, `--isolate`, `serve` (MCP), resume, `store verify` and `check_suite` with no
change in the core. It is not a benchmark: 18 rows cannot rank agents.
"""
