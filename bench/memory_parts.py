"""Where a process's resident memory is: the parts that tell a leak from fragmentation.

RSS alone cannot say why it grows. Python's objects live in its own 1 MiB arenas (mmap'd,
outside malloc) or, when bigger than 512 bytes, in malloc; C libraries (librdkafka, zstd)
use malloc directly; glibc keeps what was freed in its arenas. So each sample takes:
Python's live objects by type (gc), its allocated blocks and arenas, glibc's bytes in use and
free (mallinfo2), and the process's anonymous mappings by size. Growth in objects or blocks
is a Python leak; in malloc's use with Python flat, a C leak; in malloc's free bytes or in
arenas with blocks flat, fragmentation.
"""

from __future__ import annotations

import gc
import os
import sys
import tempfile
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from kinspect.heap import malloc_info

MB = 1e6


def malloc_totals() -> tuple[float, float, float]:
    """glibc's (bytes in use, bytes free in its arenas, bytes mmap'd) in MB over all its arenas
    (mallinfo2 tells only the main one's); zeros elsewhere."""
    root = malloc_info()
    if root is None:
        return 0.0, 0.0, 0.0
    totals = {(e.tag, e.get("type")): int(e.get("size", "0")) for e in root if e.tag != "heap"}
    free = totals.get(("total", "fast"), 0) + totals.get(("total", "rest"), 0)
    system = totals.get(("system", "current"), 0)
    return (system - free) / MB, free / MB, totals.get(("total", "mmap"), 0) / MB


def python_arenas() -> tuple[int, int]:
    """(arenas allocated now, their bytes in use as blocks) from sys._debugmallocstats, which
    prints to the C stderr only."""
    with tempfile.TemporaryFile() as out:
        saved = os.dup(2)
        sys.stderr.flush()
        os.dup2(out.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        text = out.read().decode(errors="replace")
    arenas, used = 0, 0
    for line in text.splitlines():
        words = line.replace(",", "").split()
        if line.startswith("# arenas allocated current"):
            arenas = int(words[-1])
        elif line.startswith("# bytes in allocated blocks"):
            used = int(words[-1])
    return arenas, used


def anonymous_mb() -> dict[str, float]:
    """Resident anonymous memory: the main heap (brk) and other anonymous mappings (Python's
    arenas, threads' malloc arenas and stacks, big allocations)."""
    parts: Counter[str] = Counter()
    kind = ""
    for line in Path("/proc/self/smaps").read_text().splitlines():
        words = line.split()
        if "-" in words[0] and len(words) >= 5:
            name = words[5] if len(words) > 5 else ""
            kind = "heap" if name == "[heap]" else "" if name else "anon"
        elif words[0] == "Rss:" and kind:
            parts[kind] += int(words[1]) * 1024
    return {k: v / MB for k, v in parts.items()}


@dataclass(frozen=True)
class Parts:
    objects: int
    blocks: int
    arenas: int
    arena_use_mb: float
    malloc_use_mb: float
    malloc_free_mb: float
    malloc_mmap_mb: float
    threads: int
    anonymous: dict[str, float]
    by_type: Counter[str] = field(repr=False)

    def line(self) -> str:
        anon = ", ".join(f"{k} {v:.0f}" for k, v in sorted(self.anonymous.items()))
        return (f"objects {self.objects:,}, blocks {self.blocks:,}, py arenas {self.arenas} "
                f"({self.arena_use_mb:.0f} MB used), malloc in use {self.malloc_use_mb:.0f} "
                f"free {self.malloc_free_mb:.0f} mmap {self.malloc_mmap_mb:.0f} MB, threads "
                f"{self.threads}; anon MB: {anon}")


def sample() -> Parts:
    objects = gc.get_objects()
    by_type = Counter(type(o).__name__ for o in objects)
    count = len(objects)
    del objects
    arenas, used = python_arenas()
    use, free, mmapped = malloc_totals()
    return Parts(count, sys.getallocatedblocks(), arenas, used / MB, use, free, mmapped,
                 threading.active_count(), anonymous_mb(), by_type)


def grown(before: Parts, after: Parts, top: int = 8) -> str:
    """The object types whose count grew most between two samples."""
    change = Counter(after.by_type)
    change.subtract(before.by_type)
    return ", ".join(f"{name} {n:+,}" for name, n in change.most_common(top) if n > 0)
