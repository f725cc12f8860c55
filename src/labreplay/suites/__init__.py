"""Benchmark suites built on the shared engine. The core never imports them."""
