"""The one-line problem report shared by the submission and results validators."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Failure:
    """One problem found by the validator."""

    path: str
    """file or folder, relative to the folder that holds ``submissions/``."""
    problem: str
    """what is wrong, in a few words."""
    fix: str
    """what the submitter should do about it."""

    def line(self) -> str:
        """The one-line form printed by the CLI.

        >>> Failure("submissions/a__b", "no submission.yaml", "add one").line()
        'submissions/a__b: no submission.yaml — add one'
        """
        return f"{self.path}: {self.problem} — {self.fix}"
