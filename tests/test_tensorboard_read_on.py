"""A TensorBoard event file its writer appends to is read on from where the last read stopped
(ingest/tensorboard.py read_on, kept by the parse cache): real files written by torch's SummaryWriter
and the Trainer (tests/fixtures/make_fixtures.py) read on from any point read as they do whole, nothing
read twice and nothing lost; a file that did more than grow is read whole.

The records appended to those files are framed here by hand (`record`, `scalar`), in the layout SummaryWriter
writes (TFRecord framing; Event {1: wall_time, 2: step, 5: Summary {1: Value {1: tag, 2: simple_value}}}):
neither torch nor tensorboard is a test dependency. The files they are appended to are the libraries' own."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import changed, ingest_warm, noting

from reportgen.ingest import ingest, tensorboard
from reportgen.ingest.cache import open_cache

FIXTURES = Path(__file__).parent / "fixtures"
TB_CLEAN = next((FIXTURES / "formats" / "tensorboard" / "tb-clean").glob("events.out.tfevents.*"))
TB_BROKEN = next((FIXTURES / "formats" / "tensorboard" / "tb-broken").glob("events.out.tfevents.*"))
TRAINER = next((FIXTURES / "formats" / "hf" / "hf-clean" / "runs").glob("*/events.out.tfevents.*"))


def boundaries(data: bytes) -> list[int]:
    """Where each record of a TFRecord file starts (and where the last one ends)."""
    out, pos = [0], 0
    while pos + 12 <= len(data):
        pos += 12 + struct.unpack_from("<Q", data, pos)[0] + 4
        out.append(min(pos, len(data)))
    return out


def same(a, b) -> None:
    (info_a, frame_a, texts_a), (info_b, frame_b, texts_b) = a, b
    pd.testing.assert_frame_equal(frame_a, frame_b)
    assert info_a == info_b and texts_a == texts_b


def whole(path: Path) -> tuple:
    return tensorboard.read_on(path, path.name, "r")[0]


def record(data: bytes, data_crc_flip: int = 0, length_crc_flip: int = 0) -> bytes:
    length = struct.pack("<Q", len(data))
    return (length + struct.pack("<I", tensorboard.masked_crc(length) ^ length_crc_flip)
            + data + struct.pack("<I", tensorboard.masked_crc(data) ^ data_crc_flip))


def scalar(tag: str, step: int, value: float, wall: float = 1796244600.0) -> bytes:
    """An Event {1: wall_time, 2: step, 5: Summary {1: Value {1: tag, 2: simple_value}}}, as SummaryWriter lays it out."""
    step_bytes = bytearray()
    n = step
    while True:
        byte, n = n & 0x7F, n >> 7
        step_bytes.append(byte | (0x80 if n else 0))
        if not n:
            break
    value_msg = b"\x0a" + bytes([len(tag)]) + tag.encode() + b"\x15" + struct.pack("<f", value)
    summary = b"\x0a" + bytes([len(value_msg)]) + value_msg
    return b"\x09" + struct.pack("<d", wall) + b"\x10" + bytes(step_bytes) + b"\x2a" + bytes([len(summary)]) + summary


@pytest.mark.parametrize("source", [TB_CLEAN, TB_BROKEN, TRAINER], ids=["summary-writer", "killed-writer", "trainer"])
def test_a_file_read_on_from_where_it_stopped_reads_as_the_whole_file_wherever_it_was_cut(tmp_path, source):
    """Every way a growing event file can have been seen (cut at a record's end, inside a record's header,
    inside its data) then read on gives what reading the whole file gives: values, problems, texts."""
    data = source.read_bytes()
    path = tmp_path / source.name
    path.write_bytes(data)
    expected = whole(path)
    ends = boundaries(data)
    cuts = sorted({*ends[:: max(1, len(ends) // 40)], *range(0, len(data), 211), *(e + 5 for e in ends[:: max(1, len(ends) // 10)])})
    for cut in cuts:
        path.write_bytes(data[:cut])
        _seen, since = tensorboard.read_on(path, path.name, "r")
        assert since is not None
        path.write_bytes(data)
        again, _ = tensorboard.read_on(path, path.name, "r", since)
        same(again, expected)


def test_a_file_that_grew_is_read_from_where_it_stopped_not_from_its_start(tmp_path, monkeypatch):
    path = tmp_path / TB_CLEAN.name
    data = TB_CLEAN.read_bytes()
    path.write_bytes(data)
    first, since = tensorboard.read_on(path, path.name, "r")
    with path.open("ab") as handle:
        handle.write(record(scalar("loss", 1000, 0.5)) + record(scalar("loss", 1001, 0.25)))
    framed = noting(monkeypatch, tensorboard, "_decode",
                    lambda data, whole, info, out, records: (records.base, len(data), records.count))
    (info, frame, _texts), after = tensorboard.read_on(path, path.name, "r", since)
    assert framed == [(len(data), path.stat().st_size - len(data), since.count)]  # the two new records alone
    assert frame["step"].tolist()[-2:] == [1000, 1001] and frame["loss"].tolist()[-2:] == [0.5, 0.25]
    assert frame["line"].tolist()[-2:] == [since.count + 1, since.count + 2]  # numbered after the others
    assert info.records == first[0].records + 2
    assert after.count == since.count + 2 and after.at.end == path.stat().st_size
    monkeypatch.undo()
    same((info, frame, _texts), whole(path))


@pytest.mark.parametrize("change", ["rewritten", "truncated", "edited at the start", "replaced by another file"])
def test_a_file_that_did_not_only_grow_is_read_whole(tmp_path, monkeypatch, change):
    """Counter-examples: what was read before is trusted only when the file is the same one, no shorter, and
    its first bytes and the bytes before where the read stopped are as they were."""
    data = TB_CLEAN.read_bytes()
    path = tmp_path / TB_CLEAN.name
    path.write_bytes(data)
    _seen, since = tensorboard.read_on(path, path.name, "r")
    ends = boundaries(data)
    edited = {
        "rewritten": data[: ends[-2]] + record(scalar("loss", 7, 9.0)) + record(scalar("loss", 8, 9.0)),
        "truncated": data[: ends[len(ends) // 2]],
        "edited at the start": data[: ends[1]] + record(scalar("loss", 0, 3.0)) + data[ends[2]:] + record(scalar("loss", 999, 1.0)),
        "replaced by another file": data + record(scalar("loss", 999, 1.0)),
    }[change]
    changed(path, edited, replaced=change == "replaced by another file")
    framed = noting(monkeypatch, tensorboard, "_decode", lambda data, whole, info, out, records: records.base)
    got, _ = tensorboard.read_on(path, path.name, "r", since)
    assert framed == [0]
    monkeypatch.undo()
    same(got, whole(path))


def test_a_record_being_written_is_read_once_it_is_whole_and_counted_once(tmp_path):
    """The last record of a live file, half written, is cut off while it is; once whole, the next read reads it
    from its start, as one record."""
    data = TB_CLEAN.read_bytes()
    path = tmp_path / TB_CLEAN.name
    more = record(scalar("loss", 1000, 0.5))
    path.write_bytes(data + more[:20])
    (info, _frame, _texts), since = tensorboard.read_on(path, path.name, "r")
    assert info.cut_off and info.skipped == 1 and since.at.end == len(data)
    path.write_bytes(data + more)
    (info, frame, _texts), _ = tensorboard.read_on(path, path.name, "r", since)
    assert not info.cut_off and info.skipped == 0 and frame["step"].iloc[-1] == 1000
    same((info, frame, _texts), whole(path))


def test_damage_before_the_end_is_read_on_past_when_the_record_can_be_framed_and_never_when_it_cannot(tmp_path):
    """A record whose data CRC fails is skipped and the file is read on past it; one whose length CRC fails
    ends the framing, so nothing is kept to read on from (counter-example): the next read reads it whole."""
    data = TB_CLEAN.read_bytes()
    path = tmp_path / TB_CLEAN.name
    path.write_bytes(data + record(scalar("loss", 1000, 0.5), data_crc_flip=1))
    _seen, since = tensorboard.read_on(path, path.name, "r")
    assert since is not None and since.info.skipped == 1
    path.write_bytes(path.read_bytes() + record(scalar("loss", 1001, 0.25)))
    got, _ = tensorboard.read_on(path, path.name, "r", since)
    same(got, whole(path))
    assert got[1]["step"].iloc[-1] == 1001 and got[0].skipped == 1
    path.write_bytes(data + record(scalar("loss", 1000, 0.5), length_crc_flip=1))
    (info, _frame, _texts), since = tensorboard.read_on(path, path.name, "r")
    assert since is None and info.skipped == 1


def test_a_file_past_the_read_budget_keeps_nothing_to_read_on_from(tmp_path, monkeypatch):
    """Counter-example: a file the budget cut was not read to its end: no read on from an end never reached."""
    monkeypatch.setattr(tensorboard, "LOG_BUDGET", 4000)
    path = tmp_path / TB_CLEAN.name
    path.write_bytes(TB_CLEAN.read_bytes())
    (info, _frame, _texts), since = tensorboard.read_on(path, path.name, "r")
    assert since is None and "only the first" in info.problems[0].message


def test_a_campaign_whose_event_file_grew_reads_that_file_on_and_as_a_build_without_the_cache(tmp_path, monkeypatch):
    """ingest with the parse cache: the other files are loaded, the grown one is read on from where it
    stopped, and the campaign is the one a build without the cache reads."""
    logs = tmp_path / "trainer-tb-only"
    shutil.copytree(FIXTURES / "campaigns" / "trainer-tb-only", logs)
    ingest(logs, cache=open_cache(logs))
    grown = sorted(logs.rglob("events.out.tfevents.*"))[0]
    size = grown.stat().st_size
    with grown.open("ab") as handle:
        handle.write(record(scalar("train/loss", 10_000, 0.125)))
    got, warm, bases = ingest_warm(logs, monkeypatch, tensorboard, "_decode",
                                   lambda data, whole, info, out, records: records.base)
    assert warm.reads == 1 and bases == [size]
    steps = got.metrics.loc[got.metrics["path"] == grown.relative_to(logs).as_posix(), "step"].to_numpy()
    assert np.max(steps) == 10_000
