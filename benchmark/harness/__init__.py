"""The evaluation harness: run a model on a frozen variant set and store raw outputs for every axis.

Public entry points (see each module):

- ``benchmark.harness.evaluate.evaluate_submission(slug, options, *, root=None, backend=None,
  variant_set=None)``: load → collect → finalize for one submission (what ``sago evaluate`` calls).
- ``benchmark.harness.collect.collect(backend, variant_set, results_dir, *, profile, batch_size=8,
  datasets=None, rank=0, world_size=1, seed=42, run_info=None, progress=True)``: one rank's share.
- ``benchmark.harness.finalize.finalize(results_dir, *, world_size=None, extra=None)``: merge ranks.
- ``benchmark.models.loading.load_backend(submission, *, device=None, batch_size=None,
  engine="single_prefill", threads=None)``: a ready model backend.
"""
