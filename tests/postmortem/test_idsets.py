"""Id sets as bits: built as Spark builds them, checked against Python's own sets."""

from __future__ import annotations

import numpy as np

from kinspect.postmortem.matching.idsets import IdSet, ranges


def words(producer: int, seqs: set[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What match.ledger_words and log_words make: a 64-bit mask per (producer, seq // 64)."""
    masks: dict[int, int] = {}
    for seq in seqs:
        masks[seq // 64] = masks.get(seq // 64, 0) | (1 << (seq % 64))
    keys = sorted(masks)
    return (np.full(len(keys), producer, np.int32), np.array(keys, np.int64),
            np.array([m - (1 << 64) if m >= 1 << 63 else m for m in (masks[k] for k in keys)],
                     np.int64))


def test_set_algebra_matches_python_sets() -> None:
    rng = np.random.default_rng(3)
    acked = {int(s) for s in rng.choice(100_000, 60_000, replace=False)}
    present = {int(s) for s in rng.choice(100_000, 70_000, replace=False)} | {63, 64, 99_999}
    a = IdSet.from_words(*words(2, acked))
    p = IdSet.from_words(*words(2, present))
    assert len(a) == len(acked) and len(p) == len(present)
    assert set(map(int, (a - p).seqs(2))) == acked - present
    assert set(map(int, (p - a).seqs(2))) == present - acked
    assert len(a & p) == len(acked & present) and len(a | p) == len(acked | present)
    keys = (a - p).keys(40)
    assert set(map(int, keys)) == {(2 << 40) | s for s in acked - present}
    assert list(keys) == sorted(keys)


def test_runs_of_64_go_back_and_forth() -> None:
    """IdSet.words gives what from_words takes (the lost ids go to Spark this way)."""
    seqs = {0, 1, 63, 64, 200, 4_095, 70_001}
    both = IdSet.from_words(*words(3, seqs)) | IdSet.from_words(*words(9, {5}))
    heads, masks = both.words(34)
    assert list(heads) == sorted(heads) and len(heads) == 5 + 1
    again = IdSet.from_words((heads >> 34).astype(np.int32), heads & ((1 << 34) - 1), masks)
    assert set(map(int, again.seqs(3))) == seqs and list(again.seqs(9)) == [5]
    assert IdSet().words(34)[0].size == 0


def test_producers_apart_and_ranges_of_seqs() -> None:
    both = IdSet.from_words(*words(0, {1, 2, 3})) | IdSet.from_words(*words(1, {40_000}))
    assert both.producers() == [0, 1] and len(both) == 4
    empty = both - both
    assert empty.producers() == [] and len(empty) == 0
    span = IdSet.from_ranges({5: (10, 19), 6: (3, 2)})
    assert list(span.seqs(5)) == list(range(10, 20)) and span.producers() == [5]
    runs, total = ranges(np.array([1, 2, 3, 7, 9, 10]), cap=2)
    assert runs == [(1, 3), (7, 7)] and total == 3
    assert ranges(np.zeros(0, np.int64), 5) == ([], 0)
