"""Where the screen's old snapshots are freed: on a thread of their own, a piece at a time.

Dropping the last reference to a snapshot of 100,000 partitions frees about a million objects
in one go: ~80 ms holding the GIL, and it happened on the event loop each time the screen moved
to the next snapshot (keys waited). The screen hands each arrival it stops drawing to the
graveyard instead, which frees the containers first and then the partitions and events in
chunks, with a chance for the loop to take the GIL between chunks.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Any

from kinspect.tui.messages import Arrival

CHUNK = 2_000  # objects freed between two chances for the loop: ~2 ms
GRACE_S = 0.5  # the screen lets go of its own references first (its panels, the message)


def pieces(arrival: Arrival) -> list[Any]:
    """Every partition and event of `arrival`, then its containers: freed from the end, the
    containers go first and cost little while the list still holds what they held."""
    out: list[Any] = list(arrival.events)
    for topic in arrival.snapshot.topics:
        out.extend(topic.partitions)
    out += [arrival.snapshot, arrival.prepared, arrival]
    return out


class Graveyard:
    """Takes arrivals no longer drawn and frees them off the event loop."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[tuple[float, Arrival]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def bury(self, arrival: Arrival | None) -> None:
        if arrival is None:
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="kinspect-graveyard",
                                            daemon=True)
            self._thread.start()
        self._queue.put((time.monotonic() + GRACE_S, arrival))

    def _run(self) -> None:
        while True:
            due, arrival = self._queue.get()
            time.sleep(max(0.0, due - time.monotonic()))
            held = pieces(arrival)
            del arrival
            while held:
                del held[-CHUNK:]
                time.sleep(0)  # the loop may take the GIL here
