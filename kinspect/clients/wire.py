"""Ask one broker what *it* believes: a minimal Kafka MetadataRequest v1 over a plain socket.

librdkafka merges metadata from whichever broker it likes, so a leader cut off from ZooKeeper
that still believes it leads (the zombie the workshop wants to show) is invisible through it.
Asking every broker directly shows each one's claim. Version 1 is tiny and every broker since
0.10 answers it.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

API_METADATA = 3
CLIENT_ID = b"kinspect-probe"


@dataclass(frozen=True)
class BrokerClaim:
    """One partition as one broker's metadata cache describes it."""

    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True)
class MetadataAnswer:
    broker_id: int | None  # None when we asked an address and do not know its id
    controller_id: int
    brokers: dict[int, str]
    partitions: dict[tuple[str, int], BrokerClaim]


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, fmt: str) -> int:
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return int(value)

    def string(self) -> str | None:
        length = self.take(">h")
        if length < 0:
            return None
        text = self.data[self.pos : self.pos + length].decode()
        self.pos += length
        return text

    def int_array(self) -> tuple[int, ...]:
        count = self.take(">i")
        values = struct.unpack_from(f">{max(count, 0)}i", self.data, self.pos)
        self.pos += 4 * max(count, 0)
        return tuple(values)


def _request(correlation_id: int) -> bytes:
    header = struct.pack(">hhih", API_METADATA, 1, correlation_id, len(CLIENT_ID)) + CLIENT_ID
    body = struct.pack(">i", -1)  # null topic array: every topic
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    chunks, remaining = [], size
    while remaining:
        chunk = sock.recv(min(remaining, 1 << 20))
        if not chunk:
            raise ConnectionError("broker closed the connection")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def parse_metadata_v1(data: bytes) -> MetadataAnswer:
    """Parse a MetadataResponse v1 body (after the correlation id)."""
    reader = _Reader(data)
    brokers: dict[int, str] = {}
    for _ in range(reader.take(">i")):
        node = reader.take(">i")
        host = reader.string() or ""
        port = reader.take(">i")
        reader.string()  # rack
        brokers[node] = f"{host}:{port}"
    controller = reader.take(">i")
    partitions: dict[tuple[str, int], BrokerClaim] = {}
    for _ in range(reader.take(">i")):
        reader.take(">h")  # topic error
        topic = reader.string() or ""
        reader.take(">b")  # is_internal
        for _ in range(reader.take(">i")):
            reader.take(">h")  # partition error
            partition = reader.take(">i")
            leader = reader.take(">i")
            replicas = reader.int_array()
            isr = reader.int_array()
            partitions[(topic, partition)] = BrokerClaim(leader, replicas, isr)
    return MetadataAnswer(None, controller, brokers, partitions)


def ask_metadata(address: str, timeout: float = 2.0, broker_id: int | None = None) -> MetadataAnswer:
    """One round trip to one broker; raises OSError or ConnectionError when it cannot answer."""
    host, _, port = address.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.settimeout(timeout)
        sock.sendall(_request(correlation_id=1))
        (size,) = struct.unpack(">i", _recv_exactly(sock, 4))
        payload = _recv_exactly(sock, size)
    answer = parse_metadata_v1(payload[4:])
    return MetadataAnswer(broker_id, answer.controller_id, answer.brokers, answer.partitions)
