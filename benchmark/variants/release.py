"""Build a release folder, or prove that an existing release rebuilds byte-identically.

Released sets are never edited: building onto an existing version rebuilds it in a scratch folder
(replaying its rewrite log) and compares every file's sha256 with the released manifest.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from benchmark.documents import MANIFEST
from benchmark.errors import SagoError
from benchmark.paths import VARIANTS_DIR, cache_dir
from benchmark.provenance import sha256_file
from benchmark.variants import llm
from benchmark.variants.build import BuildSpec, build_set, llm_coverage, log_path
from benchmark.variants.freeze import freeze
from benchmark.variants.frozen import read_manifest, set_dir
from benchmark.variants.rewriter import Rewriter
from benchmark.variants.similarity import Embedder
from benchmark.variants.sources import Source


@dataclass(frozen=True)
class Outcome:
    """What a build did, and to which release folder."""

    path: Path
    created: bool
    """True when a new release was written, False when an existing one was rebuilt and matched."""
    manifest_sha256: str
    """the variant-set hash."""


def build_release(
    spec: BuildSpec,
    sources: Mapping[str, Source],
    embedder: Embedder,
    *,
    root: Path = VARIANTS_DIR,
    rewriter: Callable[[], Rewriter] | None = None,
    replay_from: Path | None = None,
    progress: bool = True,
) -> Outcome:
    """Write ``root/<set>/<version>``, or check an existing one rebuilds to the same bytes.

    The rewrite log replayed is ``replay_from`` if given, else the existing release's own log. New LLM
    attempts are checkpointed to the cache (``rewrites/<set>-<version>.jsonl``) before freezing.
    """
    target = set_dir(spec.set_name, spec.version, root)
    existing = (target / MANIFEST).exists()
    replay = llm.read_log(replay_from or (log_path(target) if existing else None))
    checkpoint = cache_dir() / "rewrites" / f"{spec.set_name}-{spec.version}.jsonl"
    with tempfile.TemporaryDirectory(prefix="sago-build-") as tmp:
        scratch = Path(tmp) / spec.version
        scratch.mkdir()
        result = build_set(
            spec,
            sources,
            embedder,
            rewriter=rewriter,
            replay=replay,
            checkpoint=checkpoint,
            progress=progress,
        )
        accepted, cells = llm_coverage(result.attempts)
        accepted += sum(c.status() == "made" for c in result.written)
        cells += len(result.written)
        if cells and accepted < spec.min_llm_coverage * cells:
            raise SagoError(
                f"only {accepted} of {cells} length/form cells ({accepted / cells:.0%}) are made; "
                f"a release needs {spec.min_llm_coverage:.0%}: write and read the missing cells, run "
                "`sago variants rewrite` further (it resumes from its log) or lower --min-llm-coverage"
            )
        freeze(spec, result, sources, scratch)
        if existing:
            _compare(scratch, target)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copytree(scratch, target)
    return Outcome(target, not existing, sha256_file(target / MANIFEST))


def _compare(rebuilt: Path, released: Path) -> None:
    """Raise unless every file of the rebuild has the released file's sha256."""
    want = {**read_manifest(released).files, MANIFEST: sha256_file(released / MANIFEST)}
    got = {**read_manifest(rebuilt).files, MANIFEST: sha256_file(rebuilt / MANIFEST)}
    differ = sorted(name for name in set(want) | set(got) if want.get(name) != got.get(name))
    if differ:
        raise SagoError(
            f"rebuild of {released} differs in {', '.join(differ)}; released sets are never "
            "edited: build a new --version instead"
        )
