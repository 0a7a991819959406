"""SAGO's variant sets inside lm-evaluation-harness, and its sample logs back into SAGO.

- ``sago export lm-eval`` (:mod:`benchmark.lmeval.export`): one lm-eval task per dataset plus a group,
  reading copies of the frozen parquet files kept beside the tasks and selecting exactly the rows of a
  run profile.
- ``sago import lm-eval`` (:mod:`benchmark.lmeval.ingest`): lm-eval's ``--log_samples`` files become a
  results folder whose response-only measures (BLEU, BERTScore, embedding cosine, mirroring, accuracy)
  are computed by the same functions as a sago run's; the measures that need the model are NaN and
  named in ``not_measured``.

lm-eval itself is never imported here: the export writes YAML and the import reads JSON, so the core
package keeps working without the optional ``peer`` extra.
"""
