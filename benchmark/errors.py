"""One exception type for every failure a user can cause (the CLI prints it as one line), and the byte
counts such messages quote."""


class SagoError(Exception):
    """A user-facing error: bad input, a corrupted file, an unreachable service.

    The CLI catches it, prints ``error: <message>`` on one line and exits with status 2,
    so the message must say what went wrong *and* what to do about it.
    """


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
