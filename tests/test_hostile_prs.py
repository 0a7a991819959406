"""A hostile submitter's pull requests, each judged as CI judges it.

One base repository is built once (the fixture checkout, this package, ``.ci/`` and the Makefile committed
on ``main``); each case is a branch of it holding one or more commits. Most cases run the validator's
entry point (``sago submissions validate --base main``) in the case's checkout; the ones about the gate
itself (a stale base, a replaced Makefile target, a replaced gate) run the real ``.ci/gate`` the way CI
and the maintainers do: ``git show main:.ci/gate | bash -s -- main PYTHON``. Every case names the paths
it expects refused and a phrase of each refusal, or expects the pull request accepted.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from helpers.repo import git
from helpers.site_tree import SiteTree, make_site_tree, submission_yaml

from benchmark.cli import main

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
Op = Callable[[Path], None]
NEW = "submissions/acme__new-model"
TAKEN = "Tiny B (synthetic)"  # an existing submission's display name in the fixture
OUTSIDE = "a file outside submissions/"
HISTORY = "the pull request's history would keep it"


def write(path: str, data: str | bytes, mode: int = 0o644) -> Op:
    def op(root: Path) -> None:
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data.encode() if isinstance(data, str) else data)
        target.chmod(mode)

    return op


def remove(path: str) -> Op:
    """Delete a file and the folders it leaves empty (as a fresh checkout of the next commit has it)."""

    def op(root: Path) -> None:
        (root / path).unlink()
        for folder in (root / path).parents:
            if folder == root or any(folder.iterdir()):
                break
            folder.rmdir()

    return op


def link(path: str, target: str) -> Op:
    def op(root: Path) -> None:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).symlink_to(target)

    return op


def yaml_of(name: str = "New model", index: int = 9, **extra: object) -> str:
    return yaml.safe_dump({**submission_yaml("acme__new-model", name, index), **extra}, allow_unicode=True)


def submission(slug: str = "acme__new-model", name: str = "New model", readme: str | bytes = "# New\n") -> Op:
    def op(root: Path) -> None:
        write(f"submissions/{slug}/submission.yaml", yaml_of(name))(root)
        write(f"submissions/{slug}/README.md", readme)(root)

    return op


def nested_repository(path: str) -> Op:
    def op(root: Path) -> None:
        folder = root / path
        folder.mkdir(parents=True)
        git(folder, "init", "-q")
        (folder / "x").write_text("x\n")
        git(folder, "add", "x")
        git(folder, "commit", "-q", "-m", "inner")

    return op


@dataclass(frozen=True)
class Case:
    """One pull request: its commits (each a list of edits) and what the gate says."""

    commits: list[list[Op]]
    refused: dict[str, str] = field(default_factory=dict)
    """path (or ``commit``) -> a phrase of its refusal; empty: the pull request is accepted."""


def names(kind: str, text: str) -> Case:
    return Case([[submission(name=text)]], {f"{NEW}/submission.yaml": kind})


README_TOO_BIG = "x" * (64 * 1024 + 1)
CASES: dict[str, Case] = {
    # what may pass
    "a new submission": Case([[submission()]]),
    "a new submission in two commits, README first": Case(
        [[write(f"{NEW}/README.md", "# New\n")], [write(f"{NEW}/submission.yaml", yaml_of())]]
    ),
    "a new submission whose yaml is fixed in a second commit": Case(
        [[submission(name="Draft")], [write(f"{NEW}/submission.yaml", yaml_of("New model"))]]
    ),
    "a README of exactly 64 KiB": Case([[submission(readme="x" * 64 * 1024)]]),
    # the code, CI, tests and site
    "a new file under benchmark/": Case(
        [[submission(), write("benchmark/evil.py", "import os\n")]], {"benchmark/evil.py": OUTSIDE}
    ),
    "the validator disarmed": Case(
        [[submission(), write("benchmark/submissions/changes.py", "def change_failures(*a): return []\n")]],
        {"benchmark/submissions/changes.py": OUTSIDE},
    ),
    "a workflow added": Case(
        [[submission(), write(".github/workflows/x.yml", "on: push\n")]], {".github/workflows/x.yml": OUTSIDE}
    ),
    "CODEOWNERS replaced": Case(
        [[submission(), write(".github/CODEOWNERS", "* @me\n")]], {".github/CODEOWNERS": OUTSIDE}
    ),
    "the gate emptied": Case([[submission(), write(".ci/gate", "exit 0\n", 0o755)]], {".ci/gate": OUTSIDE}),
    "a Makefile target replaced": Case(
        [[submission(), write("Makefile", "validate:\n\ttrue\n")]], {"Makefile": OUTSIDE}
    ),
    "a .gitattributes filter at the top": Case(
        [[submission(), write(".gitattributes", "*.yaml filter=evil\n")]], {".gitattributes": OUTSIDE}
    ),
    "a .gitattributes filter in the submission": Case(
        [[submission(), write(f"{NEW}/.gitattributes", "* filter=lfs diff=lfs merge=lfs\n")]],
        {f"{NEW}/.gitattributes": "hidden file or folder"},
    ),
    "a .gitmodules file": Case(
        [[submission(), write(".gitmodules", '[submodule "x"]\n\tpath = x\n\turl = ../x\n')]],
        {".gitmodules": OUTSIDE},
    ),
    "the published board edited": Case(
        [[submission(), write("leaderboard/leaderboard.json", "{}\n")]],
        {"leaderboard/leaderboard.json": OUTSIDE},
    ),
    "a variant set edited": Case(
        [[submission(), write("variants/sago-v1/v1/extra.txt", "x\n")]],
        {"variants/sago-v1/v1/extra.txt": "frozen variant set"},
    ),
    "a case-variant Submissions/ folder": Case(
        [[write("Submissions/acme__new-model/submission.yaml", yaml_of())]],
        {"Submissions/acme__new-model/submission.yaml": OUTSIDE},
    ),
    "a path through ..": Case(
        [[submission(), write("submissions/../benchmark/x.py", "x\n")]], {"benchmark/x.py": OUTSIDE}
    ),
    # intermediate commits
    "a file added, then removed": Case(
        [[submission(), write("benchmark/evil.py", "x\n")], [remove("benchmark/evil.py")]],
        {"benchmark/evil.py": HISTORY},
    ),
    "a workflow added, then removed": Case(
        [
            [write(".github/workflows/x.yml", "on: push\n")],
            [remove(".github/workflows/x.yml")],
            [submission()],
        ],
        {".github/workflows/x.yml": HISTORY},
    ),
    "a huge README, then a small one": Case(
        [[submission(readme=README_TOO_BIG)], [write(f"{NEW}/README.md", "# New\n")]],
        {f"{NEW}/README.md": "larger than 64 KiB"},
    ),
    "a huge yaml, then a small one": Case(
        [[submission(), write(f"{NEW}/submission.yaml", "# " + "x" * 20000 + "\n")], [submission()]],
        {f"{NEW}/submission.yaml": "larger than 16 KiB"},
    ),
    "a binary README, then text": Case(
        [[submission(readme=b"\x7fELF\x00\x01")], [write(f"{NEW}/README.md", "# New\n")]],
        {f"{NEW}/README.md": "NUL byte"},
    ),
    "a result added, then removed": Case(
        [
            [submission(), write(f"{NEW}/results/sago-v1/v1/run.json", "{}")],
            [remove(f"{NEW}/results/sago-v1/v1/run.json")],
        ],
        {f"{NEW}/results/sago-v1/v1/run.json": "a result"},
    ),
    "another submission added, then removed": Case(
        [
            [submission("acme__other", "Other")],
            [
                remove("submissions/acme__other/submission.yaml"),
                remove("submissions/acme__other/README.md"),
                submission(),
            ],
        ],
        {
            "submissions/acme__other/README.md": "the commits touch 2 submissions",
            f"{NEW}/README.md": "the commits touch 2 submissions",
        },
    ),
    "an existing README edited, then restored": Case(
        [
            [submission(), write("submissions/acme__tiny-b/README.md", "mine\n")],
            [remove("submissions/acme__tiny-b/README.md")],
        ],
        {"submissions/acme__tiny-b/README.md": "existing submission 'acme__tiny-b'"},
    ),
    # others' submissions and results
    "another submission deleted": Case(
        [[submission(), remove("submissions/acme__tiny-c/submission.yaml")]],
        {"submissions/acme__tiny-c/submission.yaml": "removes the file of the existing submission"},
    ),
    "another submission's yaml edited": Case(
        [[write("submissions/acme__tiny-c/submission.yaml", yaml_of("Mine", 3))]],
        {"submissions/acme__tiny-c/submission.yaml": "changes the file of the existing submission"},
    ),
    "a committed result edited": Case(
        [[submission(), write("submissions/acme__tiny-a/results/sago-v1/v1/summary.json", "{}")]],
        {"submissions/acme__tiny-a/results/sago-v1/v1/summary.json": "a result"},
    ),
    "a result for the new model": Case(
        [[submission(), write(f"{NEW}/results/sago-v1/v1/run.json", "{}")]],
        {
            f"{NEW}/results/sago-v1/v1/run.json": "adds a result",
            f"{NEW}/results/sago-v1/v1/records": "no records",  # and the tree's own check of it
        },
    ),
    "two submissions at once": Case(
        [[submission(), submission("acme__second", "Second")]],
        {
            f"{NEW}/submission.yaml": "adds 2 submissions",
            f"{NEW}/README.md": "adds 2 submissions",
            "submissions/acme__second/submission.yaml": "adds 2 submissions",
            "submissions/acme__second/README.md": "adds 2 submissions",
        },
    ),
    "a README without its submission": Case(
        [[write(f"{NEW}/README.md", "# x\n")]],
        {
            f"{NEW}/README.md": "a submission the change does not add",
            f"{NEW}/submission.yaml": "no submission.yaml",
        },
    ),
    "a stray file in the submission": Case(
        [[submission(), write(f"{NEW}/weights.bin", b"\0" * 10)]], {f"{NEW}/weights.bin": "a file other than"}
    ),
    "a stray file at the top of submissions/": Case(
        [[submission(), write("submissions/notes.md", "x\n")]], {"submissions/notes.md": "a file other than"}
    ),
    "a case-variant file name": Case(
        [[write(f"{NEW}/Submission.yaml", yaml_of()), write(f"{NEW}/README.md", "# x\n")]],
        {
            f"{NEW}/Submission.yaml": "a file other than",
            f"{NEW}/README.md": "does not add",
            f"{NEW}/submission.yaml": "no submission.yaml",
        },
    ),
    "a case-variant slug": Case(
        [[submission("Acme__New-Model")]],
        {
            "submissions/Acme__New-Model/submission.yaml": "not a valid slug",
            "submissions/Acme__New-Model/README.md": "not a valid slug",
            "submissions/Acme__New-Model": "not a valid slug",
        },
    ),
    "a slug of the same folder as an existing one but for case": Case(
        [[submission("acme__Tiny-B")]],
        {
            "submissions/acme__Tiny-B/submission.yaml": "not a valid slug",
            "submissions/acme__Tiny-B/README.md": "not a valid slug",
            "submissions/acme__Tiny-B": "not a valid slug",
        },
    ),
    "a hidden folder in the submission": Case(
        [[submission(), write(f"{NEW}/.github/x.yml", "x\n")]],
        {f"{NEW}/.github/x.yml": "hidden file or folder", f"{NEW}/.github": "stray entry"},
    ),
    # links, nested repositories, modes, LFS
    "a submission.yaml that is a link": Case(
        [
            [
                write(f"{NEW}/README.md", "# x\n"),
                link(f"{NEW}/submission.yaml", "../acme__tiny-b/submission.yaml"),
            ]
        ],
        {f"{NEW}/submission.yaml": "symbolic link", f"{NEW}/README.md": "does not add"},
    ),
    "a README that is a link out of the checkout": Case(
        [[write(f"{NEW}/submission.yaml", yaml_of()), link(f"{NEW}/README.md", "/etc/passwd")]],
        {f"{NEW}/README.md": "symbolic link"},
    ),
    "a renamed existing submission": Case(
        [[lambda root: (root / "submissions/acme__tiny-c").rename(root / "submissions/acme__tiny-z")]],
        {
            "submissions/acme__tiny-c/submission.yaml": "removes the file of the existing submission",
        },
    ),
    "a nested repository as README": Case(
        [[write(f"{NEW}/submission.yaml", yaml_of()), nested_repository(f"{NEW}/README.md")]],
        {f"{NEW}/README.md": "nested repository"},
    ),
    "a nested repository under benchmark/": Case(
        [[submission(), nested_repository("benchmark/vendor")]], {"benchmark/vendor": OUTSIDE}
    ),
    "an executable README": Case(
        [[submission(), write(f"{NEW}/README.md", "# x\n", 0o755)]], {f"{NEW}/README.md": "executable"}
    ),
    "an executable submission.yaml": Case(
        [[submission(), write(f"{NEW}/submission.yaml", yaml_of(), 0o755)]],
        {f"{NEW}/submission.yaml": "executable", f"{NEW}/README.md": "does not add"},
    ),
    "an LFS pointer as README": Case(
        [
            [
                submission(
                    readme="version https://git-lfs.github.com/spec/v1\noid sha256:"
                    + "a" * 64
                    + "\nsize 70000000\n"
                )
            ]
        ],
        {f"{NEW}/README.md": "Git LFS pointer"},
    ),
    "an LFS pointer as submission.yaml": Case(
        [
            [
                write(
                    f"{NEW}/submission.yaml",
                    "version https://git-lfs.github.com/spec/v1\noid sha256:" + "a" * 64 + "\nsize 9\n",
                )
            ]
        ],
        {f"{NEW}/submission.yaml": ""},
    ),
    # README contents
    "a 70 MB-like README (64 KiB + 1)": Case(
        [[submission(readme=README_TOO_BIG)]], {f"{NEW}/README.md": "larger than 64 KiB"}
    ),
    "a binary README": Case(
        [[submission(readme=b"\x89PNG\r\n\x1a\n\0\0")]], {f"{NEW}/README.md": "NUL byte"}
    ),
    "a Latin-1 README": Case(
        [[submission(readme="caf\xe9\n".encode("latin-1"))]], {f"{NEW}/README.md": "not valid UTF-8"}
    ),
    "a README with terminal escapes": Case(
        [[submission(readme="ok\x1b[2K\x1b[1A\n")]], {f"{NEW}/README.md": "U+001B"}
    ),
    "a README with a C1 control": Case(
        [[submission(readme="ok\u009b31m\n")]], {f"{NEW}/README.md": "U+009B"}
    ),
    # names that hide characters
    "a name with U+3164 HANGUL FILLER": names("HANGUL FILLER", "Tiny B\u3164(synthetic)"),
    "a name with U+115F HANGUL CHOSEONG FILLER": names("U+115F", "Tiny\u115fB"),
    "a name with U+FFA0 HALFWIDTH HANGUL FILLER": names("U+FFA0", "Tiny\uffa0B"),
    "a name with U+2800 BRAILLE BLANK": names("U+2800", "Tiny\u2800B"),
    "a name with a zero-width space": names("U+200B", "Tiny B\u200b (synthetic)"),
    "a name with a zero-width joiner": names("U+200D", "Tiny\u200dB"),
    "a name with a soft hyphen": names("U+00AD", "Ti\u00adny B"),
    "a name with a variation selector": names("U+FE0F", "Tiny B\ufe0f"),
    "a name with tag characters": names("U+E0041", "Tiny B\U000e0041\U000e007f"),
    "a name with a bidi override": names("U+202E", "Tiny \u202eB"),
    "a name with a private-use character": names("U+E000", "Tiny \ue000B"),
    "a name with an unassigned code point": names("U+0378", "Tiny \u0378B"),
    "a name with a no-break space": names("U+00A0", "Tiny\u00a0B (synthetic)"),
    "a licence with a zero-width space": Case(
        [[write(f"{NEW}/submission.yaml", yaml_of(license="Apache-2.0\u200b"))]],
        {f"{NEW}/submission.yaml": "'license'"},
    ),
    # names of other scripts that read like a taken one
    "a Cyrillic lookalike name": names(
        "reads like the name of submission 'acme__tiny-b'", "Тiny В (sуnthetic)"
    ),
    "a Greek lookalike name": names("reads like the name", "Τiny Β (synthetiϲ)"),
    "a Cherokee and Roman-numeral lookalike": names("reads like the name", "Tiny Ᏼ (synthetⅰⅽ)"),
    "a fullwidth lookalike name": names("reads like the name", "Ｔｉｎｙ Ｂ (synthetic)"),
    "a mathematical-letters lookalike": names("reads like the name", "𝐓𝐢𝐧𝐲 𝐁 (synthetic)"),
    "a digits-for-letters lookalike": names("reads like the name", "Tiny B (synthet1c)"),
    "an accent-only lookalike": names("reads like the name", "Tíny B (synthetic)"),
}


def run_case(tree: SiteTree, case: Case, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, str]]:
    """Branch ``pr`` from main, commit the case, run the validator's entry point as CI does."""
    git(tree.root, "checkout", "-q", "-f", "-B", "pr", "main")
    git(tree.root, "clean", "-q", "-ffdx")  # -ff: nested repositories too
    for number, edits in enumerate(case.commits):
        for edit in edits:
            edit(tree.root)
        git(tree.root, "add", "-A")
        git(tree.root, "commit", "-q", "--allow-empty", "-m", f"commit {number}")
    status = main(
        ["submissions", "validate", "--root", str(tree.submissions), "--variants", str(tree.variants)]
        + ["--base", "main"]
    )
    out = capsys.readouterr()
    found: dict[str, str] = {}
    for line in (out.out + out.err).splitlines()[:-1]:
        path, _, rest = line.partition(": ")
        found[path] = found.get(path, "") + rest
    return status, found


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> SiteTree:
    """The fixture checkout with this package, .ci/ and the Makefile, committed on main."""
    tree = make_site_tree(tmp_path_factory.mktemp("hostile") / "repo")
    shutil.copytree(ROOT / "benchmark", tree.root / "benchmark", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / ".ci", tree.root / ".ci")
    shutil.copy(ROOT / "Makefile", tree.root / "Makefile")
    git(tree.root, "init", "-q", "-b", "main")
    git(tree.root, "add", "-A")
    git(tree.root, "commit", "-q", "-m", "base")
    return tree


@pytest.mark.parametrize("name", list(CASES))
def test_a_hostile_pull_request(base: SiteTree, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    case = CASES[name]
    status, found = run_case(base, case, capsys)
    assert status == (1 if case.refused else 0), (name, found)
    assert set(found) == set(case.refused), (name, found)
    for path, phrase in case.refused.items():
        assert phrase in found[path], (path, found[path])


def test_a_merge_commit_in_the_pull_request_is_refused(
    base: SiteTree, capsys: pytest.CaptureFixture[str]
) -> None:
    git(base.root, "checkout", "-q", "-f", "-B", "side", "main")
    write("benchmark/evil.py", "x\n")(base.root)
    git(base.root, "add", "-A")
    git(base.root, "commit", "-q", "-m", "side")
    case = Case([[submission()]])
    run_case(base, case, capsys)
    git(base.root, "merge", "-q", "--no-ff", "-s", "ours", "side", "-m", "merge")  # the tree stays the same
    status = main(
        [
            "submissions",
            "validate",
            "--root",
            str(base.submissions),
            "--variants",
            str(base.variants),
            "--base",
            "main",
        ]
    )
    lines = capsys.readouterr().out.splitlines()
    assert status == 1
    assert any("is a merge commit" in line for line in lines), lines
    assert any(line.startswith("benchmark/evil.py: commit ") for line in lines), lines


def test_too_many_commits_are_asked_to_squash(base: SiteTree, capsys: pytest.CaptureFixture[str]) -> None:
    case = Case([[submission()], *[[] for _ in range(21)]])
    status, found = run_case(base, case, capsys)
    assert status == 1
    assert [rest for path, rest in found.items() if path.startswith("HEAD")] == [
        "the pull request has 22 commits — squash them into at most 20 (one is enough for a submission)"
    ]


def gate(repo: Path, base_ref: str = "main") -> subprocess.CompletedProcess[str]:
    """As the maintainers and CI run it: the base's own script, piped from git, never the checkout's."""
    script = subprocess.run(
        ["git", "show", f"{base_ref}:.ci/gate"], cwd=repo, capture_output=True, check=True
    )
    return subprocess.run(
        ["bash", "-s", "--", base_ref, sys.executable],
        input=script.stdout.decode(),
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": ""},
    )


def test_the_real_gate_refuses_a_branch_cut_before_the_rule_then_judges_it_rebased(base: SiteTree) -> None:
    """The audit's stale branch: cut from a commit whose validator did not look outside submissions/,
    it adds a file under benchmark/. Judged against the merge base (the old gate) it passed; the gate now
    asks for a rebase, and once rebased the head's validator refuses the file."""
    repo = base.root
    git(repo, "checkout", "-q", "-f", "main")
    rules = repo / "benchmark" / "submissions" / "changes.py"
    kept = rules.read_text()
    whole_checkout = "changes = changes_since(top, base, ())"
    assert whole_checkout in kept
    old = kept.replace(whole_checkout, "changes = changes_since(top, base, (layout.submissions,))")
    rules.write_text(old + "\n\ndef history_failures(*args, **kwargs):\n    return []\n")  # nor commits
    git(repo, "commit", "-q", "-am", "an old validator that looks only under submissions/")
    git(repo, "branch", "stale")
    rules.write_text(kept)
    git(repo, "commit", "-q", "-am", "main's head: the rule")
    git(repo, "checkout", "-q", "stale")
    submission()(repo)
    write("benchmark/evil.py", "x\n")(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a model")
    done = gate(repo)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "not on the head of main" in done.stderr and "git rebase main" in done.stderr
    git(repo, "rebase", "-q", "main")
    done = gate(repo)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "benchmark/evil.py: adds a file outside submissions/" in done.stdout


def test_a_replaced_makefile_target_and_gate_do_not_decide_what_judges(base: SiteTree) -> None:
    """The pull request's Makefile and .ci/gate pass everything; the base's piped gate is what runs."""
    repo = base.root
    git(repo, "checkout", "-q", "-f", "-B", "pr", "main")
    git(repo, "clean", "-q", "-ffdx")
    submission()(repo)
    write("Makefile", "validate:\n\t@echo ok\n")(repo)
    write(".ci/gate", "exit 0\n", 0o755)(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a model")
    # under `make check` the outer make's variables would make this one print "Entering directory"
    quiet = {
        k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")
    }
    mine = subprocess.run(
        ["make", "validate", "BASE=main"], cwd=repo, capture_output=True, text=True, env=quiet
    )
    assert mine.returncode == 0 and mine.stdout.strip() == "ok"  # why CI never runs the PR's Makefile
    done = gate(repo)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "with its validator" in done.stdout
    refused = {line.split(": ", 1)[0] for line in done.stdout.splitlines() if OUTSIDE in line}
    assert refused == {"Makefile", ".ci/gate"}


def test_the_real_gate_accepts_a_plain_submission(base: SiteTree) -> None:
    repo = base.root
    git(repo, "checkout", "-q", "-f", "-B", "pr", "main")
    git(repo, "clean", "-q", "-ffdx")
    submission()(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a model")
    done = gate(repo)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].startswith("ok: ")


def test_the_corpus_is_large_enough() -> None:
    assert len(CASES) + 5 >= 60


def test_a_problem_of_the_last_commit_asks_to_fix_the_file_not_the_history(
    base: SiteTree, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only an earlier commit needs squashing; the last one's file is fixed by the next commit."""
    last = Case([[submission(readme=b"x\0")]])
    status, found = run_case(base, last, capsys)
    assert status == 1 and HISTORY not in found[f"{NEW}/README.md"], found
    earlier = Case([[submission(readme=b"x\0")], [write(f"{NEW}/README.md", "# x\n")]])
    status, found = run_case(base, earlier, capsys)
    assert status == 1 and HISTORY in found[f"{NEW}/README.md"], found
