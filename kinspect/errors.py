"""The one exception type users see: a one-line message and exit code 2."""

from kinspect.extras import missing_extra


class KinspectError(Exception):
    """A problem the user can act on. The CLI prints it as one line and exits 2."""

    exit_code = 2


def said(exc: BaseException) -> str:
    """What an exception says; its type's name when it says nothing (a bare TimeoutError)."""
    text = str(exc)
    if text:
        return text
    return type(exc).__name__


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    if not text:
        return ""
    return text.splitlines()[0]


def error_line(exc: BaseException) -> str:
    """One line for any error: ours as written, anything else with its type (a bug or an
    engine's error must still say what it was)."""
    extra = missing_extra(exc)
    if extra is not None:  # the light install
        return extra
    text = _first_line(exc)
    if not text:
        return type(exc).__name__
    if isinstance(exc, KinspectError):
        return text
    return f"{type(exc).__name__}: {text}"
