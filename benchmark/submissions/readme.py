"""The README.md beside a submission.yaml: short UTF-8 text and nothing else.

Shown to every reader, so bounded like any file a stranger adds; one rule judges a file on disk and a
blob in a pull request's commits.
"""

from __future__ import annotations

README_LIMIT = 64 * 1024
FIX = "commit README.md as plain UTF-8 text (Markdown) of at most 64 KiB"
_LFS = b"version https://git-lfs.github.com/spec/"


def readme_problem(data: bytes | None) -> str | None:
    r"""What is wrong with README bytes (None: larger than the limit, never read), or None when fine.

    >>> readme_problem(b"# A model\n\nSee the card.\r\n"), readme_problem(b"ok\x00")
    (None, 'holds a NUL byte: it is binary, not text')
    >>> readme_problem("caf\xe9".encode("latin-1")), readme_problem(b"a\x1b[2Kb")
    ('is not valid UTF-8 text', 'holds the control character U+001B')
    """
    if data is None or len(data) > README_LIMIT:
        return f"is larger than {README_LIMIT // 1024} KiB"
    if b"\0" in data:
        return "holds a NUL byte: it is binary, not text"
    if data.startswith(_LFS):
        return "is a Git LFS pointer, not the text itself"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "is not valid UTF-8 text"
    bad = next((ch for ch in text if _control(ch)), None)
    return None if bad is None else f"holds the control character U+{ord(bad):04X}"


def _control(ch: str) -> bool:
    """C0 and C1 controls and DEL, except tab and line ends (a terminal or a renderer obeys them)."""
    code = ord(ch)
    return (code < 0x20 and ch not in "\t\n\r") or 0x7F <= code <= 0x9F
