"""The one-line problem report shared by the submission and results validators."""

from __future__ import annotations

import unicodedata
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
        r"""The one-line form printed by the CLI.

        >>> Failure("submissions/a__b", "no submission.yaml", "add one").line()
        'submissions/a__b: no submission.yaml — add one'

        A path comes from a pull request, so its control and format characters are escaped: a newline
        in a folder name cannot start a line of its own (a forged ``ok:``), nor can a bidi control
        reorder what a reader sees.

        >>> Failure("a\nok: b\u202e", "stray", "remove it").line()
        'a\\nok: b\\u202e: stray — remove it'
        """
        return f"{visible(self.path)}: {self.problem} — {self.fix}"


def visible(text: str) -> str:
    r"""``text`` with every control or format character (Unicode Cc, Cf), and undecodable bytes kept as
    surrogates (Cs), written as a backslash escape.

    >>> visible("ok\tname\u200b")
    'ok\\tname\\u200b'
    """
    return "".join(
        ch.encode("unicode_escape", "backslashreplace").decode("ascii")
        if unicodedata.category(ch) in ("Cc", "Cf", "Cs")
        else ch
        for ch in text
    )
