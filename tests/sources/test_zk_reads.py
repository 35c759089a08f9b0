"""ZooKeeper reads without a ZooKeeper: multiRead's wire format, and the tables both the bulk
reads and the watches feed (sources/zk_tables.py)."""

from __future__ import annotations

import json
import struct

import pytest
from kazoo.exceptions import NoAuthError

from kinspect.clients.zk_bulk import MultiRead, Znode, parse_multi_read
from kinspect.model import PartitionStateZ
from kinspect.sources.zk_tables import ZkTables, broker_address, state_path

_STAT = struct.Struct("!qqqqiiiqiiq")


def _found(data: bytes, mtime: int, mzxid: int) -> bytes:
    header = struct.pack("!i?i", 4, False, -1)
    stat = _STAT.pack(1, mzxid, 0, mtime, 0, 0, 0, 0, len(data), 0, 1)
    return header + struct.pack("!i", len(data)) + data + stat


def _failed(code: int) -> bytes:
    return struct.pack("!i?i", -1, False, code) + struct.pack("!i", code)


DONE = struct.pack("!i?i", -1, True, -1)


def test_multi_read_request_is_get_data_ops_then_done() -> None:
    raw = bytes(MultiRead(["/a", "/bc"]).serialize())
    expected = (struct.pack("!i?i", 4, False, -1) + struct.pack("!i", 2) + b"/a" + b"\x00"
                + struct.pack("!i?i", 4, False, -1) + struct.pack("!i", 3) + b"/bc" + b"\x00"
                + DONE)
    assert raw == expected


def test_multi_read_answer_in_request_order_with_missing_znodes() -> None:
    raw = b"junk" + _found(b'{"leader":1}', 1700, 42) + _failed(-101) + _found(b"", 5, 7) + DONE
    assert parse_multi_read(raw, 4) == [Znode(b'{"leader":1}', 1700, 42), None, Znode(b"", 5, 7)]


def test_multi_read_other_errors_raise_kazoos_exception() -> None:
    with pytest.raises(NoAuthError):
        parse_multi_read(_failed(NoAuthError.code) + DONE)


def _node(value: object, mtime: int = 1000) -> Znode:
    return Znode(json.dumps(value).encode(), mtime, 1)


def test_tables_follow_a_topic_from_creation_to_deletion() -> None:
    tables = ZkTables()
    assert tables.topics_read(["t"]) == (False, ["t"])
    assert tables.topics_read(["t"]) == (False, [])  # already followed: not read twice
    changed, keep, new = tables.assignment_read("t", _node({"partitions": {"0": [1, 2]}}))
    assert (changed, keep, new) == (True, True, [("t", 0)])
    # The state znode is created a moment after the assignment: awaited, not dropped.
    assert tables.state_read(("t", 0), None) == (False, True)
    state = {"leader": 1, "leader_epoch": 3, "isr": [1, 2], "controller_epoch": 2}
    assert tables.state_read(("t", 0), _node(state, 1234)) == (True, True)
    assert tables.state_read(("t", 0), _node(state, 1234)) == (False, True)  # no news
    assert tables.view("connected").partitions == {("t", 0): PartitionStateZ(1, 3, (1, 2), 2, 1234)}
    assert tables.topics_read([]) == (True, [])
    assert tables.view("connected").partitions == {}
    assert tables.assignment_read("t", None) == (False, False, [])
    assert tables.state_read(("t", 0), None) == (False, False)  # topic gone: stop following
    assert not tables.watched_topics and not tables.watched_partitions


def test_tables_follow_brokers_and_the_controller() -> None:
    tables = ZkTables()
    assert tables.broker_ids_read(["2", "1", "x"]) == (False, [1, 2])
    assert tables.broker_read(1, _node({"endpoints": ["PLAINTEXT://h1:9092"]})) == (True, True)
    assert tables.broker_read(2, _node({"host": "h2", "port": 9093})) == (True, True)
    assert tables.broker_read(2, None) == (True, False)  # followed again when the id returns
    assert tables.broker_ids_read(["1", "2"]) == (False, [2])
    assert tables.broker_ids_read(["2"]) == (True, [])
    assert tables.controller_read(_node({"brokerid": 2})) is True
    assert tables.epoch_read(Znode(b"7", 0, 1)) is True
    assert tables.epoch_read(Znode(b"7", 0, 2)) is False
    view = tables.view("suspended")
    assert (view.controller_id, view.controller_epoch, view.brokers) == (2, 7, {})
    assert view.session_state == "suspended"


def test_broker_address_and_state_path() -> None:
    assert broker_address({"endpoints": ["SASL_SSL://b1:9094", "x"]}) == "b1:9094"
    assert broker_address({"host": "b1", "port": 9092}) == "b1:9092"
    assert state_path(("orders", 3)) == "/brokers/topics/orders/partitions/3/state"
