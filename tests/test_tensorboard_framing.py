"""TensorBoard records are framed by their length and checked by two CRCs (docs/formats.md): a
record whose length CRC is wrong is reported as damaged and, the length being untrustworthy, ends
the read there, everything before it kept; a record whose data CRC is wrong is skipped alone."""

from __future__ import annotations

import struct

from reportgen.ingest import tensorboard

WALL = 1796244583.0


def event(step: int, value: float) -> bytes:
    """An Event {1: wall_time, 2: step, 5: Summary {1: Value {1: tag "loss", 2: simple_value}}}: 26 bytes
    (9 wall time, 2 step, 2 + 13 summary, whose value is 2 + 4 tag + 5 float)."""
    value_msg = b"\x0a\x04loss" + b"\x15" + struct.pack("<f", value)
    summary = b"\x0a" + bytes([len(value_msg)]) + value_msg
    return b"\x09" + struct.pack("<d", WALL) + b"\x10" + bytes([step]) + b"\x2a" + bytes([len(summary)]) + summary


def record(data: bytes, length_crc_flip: int = 0, data_crc_flip: int = 0) -> bytes:
    """A TFRecord: length, masked CRC-32C of the length, data, masked CRC-32C of the data (42 bytes here)."""
    length = struct.pack("<Q", len(data))
    return (length + struct.pack("<I", tensorboard.masked_crc(length) ^ length_crc_flip)
            + data + struct.pack("<I", tensorboard.masked_crc(data) ^ data_crc_flip))


def read(tmp_path, records: list[bytes]):
    path = tmp_path / "events.out.tfevents.1796244583.vm.6803.0"
    path.write_bytes(b"".join(records))
    info, frame = tensorboard.read(path, path.name, "r")
    return info, list(zip(frame["step"].tolist(), frame["loss"].tolist(), strict=True))


def test_the_three_records_of_an_intact_file_are_read(tmp_path):
    info, rows = read(tmp_path, [record(event(10, 1.5)), record(event(20, 1.25)), record(event(30, 1.0))])
    assert rows == [(10, 1.5), (20, 1.25), (30, 1.0)]
    assert (info.records, info.skipped, info.problems, info.cut_off) == (3, 0, [], False)


def test_a_wrong_length_crc_is_reported_and_what_came_before_it_is_read(tmp_path):
    info, rows = read(tmp_path, [record(event(10, 1.5)), record(event(20, 1.25), length_crc_flip=1),
                                 record(event(30, 1.0))])
    assert rows == [(10, 1.5)]
    assert (info.records, info.skipped, info.cut_off) == (1, 1, False)
    # Record 2 starts after record 1's 12 + 26 + 4 = 42 bytes.
    assert [(p.line, p.message) for p in info.problems] == [
        (2, "record 2 at byte 42: the length's CRC does not match; the rest of the file cannot be framed and is not read")]


def test_a_wrong_data_crc_skips_that_record_only(tmp_path):
    """Counter-example: the length can be trusted, so the next record is framed and read."""
    info, rows = read(tmp_path, [record(event(10, 1.5)), record(event(20, 1.25), data_crc_flip=1),
                                 record(event(30, 1.0))])
    assert rows == [(10, 1.5), (30, 1.0)]
    assert (info.records, info.skipped) == (2, 1)
    assert [(p.line, p.message) for p in info.problems] == [(2, "record 2 at byte 42: the data CRC does not match; record skipped")]


def test_a_record_whose_step_runs_past_its_end_is_reported_and_the_next_one_read(tmp_path):
    """An 18-byte record that starts like an event (wall time, step key) but whose step varint does not end
    inside it: a damaged record like any other, not an error of the reader."""
    data = b"\x09" + struct.pack("<d", WALL) + b"\x10" + b"\xff" * 8
    info, rows = read(tmp_path, [record(data), record(event(20, 1.25))])
    assert rows == [(20, 1.25)]
    assert (info.records, info.skipped) == (1, 1)
    assert [(p.line, p.message) for p in info.problems] == [(1, "record 1: not a readable Event (index out of range); record skipped")]
