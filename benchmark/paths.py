"""Where things live, and the checks that keep names from strangers inside their folders."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from benchmark.errors import SagoError

REPO_ROOT = Path(__file__).resolve().parent.parent
VARIANTS_DIR = REPO_ROOT / "variants"
SUBMISSIONS_DIR = REPO_ROOT / "submissions"
LEADERBOARD_DIR = REPO_ROOT / "leaderboard"

# A slug is `<org>__<model>`: lower-case letters, digits, '.', '-' and single '_' inside each half.
# No '/', no '..', no leading dot: a slug from a pull request can never name a path outside its folder.
_PART = r"[a-z0-9](?:[a-z0-9.\-]|_(?!_)){0,62}[a-z0-9]"
SLUG_RE = re.compile(rf"^{_PART}__{_PART}$")
SLUG_RULE = (
    "'<org>__<model>', each half 2-64 lower-case letters, digits, '.', '-' or single '_', "
    "beginning and ending with a letter or digit"
)
"""The rule SLUG_RE holds, in the words every refusal of a submission name uses."""
# Dataset names, variant-set names and versions: a conservative identifier alphabet.
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_\-.]{0,63}$")


def cache_dir() -> Path:
    """Download cache for pinned registry artefacts (``SAGO_CACHE`` overrides)."""
    path = Path(os.environ.get("SAGO_CACHE", REPO_ROOT / ".cache"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def check_slug(slug: str) -> str:
    """Return ``slug`` if it is a valid ``<org>__<model>`` submission name, else raise.

    >>> check_slug("huggingfacetb__smollm2-135m-instruct")
    'huggingfacetb__smollm2-135m-instruct'
    >>> check_slug("../etc__passwd")
    Traceback (most recent call last):
    benchmark.errors.SagoError: invalid submission name '../etc__passwd': use '<org>__<model>', each half ...
    """
    if not SLUG_RE.fullmatch(slug) or ".." in slug:
        raise SagoError(f"invalid submission name {slug!r}: use {SLUG_RULE}")
    return slug


def is_name(name: str) -> bool:
    """Whether ``name`` is a safe identifier (dataset, set, version): what :func:`check_name` accepts."""
    return NAME_RE.fullmatch(name) is not None and ".." not in name


def check_name(name: str, what: str) -> str:
    """Return ``name`` if it is a safe identifier (dataset, set, version), else raise."""
    if not is_name(name):
        raise SagoError(f"invalid {what} {name!r}: use lower-case letters, digits, '_', '-', '.'")
    return name


def inside(base: Path, *parts: str) -> Path:
    """Join ``parts`` under ``base`` and refuse any result that resolves outside ``base``."""
    target = base.joinpath(*parts).resolve()
    if not target.is_relative_to(base.resolve()):
        raise SagoError(f"path {'/'.join(parts)!r} escapes {base}")
    return target


def replace_folder(new: Path, target: Path) -> None:
    """Put the finished folder ``new`` where ``target`` is: two renames, old deleted last (a crash between
    them leaves the old one complete under ``.<name>.old``)."""
    old = target.with_name(f".{target.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if target.exists():
        target.rename(old)
    new.rename(target)
    shutil.rmtree(old, ignore_errors=True)


def check_output(path: Path, option: str, *, folder: bool) -> None:
    """Refuse an output path a command cannot safely replace, before anything is written: it must be new,
    or a plain file or folder (outputs are renamed over it: ``--out /dev/full`` would replace the device
    node), in a folder this process can create files in (``/proc`` is not)."""
    if path.is_symlink():
        raise SagoError(f"{option} {path}: is a symbolic link; pass the path it points to or a new one")
    if path.exists():
        if folder and not path.is_dir():
            kind = "a file" if path.is_file() else "a device, pipe or socket"
            raise SagoError(f"{option} {path}: is {kind}, not a folder; pass a folder or a new path")
        if not folder and not path.is_file():
            kind = "a folder" if path.is_dir() else "a device, pipe or socket"
            raise SagoError(f"{option} {path}: is not a regular file ({kind}); pass a file path or a new one")
    parent = Path(os.path.abspath(path)).parent  # "new/../docs" names docs/, whether new/ exists or not
    if not parent.is_dir():
        raise SagoError(f"{option} {path}: the folder {parent} does not exist; create it or fix the path")
    try:
        with tempfile.NamedTemporaryFile(dir=parent, prefix=".sago-probe-"):
            pass
    except OSError as err:
        raise SagoError(
            f"{option} {path}: cannot create files in {parent} ({err.strerror or err}); pass a writable path"
        ) from None
