"""The match's driver half (match.py) on hand-made aggregates, as Spark's two GROUP BYs make
them, against a plain-Python judgement of every id: where an unacknowledged id the log holds
counts, and which ids are held in two partitions."""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np
import pyarrow as pa
import pytest

from kinspect.postmortem.matching.idsets import IdSet
from kinspect.postmortem.matching.match import (
    CANDIDATE,
    WORD_SHIFT,
    _copies_across,
    _unacked_present,
)

Id = tuple[int, int]  # producer, seq


def head(producer: int, seq: int) -> int:
    return (producer << WORD_SHIFT) | (seq >> 6)


def signed(mask: int) -> int:
    return mask - (1 << 64) if mask >= 1 << 63 else mask


def ledger_table(rows: list[tuple[int, int, int, int]]) -> pa.Table:
    """(producer, seq, st, l_part) rows as ledger_words groups them."""
    groups: dict[tuple[int, int, int], list[int]] = defaultdict(lambda: [0, 0])
    for producer, seq, st, part in rows:
        group = groups[(head(producer, seq), st, part)]
        group[0] |= 1 << (seq & 63)
        group[1] += 1
    keys = list(groups)
    return pa.table({"w": pa.array([k[0] for k in keys], pa.int64()),
                     "st": pa.array([k[1] for k in keys], pa.int32()),
                     "l_part": pa.array([k[2] for k in keys], pa.int32()),
                     "m": pa.array([signed(groups[k][0]) for k in keys], pa.int64()),
                     "n": pa.array([groups[k][1] for k in keys], pa.int64())})


def log_table(rows: list[tuple[int, int, int]]) -> pa.Table:
    """(producer, seq, partition) records as log_words groups this run's ids."""
    groups: dict[tuple[int, int], list[int]] = defaultdict(lambda: [0, 0])
    for producer, seq, partition in rows:
        group = groups[(head(producer, seq), partition)]
        group[0] |= 1 << (seq & 63)
        group[1] += 1
    keys = list(groups)
    return pa.table({"w": pa.array([k[0] for k in keys], pa.int64()),
                     "partition": pa.array([k[1] for k in keys], pa.int32()),
                     "m": pa.array([signed(groups[k][0]) for k in keys], pa.int64()),
                     "n": pa.array([groups[k][1] for k in keys], pa.int64())})


def idset(ids: set[Id]) -> IdSet:
    out = IdSet()
    for producer in {p for p, _ in ids}:
        seqs = [s for p, s in ids if p == producer]
        flags = np.zeros(max(seqs) + 1, bool)
        flags[seqs] = True
        out.bits[producer] = np.packbits(flags, bitorder="little")
    return out


@pytest.mark.parametrize("seed", range(20))
def test_the_driver_judges_every_id_as_python_does(seed: int) -> None:
    rng = np.random.default_rng(seed)
    ledger: list[tuple[int, int, int, int]] = []
    log: list[tuple[int, int, int]] = []
    for producer in range(3):
        for seq in range(int(rng.integers(50, 400))):
            for _ in range(1 if rng.random() < 0.9 else 2):  # some ids have two ledger rows
                ledger.append((producer, seq, int(rng.choice([0, 0, 0, 1, 2])),
                               int(rng.integers(-1, 4))))
            for _ in range(int(rng.choice([0, 1, 1, 1, 2, 3]))):  # lost, held, copies
                log.append((producer, seq, int(rng.integers(0, 4))))
        for seq in range(400, 400 + int(rng.integers(0, 40))):  # no ledger row
            log.append((producer, seq, int(rng.integers(0, 4))))
    cand = {(p, s) for p in range(3) for s in range(400, 420)}
    best: dict[Id, tuple[int, int]] = {}
    for producer, seq, st, part in ledger:
        best[(producer, seq)] = min(best.get((producer, seq), (9, 9)), (st, part))
    held: dict[Id, list[int]] = defaultdict(list)
    for producer, seq, partition in log:
        held[(producer, seq)].append(partition)
    acked = {i for i, (st, _) in best.items() if st == 0}
    unacked = set(held) - acked

    expected: Counter[tuple[int | None, int | None, int]] = Counter()
    for i in unacked:
        st, lp = best.get(i, (CANDIDATE, -1) if i in cand else (None, None))  # type: ignore[arg-type]
        expected[(st, lp, max(held[i]))] += 1
    got = _unacked_present(idset(unacked), ledger_table(ledger), log_table(log),
                           idset(cand - set(best)))
    assert Counter({(r.st, r.lp, r.logp): r.count for r in got}) == expected

    records = Counter((p, s, part) for p, s, part in log)
    suspects = np.unique([head(p, s) for (p, s, _), n in records.items() if n > 1])
    across: Counter[tuple[int, str]] = Counter()
    for (producer, seq), partitions in held.items():
        if len(set(partitions)) > 1 and head(producer, seq) not in suspects:
            across[(max(partitions), "duplicate_ids")] += 1
            across[(max(partitions), "duplicates")] += len(partitions) - 1
    assert _copies_across(log_table(log), suspects.astype(np.int64)) == across


def test_no_unacknowledged_ids_no_rows() -> None:
    assert _unacked_present(IdSet(), ledger_table([(0, 1, 0, 0)]), log_table([(0, 1, 0)]),
                            IdSet()) == []


def test_an_empty_final_log_has_no_copies() -> None:
    """Every record of the run gone (a power cut of the last in-sync replica can do it): no
    copies, not a crash in numpy's reduceat over nothing."""
    assert _copies_across(log_table([]), np.array([], np.int64)) == Counter()
