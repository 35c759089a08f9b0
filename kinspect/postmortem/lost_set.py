"""Every acknowledged-and-lost message, in one Parquet dataset beside report.json.

The report lists the first lost ranges of each producer and counts the rest; what must see
every lost message reads `postmortem/lost.parquet` instead: the power cuts' lookup (is each
lost message among the batches a cut dropped?), the nemesis's loss by fault window, and anyone
with DuckDB. One row a message: producer, seq, partition, offset, ack_ts, epoch (as the
producer's delivery report gave them).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

LOST_FILE = "lost.parquet"
COLUMNS = ("producer", "seq", "partition", "offset", "ack_ts", "epoch")


def write_lost(lost: Any, out: Path) -> None:
    """The match's lost frame (key, pp, offset, ack_ts, epoch) as the dataset, one row a
    message."""
    from pyspark.sql import functions as F

    from kinspect.postmortem.matching.frames import KEY_SHIFT

    key = F.col("key")
    (lost.select(F.shiftright(key, KEY_SHIFT).cast("int").alias("producer"),
                 key.bitwiseAND((1 << KEY_SHIFT) - 1).alias("seq"),
                 F.col("pp").cast("int").alias("partition"), "offset", "ack_ts", "epoch")
     .write.mode("overwrite").parquet(str(out / LOST_FILE)))


def clear_lost(out: Path) -> None:
    """Before a post-mortem: an earlier one's set must not stand for this one's."""
    shutil.rmtree(out / LOST_FILE, ignore_errors=True)


def read_lost(out: Path, acked_lost: int) -> pa.Table | None:
    """Every lost message of the post-mortem written to `out`: none when it found none lost,
    None (unknown) when it found some and the set is not there (an older kinspect's)."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    path = out / LOST_FILE
    if not path.exists():
        if acked_lost == 0:
            return pa.table({name: pa.array([], pa.int64()) for name in COLUMNS})
        return None
    table = ds.dataset(path, format="parquet").to_table(columns=list(COLUMNS))
    if table.num_rows != acked_lost:  # a set that is not this report's
        return None
    return table


def messages(table: pa.Table) -> list[tuple[int, int]]:
    """(producer, seq) of each row."""
    return list(zip(table.column("producer").to_pylist(), table.column("seq").to_pylist(),
                    strict=True))
