"""The process's own memory as glibc keeps it: how many malloc arenas, and handing back what
was freed. For the long-lived processes (the screen, the exporter) whose polls run in threads.

Each thread that allocates gets a malloc arena of its own (up to eight per core), and what it
frees stays in that arena. The observer's per-poll threads had spread over 15 arenas at 10,000
partitions, 35 MB of them (9 MB in two), growing through the hour; `limit_arenas` caps them
for threads started after it, and `malloc_trim` gives freed pages back to the system.
"""

from __future__ import annotations

import ctypes
import tempfile
from collections.abc import Callable
from xml.etree import ElementTree

ARENAS = 2  # malloc arenas for all threads (glibc's default: eight per core)
M_ARENA_MAX = -8  # mallopt's parameter for it

Trim = Callable[[int], object]


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:
        return None


def malloc_trim() -> Trim | None:
    """glibc's malloc_trim(pad), where the C library is glibc (None elsewhere: musl, macOS)."""
    libc = _libc()
    trim: Trim | None = getattr(libc, "malloc_trim", None) if libc is not None else None
    return trim


def limit_arenas(arenas: int = ARENAS) -> bool:
    """glibc's malloc arenas capped at `arenas` (it fixes its limit when it first wants more
    than eight, so call this before the threads start); False where the C library is not
    glibc."""
    libc = _libc()
    mallopt = getattr(libc, "mallopt", None) if libc is not None else None
    return mallopt is not None and bool(mallopt(M_ARENA_MAX, arenas))


def malloc_info() -> ElementTree.Element | None:
    """glibc's own account of its arenas (malloc_info's XML: a <heap> per arena, then totals
    over all of them); None where the C library is not glibc. For benches and tests."""
    libc = _libc()
    if libc is None or not hasattr(libc, "malloc_info"):
        return None
    libc.fopen.restype = ctypes.c_void_p
    libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    with tempfile.NamedTemporaryFile(suffix=".xml") as out:
        stream = libc.fopen(out.name.encode(), b"w")
        libc.malloc_info(0, stream)
        libc.fclose(stream)
        return ElementTree.parse(out.name).getroot()
