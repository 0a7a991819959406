"""The package version (pyproject.toml says the same); a module of its own so reading it imports nothing."""

__version__ = "0.1.0"
