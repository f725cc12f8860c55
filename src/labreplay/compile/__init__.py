"""Partition + Bind: records -> frozen, content-hashed environment specs."""

from labreplay.compile.spec import EnvironmentSpec, load_spec, write_spec

__all__ = ["EnvironmentSpec", "load_spec", "write_spec"]
