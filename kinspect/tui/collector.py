"""When the TUI runs Python's cycle collector (rarely, when nothing is happening), and how
often its threads take turns with the GIL (`SWITCH_S`).

A snapshot of 10,000 partitions is ~50,000 objects that live a second or more, so they reach
the oldest generation, and a full collection walks all of them (~60 ms at 10,000 partitions,
~0.5 s at 100,000, holding the GIL). With Python's default thresholds one ran every second
snapshot during a failover: the loop's worst stalls. The snapshots have no cycles and go by
reference count; the cyclic garbage left is Textual's (a repainted strip keeps itself in its
own cache), a few thousand objects a minute once panels repaint only what changed. It is
collected here when the cluster and the user have been quiet for a while, no more often than
keeps the collector's share of the time small, and at least every `LONGEST_S`.

Then the memory the process freed is handed back (glibc's malloc_trim). The observer's threads
each allocate in a malloc arena of their own, and what they free stays with the process: at
10,000 partitions the Observer alone went 108 → 118 MB in 4 minutes while Python's own
allocations (tracemalloc) stayed flat, and one trim took it back to 109 MB. The screen also
keeps glibc to a few arenas (kinspect/heap.py).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

from kinspect.heap import Trim, limit_arenas, malloc_trim

QUIET_S = 5.0  # no change on screen and no key for this long
EVERY_S = 60.0  # at most one full collection a minute
SHARE = 1 / 1200  # ...and at most this share of the time (0.5 s each at 100,000: every 10 min)
LONGEST_S = 900.0  # ...and one at least this often, quiet or not (a long failover's garbage)
# Python's own full collections, never: its threshold counts young collections, and at 100,000
# partitions each poll made enough of them for one every few polls (0.5 s stalls, unasked).
NEVER = 2**31 - 1
# How long a thread keeps the GIL when another wants it (Python's default is 5 ms). The
# observer polls in the TUI's process, and at 100,000 partitions a dozen of its threads decode
# answers at once: each holder kept the event loop waiting its 5 ms, one after another (loop
# wake-ups late by 122 ms at p99); at 1 ms, 45 ms. Throughput was the same (full polls a minute).
SWITCH_S = 0.001


GLIBC_TRIM = malloc_trim()


class QuietCollector:
    """Full collections at quiet moments, each followed by a trim of the freed memory; young
    generations as Python does them."""

    def __init__(self, clock: Callable[[], float] = time.monotonic,
                 trim: Trim | None = GLIBC_TRIM) -> None:
        self.clock, self.trim = clock, trim
        self.last_activity = self.last_collection = clock()
        self.cost_s = 0.0  # the last full collection's
        self.collections = 0

    def start(self) -> None:
        """Objects alive at start (modules, the app) are frozen out of every collection;
        the oldest generation is left to `maybe_collect`; malloc's arenas are capped before the
        feed's threads start (the CLI already did for `ui`, `demo` and `learn`, earlier: this is
        for an app started in-process, a bench's or a test's)."""
        gc.freeze()
        gc.set_threshold(700, 10, NEVER)
        limit_arenas()

    def busy(self) -> None:
        """Something changed on screen or a key was pressed: not the moment."""
        self.last_activity = self.clock()

    def due(self) -> bool:
        now = self.clock()
        since = now - self.last_collection
        if since >= LONGEST_S:
            return True
        wait = max(EVERY_S, self.cost_s / SHARE)
        return now - self.last_activity >= QUIET_S and since >= wait

    def maybe_collect(self) -> bool:
        """One full collection if due (called on the screen's clock tick)."""
        if not self.due():
            return False
        started = time.perf_counter()
        gc.collect()
        if self.trim is not None:
            self.trim(0)
        self.cost_s = time.perf_counter() - started
        self.last_collection = self.clock()
        self.collections += 1
        return True
