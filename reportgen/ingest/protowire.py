"""Protocol buffer wire format, decoded by hand: the few readers that need it (TensorBoard events,
W&B transaction logs) read only the fields they use, without the generated classes of either library.

A message is a sequence of fields, each a varint key (field number << 3 | wire type) and a value:
wire type 0 a varint, 1 eight bytes, 2 a varint length and that many bytes, 5 four bytes.
"""

from __future__ import annotations

from collections.abc import Iterator


def varint(buf: bytes, pos: int) -> tuple[int, int]:
    """The varint at pos and the position after it; ValueError past 64 bits, IndexError past the end."""
    result = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def skip(buf: bytes, pos: int, wire: int) -> int:
    """The position after a value of this wire type starting at pos."""
    if wire == 0:
        return varint(buf, pos)[1]
    if wire == 1:
        return pos + 8
    if wire == 2:
        size, pos = varint(buf, pos)
        return pos + size
    if wire == 5:
        return pos + 4
    raise ValueError(f"unsupported wire type {wire}")


def fields(buf: bytes, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(field number, wire type, value start, value end) of each field in buf[start:end]."""
    pos = start
    while pos < end:
        key, pos = varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 2:
            size, pos = varint(buf, pos)
            yield number, wire, pos, pos + size
            pos += size
        else:
            after = skip(buf, pos, wire)
            yield number, wire, pos, after
            pos = after
        if pos > end:
            raise ValueError("field runs past the end of its message")


def signed(value: int) -> int:
    """A 64-bit varint as the signed integer (int64) it encodes."""
    return value - (1 << 64) if value >= 1 << 63 else value
