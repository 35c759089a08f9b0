"""The one exception type users see: a one-line message and exit code 2."""

from kinspect.extras import missing_extra


class KinspectError(Exception):
    """A problem the user can act on. The CLI prints it as one line and exits 2."""

    exit_code = 2


def error_line(exc: BaseException) -> str:
    """One line for any error: ours as written, anything else with its type (a bug or an
    engine's error must still say what it was)."""
    if (extra := missing_extra(exc)) is not None:  # the light install
        return extra
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if isinstance(exc, KinspectError):
        return text or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
