"""Submissions: the ``submission.yaml`` schema, the validator of submission folders and their CLI.

- :mod:`benchmark.submissions.schema`: the YAML a person writes (pydantic, ``extra="forbid"``).
- :mod:`benchmark.submissions.validate`: ``sago submissions validate`` over the whole tree.
- :mod:`benchmark.submissions.validate_results`: the checks of one ``results/<set>/<version>/`` folder.
- :mod:`benchmark.submissions.changes`: ``validate --base REF``, what a pull request may change (git).
- :mod:`benchmark.submissions.failures`: the one-line problem report both validators produce.
- :mod:`benchmark.submissions.cli`: the ``submissions`` command group (``validate``, ``rehash``).

The schema's names are exported here; the validator is imported from its module (it is heavier).
"""

from benchmark.submissions.schema import (
    SUBMISSION_YAML_LIMIT,
    ApiModel,
    HubModel,
    LocalModel,
    PackagedModel,
    Submission,
    check_submissions_root,
    list_slugs,
    load_submission,
    submission_dir,
)

__all__ = [
    "SUBMISSION_YAML_LIMIT",
    "HubModel",
    "LocalModel",
    "ApiModel",
    "PackagedModel",
    "Submission",
    "check_submissions_root",
    "list_slugs",
    "load_submission",
    "submission_dir",
]
