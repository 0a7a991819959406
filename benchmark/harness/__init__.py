"""The evaluation harness: run a model on a frozen variant set and store raw outputs for every axis.

Public entry points (see each module; ``benchmark.evaluate`` wraps the first for a model given in memory):

- ``benchmark.harness.evaluate.evaluate_submission(slug, options, *, root=None, backend=None,
  variant_set=None, ranks=ONE_PROCESS)``: load → collect → finalize for one submission (``sago evaluate``).
- ``benchmark.harness.collect.collect(backend, variant_set, results_dir, *, profile, batch_size=8,
  datasets=None, ranks=ONE_PROCESS, seed=42, run_info=None, progress=True)``: one rank's share of the
  batches :func:`~benchmark.harness.collect.global_batches` plans (one process: all of them).
- ``benchmark.harness.finalize.finalize(results_dir, *, world_size=None, extra=None)``: merge ranks.
- ``benchmark.models.loading.load_backend(submission, *, device=None, batch_size=None,
  engine=None, threads=None)``: a ready model backend (engine None: the device's default,
  ``benchmark.models.hf.default_engine``).
"""
