"""The manifest and the Hugging Face dataset card of a built set, and :func:`freeze`, which writes both."""

from __future__ import annotations

from collections.abc import Mapping

import jinja2

from benchmark.documents import ManifestDocument
from benchmark.variants import llm
from benchmark.variants.build import RETRIES, WRITTEN_TAG, BuildResult, BuildSpec
from benchmark.variants.families import BUILDER_VERSION, FAMILIES, IDENTITY_VARIANT_ID, keys_of
from benchmark.variants.sources import NEAR_DUPLICATE, Source


def _size_category(rows: int) -> str:
    """The Hub's size bucket of a dataset with ``rows`` rows."""
    bounds = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"))
    return next((name for bound, name in bounds if rows < bound), "100K<n<1M")


def expected_cells(spec: BuildSpec, family: str) -> int:
    """Cells of ``family`` the grid asks for in one dataset."""
    cells = len(keys_of(FAMILIES.get(family)))
    if FAMILIES.get(family).rule is None:
        return cells * (spec.llm_items if family in spec.llm_families else 0)
    return cells * spec.n_items


def card_for(
    spec: BuildSpec, result: BuildResult, sources: Mapping[str, Source], manifest: ManifestDocument
) -> str:
    """A Hugging Face dataset card (YAML configs, one per dataset plus the rewrite log, then prose)."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("benchmark.variants", "templates"),
        autoescape=False,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["fmt"] = lambda value: f"{value:g}"
    return env.get_template("card.md.j2").render(
        spec=spec,
        sources=sources,
        manifest=manifest,
        builder_version=BUILDER_VERSION,
        identity=IDENTITY_VARIANT_ID,
        near_duplicate=NEAR_DUPLICATE,
        retries=RETRIES,
        size_category=_size_category(manifest.rows),
        produced=manifest.counts,
        produced_families=[f for f in FAMILIES],
        expected={name: {f: expected_cells(spec, f) for f in FAMILIES} for name in spec.datasets},
        not_produced=manifest.not_produced,
        rewriter=result.rewriter,
        attempts=spec.llm_attempts,
        min_similarity=llm.MIN_SIMILARITY,
        tolerance=llm.LENGTH_TOLERANCE,
        changes=CHANGES.get(spec.version, ()),
        written=manifest.written,
        written_tag=WRITTEN_TAG,
    )


CHANGES: dict[str, tuple[str, ...]] = {
    "v2": (
        "Length (×0.25, 0.5, 1.5, 2, 3) and form for the first 16 items of every dataset, written by the "
        "maintainers, read blind by a second maintainer and held to exact checks (spans verbatim, numbers, "
        "answers, kind, length bands); the achieved word ratio is a new column, `length_ratio`.",
        "Rule edits land only in the item's own text, never in the builder's wrapper, and never inside "
        "quotations, names, gold answers or the word a spelling question tests; fillers stay away from "
        "numbers; typos never make dictionary words and their strength is the number actually made; the "
        "irrelevant sentences carry no numbers.",
        "No two variants of an item share a prompt text (the identity control aside); cells that would "
        "collapse onto another are retried, then left out and counted in `manifest.json` (`not_made`).",
        "Items: no statement and its negation (misconceptions), no MiniLM near-duplicates; TriviaQA answers "
        "are the canonical answer then normalised aliases; CSV quoting and lost apostrophes repaired.",
    ),
}
