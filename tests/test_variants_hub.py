"""Publishing to and downloading from the Hub (not reachable here: the calls' arguments are checked
against a stand-in API, and the download path runs the real verifier), plus the CLI surface."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from benchmark.cli import main
from benchmark.errors import SagoError
from benchmark.variants.hub import download, publish

pytestmark = pytest.mark.usefixtures("private_cache")


class FakeApi:
    """Records HfApi calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def create_repo(self, **kwargs: Any) -> None:
        self.calls.append(("create_repo", kwargs))

    def upload_folder(self, **kwargs: Any) -> Any:
        self.calls.append(("upload_folder", kwargs))
        return type("Commit", (), {"commit_url": "https://hub.example/commit/abc"})()

    def create_tag(self, **kwargs: Any) -> None:
        self.calls.append(("create_tag", kwargs))


def test_publish_creates_a_dataset_repo_uploads_the_folder_and_tags(toy_release: Path) -> None:
    api = FakeApi()
    url = publish("toy", "v1", "sago/variants", "v1", root=toy_release, api=api)
    assert url == "https://hub.example/commit/abc"
    assert [name for name, _ in api.calls] == ["create_repo", "upload_folder", "create_tag"]
    assert api.calls[0][1] == {
        "repo_id": "sago/variants",
        "repo_type": "dataset",
        "private": False,
        "exist_ok": True,
    }
    assert api.calls[1][1]["folder_path"] == str(toy_release / "toy" / "v1")
    assert api.calls[1][1]["repo_type"] == "dataset"
    assert api.calls[2][1]["tag"] == "v1" and api.calls[2][1]["repo_type"] == "dataset"


def test_publish_refuses_a_corrupted_set_and_a_bad_repo_id(toy_release: Path) -> None:
    with pytest.raises(SagoError, match="invalid --repo-id"):
        publish("toy", "v1", "no-slash", "v1", root=toy_release, api=FakeApi())
    (toy_release / "toy" / "v1" / "README.md").write_text("edited")
    api = FakeApi()
    with pytest.raises(SagoError, match="README.md has sha256"):
        publish("toy", "v1", "sago/variants", "v1", root=toy_release, api=api)
    assert api.calls == []


def _snapshot_from(folder: Path, corrupt: bool = False):  # type: ignore[no-untyped-def]
    seen: dict[str, Any] = {}

    def fetch(**kwargs: Any) -> str:
        seen.update(kwargs)
        shutil.copytree(folder, kwargs["local_dir"])
        if corrupt:
            parquet = Path(kwargs["local_dir"]) / "data" / "gsm8k.parquet"
            parquet.write_bytes(parquet.read_bytes()[:-10])
        return str(kwargs["local_dir"])

    return fetch, seen


def test_download_fetches_the_revision_and_verifies(toy_release: Path, tmp_path: Path) -> None:
    fetch, seen = _snapshot_from(toy_release / "toy" / "v1")
    variant_set = download("sago/variants", "v1", "toy", "v1", root=tmp_path / "fresh", fetch=fetch)
    assert seen["repo_id"] == "sago/variants" and seen["revision"] == "v1" and seen["repo_type"] == "dataset"
    assert variant_set.path == tmp_path / "fresh" / "toy" / "v1"
    assert (
        variant_set.sha256
        == download("sago/variants", "v1", "toy", "v1", root=tmp_path / "fresh", fetch=fetch).sha256
    )  # same release again: kept


def test_download_refuses_a_corrupted_snapshot(toy_release: Path, tmp_path: Path) -> None:
    fetch, _ = _snapshot_from(toy_release / "toy" / "v1", corrupt=True)
    with pytest.raises(SagoError, match="gsm8k.parquet has sha256"):
        download("sago/variants", "v1", "toy", "v1", root=tmp_path / "fresh", fetch=fetch)
    assert not (tmp_path / "fresh" / "toy" / "v1").exists()


def test_cli_verify_ok_and_one_line_error(toy_release: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["variants", "verify", "--set", "toy", "--version", "v1", "--root", str(toy_release)]) == 0
    assert "ok " in capsys.readouterr().out
    parquet = toy_release / "toy" / "v1" / "data" / "trivia_qa.parquet"
    parquet.write_bytes(b"x" + parquet.read_bytes())
    assert main(["variants", "verify", "--set", "toy", "--version", "v1", "--root", str(toy_release)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "trivia_qa.parquet" in err and err.count("\n") == 1


def test_cli_unknown_set_and_dataset(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["variants", "build", "--set", "sago-v2", "--root", str(tmp_path)]) == 2
    assert "unknown variant set 'sago-v2'" in capsys.readouterr().err
    assert (
        main(["variants", "build", "--dataset", "trivia", "--root", str(tmp_path), "--rewriter", "none"]) == 2
    )
    assert "did you mean 'trivia_qa'" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["build", "verify", "list", "publish", "download"])
def test_every_command_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["variants", command, "--help"]) == 0
    assert "Usage:" in capsys.readouterr().out
