"""The one exception type users see: a one-line message and exit code 2."""


class KinspectError(Exception):
    """A problem the user can act on. The CLI prints it as one line and exits 2."""

    exit_code = 2
