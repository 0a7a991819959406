"""The authors' six datasets from the Hugging Face Hub, as the second suite ``sago-paper``.

They are not reachable from the machines that build sago-v1, so they are loaded with
``datasets.load_dataset`` on a user's machine. Each source names a revision; a branch name is resolved to
its commit sha when the data is loaded and that sha is what the manifest records, so a set built from
them is pinned even when the source table says ``main``. ``data_files`` points a source at local files
in the same format instead (how the tests run them, and how a mirror can be used).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from benchmark.variants.sources import Item, Source, Suite

Row = dict[str, Any]


@dataclass(frozen=True)
class HubSource:
    """One dataset on the Hub: repo, config, split, revision, and how a row becomes an item."""

    name: str
    repo: str
    config: str | None
    """``None`` for the default config."""
    split: str
    to_item: Callable[[Row, int], Item]
    """row (and its index) -> item."""
    license: str
    """licence as the dataset card states it."""
    revision: str = "main"
    """branch, tag or commit; branches are resolved to a commit sha at load time."""
    data_files: tuple[Path, ...] = ()
    """local files in the same format (json lines or parquet) to read instead of the Hub."""
    resolved: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
    """filled on load: the commit sha the revision pointed to."""

    @property
    def provenance(self) -> dict[str, str]:
        return {
            "repo": self.repo,
            "config": self.config or "default",
            "split": self.split,
            "revision": self.resolved.get("sha", self.revision),
            "license": self.license,
            "stands_in_for": "itself (authors' dataset)",
        }

    def load(self) -> list[Item]:
        import datasets

        if self.data_files:
            kind = "parquet" if self.data_files[0].suffix == ".parquet" else "json"
            rows = datasets.load_dataset(kind, data_files=[str(p) for p in self.data_files], split="train")
            self.resolved["sha"] = "local:" + ",".join(p.name for p in self.data_files)
        else:
            from huggingface_hub import HfApi

            sha = HfApi().dataset_info(self.repo, revision=self.revision).sha
            self.resolved["sha"] = str(sha) if sha else self.revision
            rows = datasets.load_dataset(
                self.repo, self.config, split=self.split, revision=self.resolved["sha"]
            )
        return [self.to_item(row, index) for index, row in enumerate(rows)]

    def with_files(self, *paths: Path) -> HubSource:
        """The same source reading local files instead of the Hub."""
        return replace(self, data_files=tuple(paths), resolved={})


def _clean(text: str) -> str:
    return " ".join(str(text).split())


def truthful_qa_item(row: Row, index: int) -> Item:
    answers = [row["best_answer"], *row.get("correct_answers", [])]
    return Item(str(index), _clean(row["question"]), tuple(dict.fromkeys(a for a in answers if a)))


def natural_questions_item(row: Row, index: int) -> Item:
    # Question text only (the authors drop the document); short answers are the gold aliases.
    shorts = row.get("annotations", {}).get("short_answers", [])
    texts = [t for answer in shorts for t in answer.get("text", [])]
    return Item(str(row["id"]), _clean(row["question"]["text"]), tuple(dict.fromkeys(texts)))


def alpaca_item(row: Row, index: int) -> Item:
    # Prompt = instruction plus input; Alpaca's outputs are long-form, not aliases, so no gold answers.
    prompt = row["instruction"].strip() + (
        f"\n\n{row['input'].strip()}" if row.get("input", "").strip() else ""
    )
    return Item(str(index), prompt)


def simpleqa_item(row: Row, index: int) -> Item:
    return Item(str(row.get("original_index", index)), _clean(row["problem"]), (str(row["answer"]),))


def trivia_qa_item(row: Row, index: int) -> Item:
    return Item(row["question_id"], _clean(row["question"]), tuple(row["answer"]["aliases"]))


def hotpot_qa_item(row: Row, index: int) -> Item:
    return Item(row["id"], _clean(row["question"]), (row["answer"],))


PAPER_SOURCES: dict[str, HubSource] = {
    "truthful_qa": HubSource(
        "truthful_qa", "truthfulqa/truthful_qa", "generation", "validation", truthful_qa_item, "Apache-2.0"
    ),
    "natural_questions": HubSource(
        "natural_questions",
        "google-research-datasets/natural_questions",
        "default",
        "validation",
        natural_questions_item,
        "CC-BY-SA-3.0",
    ),
    "alpaca": HubSource("alpaca", "tatsu-lab/alpaca", None, "train", alpaca_item, "CC-BY-NC-4.0"),
    "simpleqa_verified": HubSource(
        "simpleqa_verified", "google/simpleqa-verified", None, "eval", simpleqa_item, "CC-BY-4.0"
    ),
    "trivia_qa": HubSource(
        "trivia_qa", "mandarjoshi/trivia_qa", "rc", "validation", trivia_qa_item, "Apache-2.0"
    ),
    "hotpot_qa": HubSource(
        "hotpot_qa", "hotpotqa/hotpot_qa", "distractor", "validation", hotpot_qa_item, "CC-BY-SA-4.0"
    ),
}
SAGO_PAPER = Suite("sago-paper", tuple(PAPER_SOURCES), dict[str, Source](PAPER_SOURCES))
