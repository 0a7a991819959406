"""The evaluation harness: run a model on a frozen variant set and store raw outputs for every axis.

Public entry points (their signatures are in each module; ``benchmark.evaluate`` wraps the first for a
model given in memory):

- ``benchmark.harness.evaluate.evaluate_submission``: load → collect → finalize for one submission
  (``sago evaluate``).
- ``benchmark.harness.collect.collect``: one rank's share of the batches
  :func:`~benchmark.harness.collect.global_batches` plans (one process: all of them).
- ``benchmark.harness.finalize.finalize``: merge the ranks' parts into the results folder.
- ``benchmark.models.loading.load_backend``: a ready model backend (engine None: the device's default,
  ``benchmark.models.hf.default_engine``).
"""
