"""One exception type for every failure a user can cause; the CLI prints it as one line."""


class SagoError(Exception):
    """A user-facing error: bad input, a corrupted file, an unreachable service.

    The CLI catches it, prints ``error: <message>`` on one line and exits with status 2,
    so the message must say what went wrong *and* what to do about it.
    """
