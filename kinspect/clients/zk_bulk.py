"""Reading thousands of znodes at once: ZooKeeper's multiRead, pipelined get as the fallback.

A 10,000-partition cluster has 10,000 partition-state znodes. Read one request each, ZooKeeper
itself needs 0.4-0.7 s on two busy cores and kazoo's connection thread (one request per loop
turn) about 2 s; read in multiRead batches of a few hundred (ZooKeeper 3.6+, opcode 22) the
same reads take about 0.1 s. multiRead sets no watches: callers that watch arm them afterwards
(see sources/zk_watch.py). A server without multiRead answers UNIMPLEMENTED (and drops the
connection, which kazoo re-establishes in the same session): then pipelined gets do the job.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError, UnimplementedError
from kazoo.protocol.serialization import read_buffer, write_string

MULTI_READ = 22
GET_DATA = 4
ERROR = -1
BATCH = 500  # reads per multiRead: a few hundred KB per answer at most

_HEADER = struct.Struct("!i?i")  # MultiHeader: type, done, err
_STAT = struct.Struct("!qqqqiiiqiiq")
_NO_NODE = NoNodeError.code


class Znode(NamedTuple):
    """What a reader needs of a znode: its data and when and in which transaction it changed."""

    data: bytes
    mtime_ms: int
    mzxid: int


class MultiRead:
    """A kazoo request object (type, serialize, deserialize) for one multiRead of getData ops.

    Answers one entry per path: a Znode, or None where the znode does not exist.
    """

    type = MULTI_READ

    def __init__(self, paths: Sequence[str]) -> None:
        self.paths = list(paths)

    def serialize(self) -> bytearray:
        out = bytearray()
        for path in self.paths:
            out += _HEADER.pack(GET_DATA, False, -1)
            out += write_string(path)
            out += b"\x00"  # watch: multiRead ignores it anyway
        out += _HEADER.pack(-1, True, -1)
        return out

    @classmethod
    def deserialize(cls, raw: bytes, offset: int) -> list[Znode | None]:
        return parse_multi_read(raw, offset)


def parse_multi_read(raw: bytes, offset: int = 0) -> list[Znode | None]:
    """The results of a multiRead answer, in request order (None: no such znode)."""
    out: list[Znode | None] = []
    while True:
        kind, done, _err = _HEADER.unpack_from(raw, offset)
        offset += _HEADER.size
        if done:
            return out
        if kind == ERROR:
            (code,) = struct.unpack_from("!i", raw, offset)
            offset += 4
            if code != _NO_NODE:
                raise _error(code)
            out.append(None)
            continue
        data, offset = read_buffer(raw, offset)
        stat = _STAT.unpack_from(raw, offset)
        offset += _STAT.size
        out.append(Znode(data or b"", int(stat[3]), int(stat[1])))


def _error(code: int) -> Exception:
    from kazoo.exceptions import EXCEPTIONS

    return EXCEPTIONS[code]()  # type: ignore[no-any-return]


def _batches(paths: Sequence[str], size: int) -> Iterable[Sequence[str]]:
    for start in range(0, len(paths), size):
        yield paths[start:start + size]


class BulkReader:
    """Reads many znodes of one kazoo client; remembers a server without multiRead."""

    def __init__(self, zk: KazooClient) -> None:
        self.zk = zk
        self.multi_read = True

    def read(self, paths: Sequence[str], timeout: float) -> dict[str, Znode | None]:
        """Every path's znode (None: absent). Raises kazoo's errors (connection loss, ...)."""
        if not paths:
            return {}
        if self.multi_read:
            try:
                return self._multi(paths, timeout)
            except UnimplementedError:
                self.multi_read = False
        return self._pipelined(paths, timeout)

    def _multi(self, paths: Sequence[str], timeout: float) -> dict[str, Znode | None]:
        root = self.zk.chroot or ""
        pending = []
        for batch in _batches(paths, BATCH):
            result = self.zk.handler.async_result()
            # kazoo has no public multiRead; its request queue takes any request object.
            self.zk._call(MultiRead([root + p for p in batch]), result)
            pending.append((batch, result))
        out: dict[str, Znode | None] = {}
        for batch, result in pending:
            out.update(zip(batch, result.get(timeout=timeout), strict=True))
        return out

    def _pipelined(self, paths: Sequence[str], timeout: float) -> dict[str, Znode | None]:
        pending = [(path, self.zk.get_async(path)) for path in paths]
        out: dict[str, Znode | None] = {}
        for path, result in pending:
            try:
                data, stat = result.get(timeout=timeout)
            except NoNodeError:
                out[path] = None
                continue
            out[path] = Znode(data or b"", int(stat.mtime), int(stat.mzxid))
        return out


def znode_of(data: bytes | None, stat: Any) -> Znode | None:
    """A kazoo (data, stat) pair as a Znode (None: the znode is gone)."""
    if stat is None:
        return None
    return Znode(data or b"", int(stat.mtime), int(stat.mzxid))
