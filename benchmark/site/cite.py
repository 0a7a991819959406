"""Where the benchmark lives and how to cite it: the footer of every page and the methodology page.

The repository URL is configurable (``sago leaderboard build --repo-url``) so a fork's site links to
the fork; the paper is fixed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from benchmark.errors import SagoError

DEFAULT_REPO_URL = "https://github.com/sago-bench/sago-bench"
"""Repository the site links to unless ``--repo-url`` says otherwise."""
ARXIV_ID = "2610.01428"
PAPER_AUTHORS = ("Omar", "Jabarin", "Rozenshtein", "Himelstein", "Mendelson", "LeVi")


@dataclass(frozen=True)
class Citation:
    """Links and BibTeX shown on every page."""

    repo_url: str
    """base URL of the repository (no trailing slash)."""
    version: str
    """sago-bench version that wrote the leaderboard."""

    @property
    def paper_url(self) -> str:
        """The paper on arXiv."""
        return f"https://arxiv.org/abs/{ARXIV_ID}"

    @property
    def site_url(self) -> str:
        """Where the built site is served: GitHub Pages of the repository (``https://ORG.github.io/REPO/``),
        else the repository URL itself; the base of every page's canonical and og:url address.

        >>> Citation("https://github.com/sago-bench/sago-bench", "0.1").site_url
        'https://sago-bench.github.io/sago-bench/'
        >>> Citation("https://example.org/bench/", "0.1").site_url
        'https://example.org/bench/'
        """
        found = re.fullmatch(r"https://github\.com/([^/]+)/([^/]+?)/?", self.repo_url)
        if found:
            return f"https://{found.group(1).lower()}.github.io/{found.group(2)}/"
        return self.repo_url.rstrip("/") + "/"

    def repo_path(self, path: str) -> str:
        """A file or folder of the repository's default branch.

        >>> Citation("https://github.com/x/y/", "0.1").repo_path("docs/SUBMITTING.md")
        'https://github.com/x/y/blob/HEAD/docs/SUBMITTING.md'
        """
        return f"{self.repo_url.rstrip('/')}/blob/HEAD/{path}"

    @property
    def bibtex(self) -> str:
        """BibTeX entries for the paper and for this benchmark."""
        authors = " and ".join(PAPER_AUTHORS)
        return (
            "@misc{omar2026sago,\n"
            "  title         = {{SAGO}: Stability-Aware Generalization Objective},\n"
            f"  author        = {{{authors}}},\n  year          = {{2026}},\n"
            f"  eprint        = {{{ARXIV_ID}}},\n  archivePrefix = {{arXiv}},\n"
            f"  url           = {{{self.paper_url}}}\n}}\n"
            f"@misc{{sagobench,\n  title         = {{sago-bench: a leaderboard of prompt stability}},\n"
            f"  year          = {{2026}},\n  note          = {{version {self.version}}},\n"
            f"  howpublished  = {{\\url{{{self.repo_url.rstrip('/')}}}}}\n}}"
        )


def check_repo_url(url: str) -> str:
    """Accept only an https URL without quotes or spaces (it is written into every page).

    >>> check_repo_url("https://github.com/a/b")
    'https://github.com/a/b'
    """
    if not url.startswith("https://") or any(c in url for c in " \"'<>`"):
        raise SagoError(f"--repo-url {url!r} must be an https:// URL without spaces or quotes")
    return url.rstrip("/")
