"""sago-bench: the Stability-Aware Generalization Objective (SAGO) as a reproducible benchmark."""

__version__ = "0.1.0"
