"""Semantic similarity of a variant to its baseline: the packaged all-MiniLM-L6-v2, mean-pooled.

Scores are frozen into the variant set, so they must come out the same on every rebuild. Each text is
embedded on its own (a padded batch would make a vector depend on its batch neighbours in the last
bits), and the cosine is rounded to 4 decimals so last-bit float noise across machines rarely matters;
where it does (a cosine on a rounding boundary), a rebuild's value is within :data:`SIMILARITY_TOLERANCE`.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Protocol

import numpy as np
from tqdm import tqdm

SIMILARITY_DECIMALS = 4
SIMILARITY_TOLERANCE = 10.0**-SIMILARITY_DECIMALS + 1e-9
"""How far a rebuilt ``similarity`` may sit from the frozen one: one rounding step. The cosine's last float
bits depend on the CPU's vector width, thread count and load, so a value on a rounding boundary can round
either way on another machine; every other column of a rebuild is byte-identical."""


class Embedder(Protocol):
    """Maps texts to unit-length vectors."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """[len(texts), dim] float32, rows L2-normalised."""
        ...


class MiniLM:
    """all-MiniLM-L6-v2 from the packaged sentence-transformers folder (BERT + mean pooling).

    ``cache`` names an optional sqlite file of vectors keyed by token ids; since a vector depends on its
    ids only, a cached vector is the vector a fresh computation gives on the same machine.
    """

    def __init__(self, cache: Path | None = None) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        from benchmark.packaged import materialise

        folder = str(materialise("all-minilm-l6-v2"))
        self._torch = torch
        self._tokenizer = AutoTokenizer.from_pretrained(folder)
        self._model = AutoModel.from_pretrained(folder).eval()
        self._memo: dict[tuple[int, ...], np.ndarray] = {}
        # A vector's last bits depend on the vector width torch's kernels use: a cache filled under
        # another CPU setting would mix two sets of bits into one build, so each setting has its own file.
        capability = torch.backends.cpu.get_cpu_capability().lower()
        self._store = (
            _VectorStore(cache.with_name(f"{cache.stem}.{capability}{cache.suffix}")) if cache else None
        )

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        # MiniLM is uncased and WordPiece drops whitespace, so many variants (spacing, letter case)
        # share their baseline's token ids: each distinct id sequence is embedded once, and alone
        # (no batch, no padding), so its vector is a function of its ids only, never of its neighbours.
        encoded = self._tokenizer(list(texts), truncation=True, max_length=256)["input_ids"]
        keys = [tuple(ids) for ids in encoded]
        distinct = sorted(set(keys), key=lambda ids: (len(ids), ids))
        missing = [ids for ids in distinct if ids not in self._memo]
        if self._store is not None:
            self._memo.update(self._store.get(missing))
            missing = [ids for ids in missing if ids not in self._memo]
        for start in tqdm(
            range(0, len(missing), 256), desc="similarity", unit="256 texts", disable=len(missing) < 500
        ):
            fresh = {ids: self._embed_one(ids) for ids in missing[start : start + 256]}
            self._memo.update(fresh)
            if self._store is not None:
                self._store.put(fresh)
        return np.stack([self._memo[key] for key in keys]) if keys else np.zeros((0, 384), dtype=np.float32)

    def _embed_one(self, ids: tuple[int, ...]) -> np.ndarray:
        torch = self._torch
        with torch.no_grad():
            states = self._model(input_ids=torch.tensor([ids])).last_hidden_state[0]  # [tokens, 384]
        return np.asarray(torch.nn.functional.normalize(states.mean(0), dim=-1).numpy(), dtype=np.float32)


class _VectorStore:
    """Vectors on disk in sqlite, keyed by the sha256 of the token ids (safe for concurrent builders)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, timeout=120)
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB)")

    @staticmethod
    def _key(ids: tuple[int, ...]) -> str:
        return hashlib.sha256(np.asarray(ids, dtype=np.int64).tobytes()).hexdigest()

    def get(self, wanted: Sequence[tuple[int, ...]]) -> dict[tuple[int, ...], np.ndarray]:
        found: dict[tuple[int, ...], np.ndarray] = {}
        for ids in wanted:
            row = self._db.execute("SELECT vector FROM vectors WHERE key = ?", (self._key(ids),)).fetchone()
            if row is not None:
                found[ids] = np.frombuffer(row[0], dtype=np.float32).copy()
        return found

    def put(self, vectors: dict[tuple[int, ...], np.ndarray]) -> None:
        with self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                [(self._key(ids), v.astype(np.float32).tobytes()) for ids, v in vectors.items()],
            )


@lru_cache(maxsize=2)
def minilm(cache: Path | None = None) -> MiniLM:
    """One MiniLM per process (loading costs seconds)."""
    return MiniLM(cache)


def cosine_to(baseline: np.ndarray, variant: np.ndarray) -> float:
    """Rounded cosine of two unit vectors; exactly 1.0 when they are the same vector.

    >>> cosine_to(np.array([1.0, 0.0]), np.array([0.6, 0.8]))
    0.6
    """
    if np.array_equal(baseline, variant):
        return 1.0
    return round(float(np.dot(baseline, variant)), SIMILARITY_DECIMALS)


def similarities(embedder: Embedder, pairs: Sequence[tuple[str, str]]) -> list[float]:
    """Cosine of each (baseline, variant) pair; identical texts (or identical vectors) score exactly 1.0."""
    # each distinct text once, in sorted order, so no score depends on the order of the pairs
    unique = sorted({text for pair in pairs for text in pair})
    vectors = dict(zip(unique, embedder.embed(unique), strict=False)) if unique else {}
    return [1.0 if a == b else cosine_to(vectors[a], vectors[b]) for a, b in pairs]


def cosine_matrix(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """[len(texts), len(texts)] cosine similarities (rows are unit vectors, so a dot product)."""
    vectors = embedder.embed(list(texts))
    return np.asarray(vectors @ vectors.T, dtype=np.float64)
