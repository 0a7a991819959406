"""Submissions: the ``submission.yaml`` schema, the validator of submission folders and their CLI.

The schema's names are exported here; the validator is imported from its module (it is heavier).
"""

from benchmark.submissions.schema import (
    ApiModel,
    HubModel,
    LocalModel,
    PackagedModel,
    Submission,
    check_submissions_root,
    list_slugs,
    load_submission,
)

__all__ = [
    "HubModel",
    "LocalModel",
    "ApiModel",
    "PackagedModel",
    "Submission",
    "check_submissions_root",
    "list_slugs",
    "load_submission",
]
