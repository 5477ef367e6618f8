"""The TensorBoard reader decodes the common simple_value records all at once and any other record
field by field, a batch of records at a time: whatever the mix and wherever the batches end, the frame
is the one metric_frame makes from the same rows (same columns and types, rows in record order, NaN
apart from null) and problems come in record order."""

from __future__ import annotations

import math
import struct
from datetime import UTC, datetime

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from reportgen.ingest import tensorboard
from reportgen.ingest.common import metric_frame

WALL = 1796244583.0


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number: int, payload: bytes) -> bytes:
    """A length-delimited field."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def head(step: int, wall: float = WALL) -> bytes:
    """Event fields 1 (wall_time) and 2 (step)."""
    return b"\x09" + struct.pack("<d", wall) + b"\x10" + varint(step)


def simple(tag: str, value: float) -> bytes:
    """Summary.Value {1: tag, 2: simple_value}."""
    return field(1, tag.encode()) + b"\x15" + struct.pack("<f", value)


def event(step: int, *values: bytes, wall: float = WALL) -> bytes:
    return head(step, wall) + field(5, b"".join(field(1, v) for v in values))


def tensor_scalar(tag: str, value: float) -> bytes:
    """Summary.Value {1: tag, 8: TensorProto {1: DT_FLOAT, 2: shape {}, 4: content}}, as tf.summary writes it."""
    return field(1, tag.encode()) + field(8, b"\x08\x01" + field(2, b"") + field(4, struct.pack("<f", value)))


def record(data: bytes, damaged: bool = False) -> bytes:
    length = struct.pack("<Q", len(data))
    crc = tensorboard.masked_crc(data) ^ (1 if damaged else 0)
    return length + struct.pack("<I", tensorboard.masked_crc(length)) + data + struct.pack("<I", crc)


def read(tmp_path, records: list[bytes]):
    path = tmp_path / "events.out.tfevents.1796244583.vm.6803.0"
    path.write_bytes(b"".join(records))
    return tensorboard.read(path, path.name, "r")


MIXED = [
    record(head(0) + field(3, b"brain.Event:2")),  # 1: no values
    record(event(1, simple("loss", 0.5))),  # 2
    record(event(1, tensor_scalar("lr", 0.25))),  # 3: a tensor, decoded field by field
    record(event(1, simple("eval/acc", math.nan), wall=WALL + 1)),  # 4: NaN, an evaluation
    record(event(2, simple("loss", 0.375), simple("lr", 0.125))),  # 5: two values in one summary
    record(event(3, simple("loss", 0.25), wall=0.0)),  # 6: no wall time
    record(event(0, simple("hp_metric", -1.0))),  # 7: Lightning's placeholder, left out
]


def expected() -> pd.DataFrame:
    """The frame metric_frame makes from MIXED's rows."""
    at = datetime.fromtimestamp(WALL, UTC)
    later = datetime.fromtimestamp(WALL + 1, UTC)
    nan = math.nan
    return metric_frame(
        "events.out.tfevents.1796244583.vm.6803.0", [2, 3, 4, 5, 5, 6], "r",
        ["train", "train", "eval", "train", "train", "train"], [1, 1, 1, 2, 2, 3],
        pa.array([at, at, later, at, at, None], pa.timestamp("us", tz="UTC")),
        {"loss": pa.array([0.5, None, None, 0.375, None, 0.25]),
         "eval/acc": pa.array([None, None, nan, None, None, None], pa.float64()),
         "lr": pa.array([None, 0.25, None, None, 0.125, None])},
    )


@pytest.mark.parametrize("batch", [1, 2, 3, tensorboard.BATCH])
def test_a_mix_of_records_is_the_frame_metric_frame_makes_wherever_batches_end(tmp_path, monkeypatch, batch):
    monkeypatch.setattr(tensorboard, "BATCH", batch)
    info, frame = read(tmp_path, MIXED)
    pd.testing.assert_frame_equal(frame, expected(), check_exact=True)
    assert (info.records, info.skipped, info.problems) == (7, 0, [])


def test_metric_columns_are_float64_arrays_that_keep_nan_apart_from_null(tmp_path):
    _info, frame = read(tmp_path, MIXED)
    for tag in ("loss", "eval/acc", "lr"):
        assert frame[tag].dtype == pd.ArrowDtype(pa.float64())
    acc = frame["eval/acc"].array._pa_array.combine_chunks()
    assert acc.is_null().to_pylist() == [True, True, False, True, True, True]
    assert pc.is_nan(acc).to_pylist() == [None, None, True, None, None, None]
    assert frame["line"].dtype == "Int64" and frame["step"].dtype == "Int64"


def test_the_simple_values_of_many_records_equal_the_values_written(tmp_path, monkeypatch):
    """Several batches of simple_value records: every step, time and float32 value comes back exactly."""
    monkeypatch.setattr(tensorboard, "BATCH", 64)
    steps = np.arange(0, 300 * 97, 97)  # one-, two- and three-byte step varints
    values = np.linspace(-3, 3, len(steps)).astype(np.float32)
    values[::50] = np.nan
    tags = [f"train/m{i % 3}" if i % 7 else "eval/loss_long_name" for i in range(len(steps))]
    records = [record(event(int(s), simple(t, float(v)), wall=WALL + int(s) / 8)) for s, t, v in zip(steps, tags, values, strict=True)]
    info, frame = read(tmp_path, records)
    assert (info.records, info.problems) == (len(steps), [])
    assert frame["line"].tolist() == list(range(1, len(steps) + 1))
    assert np.array_equal(frame["step"].to_numpy(dtype=np.int64), steps)
    assert np.array_equal(frame["ts"].astype("int64").to_numpy(), (WALL + steps / 8) * 1e6)
    for tag in set(tags):
        column = frame[tag].to_numpy(dtype=np.float64, na_value=-1.0)
        mine = np.array([t == tag for t in tags])
        assert np.array_equal(column[mine], values[mine].astype(np.float64), equal_nan=True)
        assert (column[~mine] == -1.0).all()
    assert frame["kind"].tolist() == ["eval" if t.startswith("eval/") else "train" for t in tags]


def test_problems_of_one_batch_come_in_record_order(tmp_path):
    """Record 2 is no Event and record 3 fails its data CRC: found by different passes, reported in order."""
    info, frame = read(tmp_path, [record(event(1, simple("loss", 1.0))), record(b"\x0e"),
                                  record(event(3, simple("loss", 3.0)), damaged=True), record(event(4, simple("loss", 4.0)))])
    assert [(p.line, p.message) for p in info.problems] == [
        (2, "record 2: not a readable Event (unsupported wire type 6); record skipped"),
        (3, "record 3 at byte 59: the data CRC does not match; record skipped"),
    ]
    assert (info.records, info.skipped) == (2, 2)
    assert frame["line"].tolist() == [1, 4]


def test_tags_whose_bytes_decode_alike_are_one_column(tmp_path):
    """Two invalid UTF-8 spellings both decode to "loss\ufffd": one tag, as the field-by-field decoder has it."""
    values = [field(1, b"loss\xff") + b"\x15" + struct.pack("<f", 1.0), field(1, b"loss\xfe") + b"\x15" + struct.pack("<f", 2.0)]
    _info, frame = read(tmp_path, [record(head(1) + field(5, field(1, values[0]))), record(head(2) + field(5, field(1, values[1])))])
    assert frame["loss\ufffd"].tolist() == [1.0, 2.0]
