"""What the leaderboard found, in words, for the site: the same engine as the README's sentences.

Every sentence comes from :mod:`benchmark.stats.claims` and every verdict from
:mod:`benchmark.stats.verdicts` (typed on the leaderboard document); this module only adapts its functions
to a :class:`Board`, so the site and the README cannot word the same counts differently. The headline is
the ``claims`` the file stores with ``headline`` true.
"""

from __future__ import annotations

from benchmark.site.board import Board
from benchmark.stats import claims
from benchmark.stats import verdicts as engine
from benchmark.stats.verdicts import (
    MIXED,
    NO_DIFFERENCE,
    NOT_TESTABLE,
    STEADIER,
    GridCell,
    Reversal,
    pair_verdict,
)

# the engine's names that tests and views read from here
__all__ = ["MIXED", "NO_DIFFERENCE", "NOT_TESTABLE", "STEADIER", "pair_verdict"]


def alpha(board: Board) -> float:
    """The level of every verdict (the file's ``alpha``)."""
    return engine.alpha(board.document)


def grid_cell(board: Board, dataset: str, axis: str) -> GridCell:
    """The verdict of one axis on one dataset."""
    return engine.grid_cell(board.document, dataset, axis)


def grid(board: Board) -> list[list[GridCell]]:
    """Rows of the dataset × axis grid (datasets, then all pooled)."""
    return engine.grid(board.document)


def reversals(board: Board) -> list[Reversal]:
    """Every reversal in words, significant ones first."""
    return engine.reversals(board.document)


def reversal_sentence(board: Board, reversal: Reversal) -> str:
    """One reversal as a sentence."""
    return engine.reversal_sentence(board.document, reversal)


def headline(board: Board) -> list[str]:
    """The stored headline sentences (``claims`` with ``headline`` true), whatever the number of models.

    The engine decides what is a headline: the comparisons between models only with two or more, the
    instability verdicts with one too (the README quotes them, and the site says the same). A file whose
    ``claims`` were not stored (examples built by hand) gets them from the same engine.
    """
    return [full or plain for (plain, full), headline in _claim_pairs(board) if headline]


def headline_claims(board: Board) -> list[tuple[str, str | None]]:
    """The headline as (sentence, details): the plain sentence first and the full one (test, n,
    correction) as its details, or the full sentence alone where it has no plain form."""
    return [pair for pair, headline in _claim_pairs(board) if headline]


def all_claims(board: Board) -> list[tuple[str, str | None]]:
    """Every stored finding as (sentence, details), in the file's order, headline ones included."""
    return [pair for pair, _ in _claim_pairs(board)]


def _claim_pairs(board: Board) -> list[tuple[tuple[str, str | None], bool]]:
    """((plain or full sentence, full sentence or None), headline) of every stored claim; a file whose
    ``claims`` were not stored (examples built by hand) gets them from the same engine."""
    stored = list(board.document.claims) or claims.claims(board.document)
    return [
        ((c["plain"], c["text"]) if "plain" in c else (c["text"], None), bool(c.get("headline")))
        for c in stored
    ]
