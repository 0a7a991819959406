"""One exception type for every failure a user can cause (the CLI prints it as one line), the byte counts
such messages quote, and the escaping that keeps a printed name on its line."""

import errno
import unicodedata


class SagoError(Exception):
    """A user-facing error, printed as one line: it must say what went wrong *and* what to do about it."""


class FileProblem(SagoError):
    """A file that cannot be used, with the problem and the fix kept apart for the validator's lines.

    >>> str(FileProblem("a.yaml", "the file is empty", "write the documented keys"))
    'a.yaml: the file is empty; write the documented keys'
    """

    def __init__(self, path: object, problem: str, fix: str) -> None:
        self.path, self.problem, self.fix = str(path), problem, fix
        super().__init__(f"{path}: {problem}; {fix}")


def human_size(value: int) -> str:
    """A byte count for people.

    >>> human_size(512), human_size(2048), human_size(3 * 2**20)
    ('512 B', '2.0 KiB', '3.0 MiB')
    """
    if value < 1024:
        return f"{value} B"
    if value < 2**20:
        return f"{value / 1024:.1f} KiB"
    return f"{value / 2**20:.1f} MiB"


_ESCAPED = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})  # U+2028/9 (Zl, Zp) break lines in many readers


def visible(text: str) -> str:
    r"""``text`` with control, format, separator and surrogate characters backslash-escaped: printed
    names come from pull requests and model outputs, where a newline could forge an ``ok:`` line and a
    bidi or zero-width character changes what a reader sees.

    >>> visible("ok\tname\u200b")
    'ok\\tname\\u200b'
    >>> visible("a\nok: b\x1b[2K")
    'a\\nok: b\\x1b[2K'
    >>> visible("name\u2028ok: forged\u2029")
    'name\\u2028ok: forged\\u2029'
    """
    return "".join(
        ch.encode("unicode_escape", "backslashreplace").decode("ascii")
        if unicodedata.category(ch) in _ESCAPED
        else ch
        for ch in text
    )


_DISK_FIXES = {
    errno.ENOSPC: "the disk is full; free space and re-run",
    errno.EDQUOT: "the disk quota is used up; free space and re-run",
    errno.EFBIG: "the file is larger than this file system allows; write elsewhere",
    errno.EROFS: "the file system is read-only; pass a writable path or remount it",
    errno.EACCES: "permission denied; check the path's permissions or pass a writable one",
    errno.EPERM: "the operation is not permitted; check the path's permissions or pass a writable one",
}


def disk_problem(err: OSError) -> str | None:
    """One line naming the path and the fix for a full disk or a permission problem; None for any other
    ``OSError`` (a bug, shown with its traceback).

    >>> disk_problem(OSError(errno.ENOSPC, "No space left on device", "out/a.json"))
    'out/a.json: no space left on device (ENOSPC): the disk is full; free space and re-run'
    >>> disk_problem(FileNotFoundError(errno.ENOENT, "No such file", "x")) is None
    True
    """
    number = err.errno
    if number is None or number not in _DISK_FIXES:
        return None
    paths = [str(p) for p in (err.filename, err.filename2) if p is not None]
    where = " -> ".join(visible(p) for p in paths) if paths else "a write (no path reported)"
    name = errno.errorcode.get(number, str(number))
    return f"{where}: {(err.strerror or name).lower()} ({name}): {_DISK_FIXES[number]}"
