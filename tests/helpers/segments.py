"""Kafka record batches as a broker writes them, for the segment reader and hand-made run dirs."""

from __future__ import annotations

import struct


def record_batch(base: int, epoch: int, values: list[bytes]) -> bytes:
    """A magic-v2 record batch, uncompressed, as a broker writes it (CRC not checked by us)."""
    def varint(n: int) -> bytes:
        n = (n << 1) ^ (n >> 63)
        out = b""
        while True:
            byte = n & 0x7F
            n >>= 7
            if n:
                out += bytes([byte | 0x80])
            else:
                return out + bytes([byte])

    records = b""
    for delta, value in enumerate(values):
        body = b"\x00" + varint(0) + varint(delta) + varint(-1) + varint(len(value)) + value + varint(0)
        records += varint(len(body)) + body
    tail = struct.pack(">bIhiqqqhii", 2, 0, 0, len(values) - 1, 0, 0, -1, -1, -1, len(values))
    after_length = struct.pack(">i", epoch) + tail + records
    return struct.pack(">qi", base, len(after_length)) + after_length


