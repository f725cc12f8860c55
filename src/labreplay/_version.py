"""The package version (its own module, so core modules can import it during package init)."""

__version__ = "0.1.0"
