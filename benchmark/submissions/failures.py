"""The one-line problem report shared by the submission and results validators, and byte counts for people."""

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


def human_size(value: int) -> str:
    """A byte count for people.

    >>> human_size(512), human_size(2048), human_size(3 * 2**20)
    ('512 B', '2.0 KiB', '3.0 MiB')
    """
    if value < 1024:
        return f"{value} B"
    if value < 2**20:
        return f"{value / 1024:.1f} KiB"
    return f"{value / 2**20:.1f} MiB"
