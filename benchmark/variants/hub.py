"""Publish a frozen set to the Hugging Face Hub as a dataset repo, and download + verify one.

A release is a tag on the dataset repo (``v1``); the files are the set's folder as is, so the card's
``configs`` make ``datasets.load_dataset("ORG/NAME", "<dataset>", revision="v1")`` work on the Hub too.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmark.documents import MANIFEST
from benchmark.errors import SagoError
from benchmark.paths import VARIANTS_DIR
from benchmark.provenance import sha256_file
from benchmark.variants.frozen import VariantSet, load_variant_set, set_dir

SNAPSHOT_EXTRAS = frozenset({".cache", ".gitattributes"})
"""What a Hub snapshot adds to the set's files (download metadata); never copied into variants/."""


def _check_repo_id(repo_id: str) -> str:
    parts = repo_id.split("/")
    if len(parts) != 2 or not all(parts) or ".." in repo_id:
        raise SagoError(f"invalid --repo-id {repo_id!r}: use ORG/NAME")
    return repo_id


def publish(
    set_name: str,
    version: str,
    repo_id: str,
    tag: str,
    *,
    root: Path = VARIANTS_DIR,
    api: Any = None,
    private: bool = False,
) -> str:
    """Verify the local set, then create the dataset repo, upload the folder and tag the commit.

    Returns:
        The URL of the upload commit as the Hub reports it.
    """
    variant_set = load_variant_set(set_name, version, root)  # never publish a set that fails verification
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi()
    repo = {"repo_id": _check_repo_id(repo_id), "repo_type": "dataset"}
    api.create_repo(**repo, private=private, exist_ok=True)
    message = f"{set_name} {version} (variant-set sha256 {variant_set.sha256[:12]})"
    commit = api.upload_folder(**repo, folder_path=str(variant_set.path), commit_message=message)
    api.create_tag(**repo, tag=tag, tag_message=f"{set_name} {version}, manifest sha256 {variant_set.sha256}")
    return str(getattr(commit, "commit_url", commit))


def download(
    repo_id: str,
    revision: str,
    set_name: str,
    version: str,
    *,
    root: Path = VARIANTS_DIR,
    fetch: Callable[..., str] | None = None,
    expected_sha256: str | None = None,
) -> VariantSet:
    """Fetch a released set into ``root/<set>/<version>`` and verify it before it is used.

    An existing local copy is kept if it is the same release (same manifest sha256); a different one is
    an error, because released versions are never edited.
    """
    _check_repo_id(repo_id)
    if fetch is None:
        from huggingface_hub import snapshot_download

        fetch = snapshot_download
    target = set_dir(set_name, version, root)
    with tempfile.TemporaryDirectory() as tmp:
        staging = Path(tmp) / "snapshot"
        fetch(repo_id=repo_id, repo_type="dataset", revision=revision, local_dir=str(staging))
        fetched = load_variant_set(
            set_name,
            version,
            _as_root(staging, set_name, version),
            expected_sha256=expected_sha256,
            ignore=SNAPSHOT_EXTRAS,
        )
        if (target / MANIFEST).exists():
            if sha256_file(target / MANIFEST) != fetched.sha256:
                raise SagoError(
                    f"{target} holds a different {set_name} {version}; released sets are never "
                    "edited: remove the local copy or download into another --root"
                )
            return load_variant_set(set_name, version, root)
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.downloading")  # renamed into place only when complete
        shutil.rmtree(partial, ignore_errors=True)
        shutil.copytree(staging, partial, ignore=shutil.ignore_patterns(*SNAPSHOT_EXTRAS))
        partial.rename(target)
    return load_variant_set(set_name, version, root)


def _as_root(staging: Path, set_name: str, version: str) -> Path:
    """Present a flat snapshot folder as ``<root>/<set>/<version>`` so the one verifier can read it."""
    root = staging.parent / "root"
    (root / set_name).mkdir(parents=True, exist_ok=True)
    link = root / set_name / version
    if not link.exists():
        link.symlink_to(staging, target_is_directory=True)
    return root
