"""Sets of message ids as bits: one bit per (producer, seq), set algebra with numpy.

A producer's seqs are dense (0, 1, 2, …), so "which ids did the ledger call acked, which did
the final log hold" is a bit array per producer: 10 million messages are 1.25 MB a set. Spark
folds the ids into 64-bit masks where the data is (a mask per run of 64 seqs, match.py) and
only the masks reach the driver, where acked-but-lost is `acked & ~present`: no shuffle of rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np


@dataclass
class IdSet:
    """Per producer, a packed bit array over seq (bit `seq % 8` of byte `seq // 8`)."""

    bits: dict[int, np.ndarray] = field(default_factory=dict)

    @classmethod
    def from_words(cls, producers: np.ndarray, words: np.ndarray, masks: np.ndarray) -> IdSet:
        """Rows of (producer, word, mask): bit i of `mask` is seq word * 64 + i; the rows of
        one (producer, word) are OR-ed (one per partition or status, as a GROUP BY makes them)."""
        out = cls()
        for producer in np.unique(producers):
            mine = producers == producer
            index = words[mine]
            packed = np.zeros(int(index.max()) + 1, "<u8")
            np.bitwise_or.at(packed, index, masks[mine].view(np.uint64))
            out.bits[int(producer)] = packed.view(np.uint8)
        return out

    @classmethod
    def from_ranges(cls, ranges: Mapping[int, tuple[int, int]]) -> IdSet:
        """producer -> (lo, hi) inclusive seq range."""
        out = cls()
        for producer, (lo, hi) in ranges.items():
            if hi < lo:
                continue
            flags = np.zeros(hi + 1, bool)
            flags[lo:] = True
            out.bits[producer] = np.packbits(flags, bitorder="little")
        return out

    def _pair(self, other: IdSet, producer: int) -> tuple[np.ndarray, np.ndarray]:
        a = self.bits.get(producer, np.zeros(0, np.uint8))
        b = other.bits.get(producer, np.zeros(0, np.uint8))
        size = max(len(a), len(b))
        return (np.pad(a, (0, size - len(a))), np.pad(b, (0, size - len(b))))

    def _combine(self, other: IdSet, op: str) -> IdSet:
        out = IdSet()
        for producer in self.bits.keys() | other.bits.keys():
            a, b = self._pair(other, producer)
            out.bits[producer] = {"|": a | b, "&": a & b, "-": a & ~b}[op]
        return out

    def __or__(self, other: IdSet) -> IdSet:
        return self._combine(other, "|")

    def __and__(self, other: IdSet) -> IdSet:
        return self._combine(other, "&")

    def __sub__(self, other: IdSet) -> IdSet:
        return self._combine(other, "-")

    def __len__(self) -> int:
        return int(sum(int(np.bitwise_count(b).sum()) for b in self.bits.values()))

    def seqs(self, producer: int) -> np.ndarray:
        """The seqs in the set for one producer, ascending."""
        bits = self.bits.get(producer)
        if bits is None:
            return np.zeros(0, np.int64)
        return np.flatnonzero(np.unpackbits(bits, bitorder="little")).astype(np.int64)

    def keys(self, shift: int) -> np.ndarray:
        """Every id as one long (producer << shift | seq), ascending."""
        parts = [(np.int64(p) << shift) | self.seqs(p) for p in sorted(self.bits)]
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)

    def words(self, shift: int) -> tuple[np.ndarray, np.ndarray]:
        """The set as runs of 64 ids: (producer << shift | seq >> 6, mask with bit seq & 63),
        the non-empty runs only, ascending."""
        heads, masks = [], []
        for producer in sorted(self.bits):
            bits = self.bits[producer]
            packed = np.pad(bits, (0, -len(bits) % 8)).view("<u8")
            index = np.flatnonzero(packed)
            heads.append((np.int64(producer) << shift) | index.astype(np.int64))
            masks.append(packed[index].view(np.int64))
        if not heads:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate(heads), np.concatenate(masks)

    def masks_at(self, heads: np.ndarray, shift: int) -> np.ndarray:
        """The set's 64-bit mask at each run of 64 ids `heads` (producer << shift | seq >> 6)
        names, as uint64 (0 where it holds none)."""
        out = np.zeros(len(heads), np.uint64)
        producers = heads >> shift
        for producer in np.unique(producers):
            bits = self.bits.get(int(producer))
            if bits is None:
                continue
            packed = np.pad(bits, (0, -len(bits) % 8)).view("<u8")
            mine = np.flatnonzero(producers == producer)
            index = heads[mine] & ((1 << shift) - 1)
            inside = index < len(packed)
            out[mine[inside]] = packed[index[inside]]
        return out

    def producers(self) -> list[int]:
        """The producers with at least one id in the set."""
        return sorted(p for p, b in self.bits.items() if b.any())


def ranges(seqs: np.ndarray, cap: int) -> tuple[list[tuple[int, int]], int]:
    """Runs of consecutive seqs: the first `cap` as (lo, hi), and how many runs in all."""
    if len(seqs) == 0:
        return [], 0
    breaks = np.flatnonzero(np.diff(seqs) != 1)
    los = np.concatenate([[seqs[0]], seqs[breaks + 1]])
    his = np.concatenate([seqs[breaks], [seqs[-1]]])
    return [(int(lo), int(hi)) for lo, hi in zip(los[:cap], his[:cap], strict=True)], len(los)
