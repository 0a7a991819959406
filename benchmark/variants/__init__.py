"""Frozen variant sets: meaning-preserving rewrites of sampled items, built reproducibly and verified.

Readers call :func:`load_variant_set` (``frozen.py``: the schema, the manifest and the verified reader).
Everything else builds a set, in the order ``sago variants build`` runs it:

* where items come from: ``sources.py`` (a :class:`~benchmark.variants.sources.Source` per dataset; the
  packaged ``sago-v1`` suite), ``hub_sources.py`` (the authors' Hub datasets, suite ``sago-paper``),
  ``suites.py`` (every suite by name);
* what a rewrite is: ``families.py`` (the catalogue: places, strengths, the rule or the LLM that makes
  each family, and the seeded rng of every variant), ``rules.py`` (the paper's surface families),
  ``ours.py`` and ``politeness.py`` (our families and the politeness templates), ``guards.py`` and
  ``textfacts.py`` (the spans and facts no rewrite may change);
* the LLM-made families (length, form): ``cells.py`` (the maintainers' written cells and their checks),
  ``llm.py`` (prompts, validation, retries and the rewrite log), ``rewriter.py`` (the three rewriter
  backends), ``llamacpp.py`` (building llama.cpp's server), ``similarity.py`` and ``calibration.py``
  (MiniLM similarity to the baseline and its floor);
* building and freezing: ``build.py`` (sample, rewrite, score), ``freeze.py`` and ``card.py`` (parquet,
  manifest, dataset card), ``release.py`` (build a release or prove a rebuild byte-identical),
  ``hub.py`` (publish and download);
* ``cli.py``: ``sago variants`` (build, rewrite, coverage, verify, list, publish, download, llama-server).

How to add a family or a dataset: docs/ARCHITECTURE.md.
"""

from benchmark.variants.frozen import VariantSet, load_variant_set

__all__ = ["VariantSet", "load_variant_set"]
