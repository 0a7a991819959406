"""Frozen variant sets: meaning-preserving rewrites of sampled items, built reproducibly and verified.

Readers call :func:`load_variant_set`; builders use ``sago variants build`` (see :mod:`.cli`).
"""

from benchmark.variants.frozen import VariantSet, load_variant_set

__all__ = ["VariantSet", "load_variant_set"]
