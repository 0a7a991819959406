"""The fixture checkout (``site_tree``) installed as the one the commands read, and a fingerprint of every
file under a folder (the 'before' and 'after' of a command that must change nothing)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from benchmark import paths
from benchmark.site.build import MARKER
from benchmark.variants import frozen as freeze
from helpers.site_tree import SiteTree, make_site_tree


def snapshot(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root``, hidden ones included (a leftover temporary file shows)."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def install_site_tree(root: Path, monkeypatch: pytest.MonkeyPatch) -> SiteTree:
    """Fixture checkout + a site a previous build made; evaluate and the variant reader look here."""
    tree = make_site_tree(root)
    (root / "site").mkdir()
    (root / "site" / MARKER).write_text("built\n")
    (root / "site" / "index.html").write_text("the published site\n")
    monkeypatch.setattr(paths, "SUBMISSIONS_DIR", tree.submissions)
    defaults = freeze.load_variant_set.__defaults__
    assert defaults is not None
    monkeypatch.setattr(freeze.load_variant_set, "__defaults__", (*defaults[:-1], tree.variants))
    return tree
