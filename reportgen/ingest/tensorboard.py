"""TensorBoard event files (`events.out.tfevents.*`), read without TensorFlow.

An event file is a sequence of TFRecords: a little-endian uint64 length, the masked CRC-32C of
those 8 bytes, the record, and the masked CRC-32C of the record. Every CRC is checked (with the
hardware CRC-32C of google-crc32c). Each record is an `Event` protocol buffer, decoded here by
hand for the few fields reportgen needs:

    Event:        1 wall_time (double), 2 step (int64), 3 file_version, 5 summary
    Summary:      1 value (repeated)
    Value:        1 tag, 2 simple_value (float), 8 tensor, 9 metadata
    TensorProto:  1 dtype, 2 shape, 4 tensor_content, 5 float_val, 6 double_val, 7 int_val, 10 int64_val
    Metadata:     1 plugin_data { 1 plugin_name }

Scalars come from `simple_value` (torch's SummaryWriter, Keras) and from one-element tensors
(tf.summary, the `scalars` plugin). A record whose CRC fails is reported and skipped; a file
cut off mid-record (a killed writer) is reported, and everything before the cut is kept.

A file is read a batch of records at a time: one pass frames the records and computes their CRCs;
the records in the layout writers give a lone simple_value (nearly all of a large file) are then
decoded with numpy, all at once, and any other record field by field. Values are kept in arrays,
not as a Python object each, and the frame is built from those arrays once the file's bytes are
released, so a large file needs little more memory than its bytes and its values' arrays.
"""

from __future__ import annotations

import copy
import re
import struct
from array import array
from dataclasses import dataclass
from functools import cache
from pathlib import Path, PurePosixPath

import google_crc32c
import numpy as np
import pandas as pd
import pyarrow as pa
from numpy.lib.stride_tricks import sliding_window_view

from reportgen.boundary import read_file
from reportgen.ingest import hf
from reportgen.ingest.cache import EDGE, ReadTo, grown
from reportgen.ingest.common import (
    EPOCH_END,
    LOG_BUDGET,
    MAX_COUNT,
    Reading,
    is_eval,
)
from reportgen.ingest.protowire import fields, signed, varint
from reportgen.ingest.scan import Kept, Reader, Scan, Source, parents
from reportgen.model import (
    Decision,
    Evidence,
    InputFile,
    LogMessage,
    MessageKind,
    RunFacts,
)

FORMAT = "tensorboard"
_HEADER = struct.Struct("<QI")
_U32 = struct.Struct("<I")
_DOUBLE = struct.Struct("<d")
_FLOAT = struct.Struct("<f")
_MASK_DELTA = 0xA282EAD8
# TensorProto dtypes with one number per element: struct code and size.
_DTYPES = {1: ("f", 4), 2: ("d", 8), 3: ("i", 4), 9: ("q", 8), 19: ("e", 2)}
# events.out.tfevents.<time>.<host>.<pid>.<n>: the files one writer process opened.
_FILE_NAME = re.compile(r"^events\.out\.tfevents\.(\d+)\.(.+)\.(\d+)\.(\d+)(?:\.\w+)?$")


def masked_crc(data: bytes) -> int:
    """The CRC-32C of `data`, masked as TFRecord stores it (rotated right by 15 bits, plus a constant)."""
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def sniff(head: bytes) -> bool:
    """A TFRecord whose length and record CRCs check out and whose record is an Event."""
    if len(head) < 16:
        return False
    length, length_crc = _HEADER.unpack_from(head, 0)
    if masked_crc(head[:8]) != length_crc or length > len(head) - 16:
        return False
    data = head[12:12 + length]
    return masked_crc(data) == _U32.unpack_from(head, 12 + length)[0] and data[:1] in (b"\x09", b"\x10", b"\x1a")


def _plugin_name(buf: bytes, start: int, end: int) -> str | None:
    for number, _wire, a, b in fields(buf, start, end):
        if number == 1:  # plugin_data
            for n2, _w2, c, d in fields(buf, a, b):
                if n2 == 1:
                    return buf[c:d].decode("utf-8", errors="replace")
    return None


MAX_TEXTS = 16
MAX_TEXT_BYTES = 64 << 10


def _tensor_string(buf: bytes, start: int, end: int) -> str | None:
    """The first string of a string tensor (TensorProto 8: string_val), as a text summary holds it."""
    for number, wire, a, b in fields(buf, start, end):
        if number == 8 and wire == 2 and b - a <= MAX_TEXT_BYTES:
            return buf[a:b].decode("utf-8", errors="replace")
    return None


def _tensor_scalar(buf: bytes, start: int, end: int) -> float | None:
    """The value of a one-element numeric tensor, or None for anything else."""
    dtype = 0
    content = packed = None
    packed_field = 0
    for number, wire, a, b in fields(buf, start, end):
        if number == 1 and wire == 0:
            dtype = varint(buf, a)[0]
        elif number == 2:  # TensorShapeProto: repeated dim { size }
            for n, _w, c, d in fields(buf, a, b):
                if n == 2:
                    sizes = [varint(buf, e)[0] for m, _x, e, _f in fields(buf, c, d) if m == 1]
                    if sizes and sizes[0] != 1:
                        return None
        elif number == 4:
            content = buf[a:b]
        elif number in (5, 6, 7, 10, 13) and wire in (1, 2, 5, 0):
            packed_field, packed = number, (wire, a, b)
    if dtype not in _DTYPES:
        return None
    code, size = _DTYPES[dtype]
    if content is not None:
        if len(content) != size:
            return None
        return float(struct.unpack("<" + code, content)[0])
    if packed is None:
        return None
    wire, a, b = packed
    if packed_field == 5:
        raw = buf[a:b] if wire == 2 else buf[a:a + 4]
        return float(_FLOAT.unpack(raw[:4])[0]) if len(raw) == 4 else None
    if packed_field == 6:
        raw = buf[a:b] if wire == 2 else buf[a:a + 8]
        return float(_DOUBLE.unpack(raw[:8])[0]) if len(raw) == 8 else None
    if packed_field == 13:  # half values are stored as int32 bit patterns
        bits = varint(buf, a)[0]
        return float(np.array([bits], dtype=np.uint16).view(np.float16)[0])
    return float(signed(varint(buf, a)[0]))


BATCH = 1 << 16  # records framed, checked and decoded at a time: bounds the arrays a batch needs
_COLUMNS = ("record", "wall", "step", "tag", "value")
_COLUMN_TYPES = {"record": np.int64, "wall": np.float64, "step": np.int64, "tag": np.int32, "value": np.float64}


class _Scalars:
    """The scalar values of one file: arrays a batch at a time, and the tags they name.

    The field-by-field decoder (`_event`) appends to the lists, which each batch then moves into its arrays.
    """

    def __init__(self):
        self.record: list[int] = []
        self.wall: list[float] = []
        self.step: list[int] = []
        self.tag: list[str] = []
        self.value: list[float] = []
        self.plugins: dict[str, str | None] = {}  # each tag's plugin, from the first metadata seen
        self.texts: dict[str, str] = {}  # the first text summary of each tag (the Trainer's "args")
        self.names: list[str] = []  # the tags, by the number the "tag" arrays hold
        self.numbers: dict[str, int] = {}
        self.raw_numbers: dict[bytes, int] = {}  # a tag's bytes as written, to its number
        self.parts: dict[str, list[np.ndarray]] = {name: [] for name in _COLUMNS}

    @classmethod
    def of(cls, since: Decoded) -> _Scalars:
        """The values an earlier read kept, for a read on to add to."""
        out = cls()
        out.names = list(since.names)
        out.numbers = {name: number for number, name in enumerate(out.names)}
        out.plugins, out.texts = dict(since.plugins), dict(since.texts)
        out.parts = {name: [since.columns[name]] for name in _COLUMNS}
        return out

    def number(self, name: str) -> int:
        """The number of a tag, given one when first seen."""
        number = self.numbers.get(name)
        if number is None:
            number = self.numbers[name] = len(self.names)
            self.names.append(name)
        return number

    def raw_number(self, raw: bytes) -> int:
        """The number of a tag as its bytes are written (decoded as the field-by-field decoder does)."""
        number = self.raw_numbers.get(raw)
        if number is None:
            number = self.raw_numbers[raw] = self.number(raw.decode("utf-8", errors="replace"))
        return number

    def add(self, batch: dict[str, np.ndarray]) -> None:
        """A batch's values, with the decoder's values of the same batch put in record order among them."""
        if self.record:
            decoded = {"record": self.record, "wall": self.wall, "step": self.step,
                       "tag": [self.number(tag) for tag in self.tag], "value": self.value}
            at = np.searchsorted(batch["record"], np.asarray(self.record, dtype=np.int64))
            batch = {name: np.insert(batch[name], at, np.asarray(decoded[name], dtype=_COLUMN_TYPES[name]))
                     for name in _COLUMNS}
            for values in (self.record, self.wall, self.step, self.tag, self.value):
                values.clear()
        for name in _COLUMNS:
            self.parts[name].append(batch[name])

    def columns(self) -> dict[str, np.ndarray]:
        """Each column as one array; the batches' arrays are released as each column is joined."""
        columns = {}
        for name in _COLUMNS:
            parts = self.parts.pop(name)
            if len(parts) == 1:
                columns[name] = parts[0]
            else:
                columns[name] = np.concatenate([np.empty(0, dtype=_COLUMN_TYPES[name]), *parts])
        return columns


def _event(buf: bytes, record: int, out: _Scalars) -> None:
    """Decode one Event record in any field order (the records `_simple_values` does not take)."""
    wall = 0.0
    step = 0
    summary = None
    for number, wire, a, b in fields(buf, 0, len(buf)):
        if number == 1 and wire == 1:
            wall = _DOUBLE.unpack_from(buf, a)[0]
        elif number == 2 and wire == 0:
            step = signed(varint(buf, a)[0])
        elif number == 5 and wire == 2:
            summary = (a, b)
    if summary is None:
        return
    for number, wire, a, b in fields(buf, *summary):
        if number == 1 and wire == 2:
            _value(buf, a, b, record, wall, step, out)


def _value(buf: bytes, a: int, b: int, record: int, wall: float, step: int, out: _Scalars) -> None:
    """A Summary.Value in any field order: a simple_value, a one-element tensor, or something else."""
    tag = None
    value = None
    tensor = None
    plugin = None
    for n, wire, c, d in fields(buf, a, b):
        if n == 1:
            tag = buf[c:d].decode("utf-8", errors="replace")
        elif n == 2 and wire == 5:
            value = _FLOAT.unpack_from(buf, c)[0]
        elif n == 8:
            tensor = (c, d)
        elif n == 9:
            plugin = _plugin_name(buf, c, d)
    if tag is None:
        return
    if plugin is not None:
        out.plugins.setdefault(tag, plugin)
    if tensor is not None and out.plugins.get(tag) == "text" and tag not in out.texts and len(out.texts) < MAX_TEXTS:
        text = _tensor_string(buf, *tensor)
        if text is not None:
            out.texts[tag] = text
        return
    if value is None and tensor is not None and out.plugins.get(tag) in (None, "scalars"):
        value = _tensor_scalar(buf, *tensor)
    if value is None:  # a histogram, image, text or hparams summary
        return
    out.record.append(record)
    out.wall.append(wall)
    out.step.append(step)
    out.tag.append(tag)
    out.value.append(value)


def _mask(crc: np.ndarray) -> np.ndarray:
    """CRC-32C values masked as TFRecord stores them (see masked_crc)."""
    crc = crc.astype(np.uint32)
    return ((crc >> np.uint32(15)) | (crc << np.uint32(17))) + np.uint32(_MASK_DELTA)


class _Bytes:
    """A file's bytes with numpy views that read a byte, or a little-endian number, at any offset."""

    def __init__(self, data: bytes):
        self.data = data
        self.u8 = np.frombuffer(data, dtype=np.uint8)
        self.last = len(data) - 1
        self.u32 = self._at("<u4")
        self.u64 = self._at("<u8")
        self.f32 = self._at("<f4")
        self.f64 = self._at("<f8")

    def _at(self, dtype: str) -> np.ndarray:
        """A view whose element i is the number of this type starting at byte i (unaligned reads)."""
        size = np.dtype(dtype).itemsize
        return np.ndarray((max(len(self.data) - size + 1, 0),), dtype, buffer=self.data, strides=(1,))

    def byte(self, at: np.ndarray) -> np.ndarray:
        """The byte at each offset; an offset past the end reads the last byte, where a layout check
        reads past a record that is too short for it (and fails on the record's length anyway)."""
        return self.u8[np.minimum(at, self.last)]


class _Records:
    """Frames a file's TFRecords a batch at a time, checking each length's CRC as it goes: a wrong one
    leaves the rest of the file unframed, so framing has to stop there."""

    def __init__(self, data: bytes, whole: bool, count: int = 0, base: int = 0):
        self.data = data
        self.whole = whole  # False: the budget cut the file, and a record cut off at its end is not damage
        self.base = base  # where `data` starts in the file (a file read on from where it stopped)
        self.pos = 0
        self.count = count  # records met so far, damaged ones included
        self.done = not data
        self.end: tuple[int, str] | None = None  # the problem that ended the framing, if one did
        self.cut_off = False

    def _cut(self, record: int, what: str) -> None:
        """The file ends inside a record: damage when the whole file was read (a writer stopped mid-record),
        not when the budget cut it."""
        if self.whole:
            self.end = (record, f"{what}: the writer stopped mid-record")
            self.cut_off = True
        self.done = True

    def batch(self) -> tuple[np.ndarray, np.ndarray]:
        """Up to BATCH more records: the offset of each one's data, and the CRC-32C of that data
        (compared with the stored one by the caller, all at once)."""
        buf, size, pos, record = self.data, len(self.data), self.pos, self.count
        starts, crcs = array("q"), array("I")
        add_start, add_crc = starts.append, crcs.append
        header, crc32c = _HEADER.unpack_from, google_crc32c.value
        limit = record + BATCH
        while record < limit:
            if pos >= size:
                self.done = True
                break
            record += 1
            if size - pos < 12:
                self._cut(record, f"cut off in the header of record {record} ({size - pos} bytes left)")
                break
            length, length_crc = header(buf, pos)
            crc = crc32c(buf[pos:pos + 8])
            if (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF != length_crc:
                self.end = (record, f"record {record} at byte {self.base + pos}: the length's CRC does not match; "
                                    "the rest of the file cannot be framed and is not read")
                self.done = True
                break
            start = pos + 12
            end = start + length
            if end + 4 > size:
                self._cut(record, f"record {record} is cut off ({size - start} of {length + 4} bytes)")
                break
            add_start(start)
            add_crc(crc32c(buf[start:end]))
            pos = end + 4
        self.pos, self.count = pos, record
        return np.frombuffer(starts, dtype=np.int64), np.frombuffer(crcs, dtype=np.uint32)


def _simple_values(data: _Bytes, starts: np.ndarray, lengths: np.ndarray) -> dict[str, np.ndarray]:
    """The records holding one simple_value in the layout writers give it, decoded all at once:
    Event {1: wall_time, 2: step, 5: Summary {1: Value {1: tag, 2: simple_value}}}, the lengths of the
    summary, value and tag one byte each. "index" says which of `starts` they are; the others need `_event`.
    """
    byte = data.byte
    index = np.flatnonzero((lengths > 16) & (byte(starts) == 0x09) & (byte(starts + 9) == 0x10))
    start, length = starts[index], lengths[index]
    # The step: a varint from byte 10, of ten bytes at most; one that does not fit 63 bits is no step here.
    step = np.zeros(len(index), dtype=np.uint64)
    after = np.full(len(index), 20)  # where the varint ends, relative to the record (past ten bytes: byte 20)
    open_ = np.ones(len(index), dtype=bool)
    too_big = np.zeros(len(index), dtype=bool)
    for k in range(10):
        part = byte(start + 10 + k)
        if k < 9:
            step |= np.where(open_, part & 0x7F, 0).astype(np.uint64) << np.uint64(7 * k)
        else:
            too_big = open_ & ((part & 0x7F) != 0)
        ends = open_ & (part < 0x80)
        after[ends] = 11 + k
        open_ &= ~ends
        if not open_.any():
            break
    at = start + after  # the Summary's key
    tag_length = byte(at + 5)
    tag_end = after + 6 + tag_length
    simple = (~too_big & (after + 6 < length) & (byte(at) == 0x2A) & (byte(at + 1) + after + 2 == length)
              & (byte(at + 2) == 0x0A) & (byte(at + 3) + after + 4 == length) & (byte(at + 4) == 0x0A)
              & (tag_length < 0x80) & (tag_end + 5 == length) & (byte(start + tag_end) == 0x15))
    start = start[simple]
    return {
        "index": index[simple],
        "wall": data.f64[start + 1],
        "step": step[simple].astype(np.int64),
        "tag_start": (at + 6)[simple],
        "tag_length": tag_length[simple],
        "value": data.f32[start + tag_end[simple] + 1].astype(np.float64),
    }


def _tag_numbers(data: _Bytes, tag_start: np.ndarray, tag_length: np.ndarray, out: _Scalars) -> np.ndarray:
    """The number of each tag, given by its bytes: each distinct tag is decoded once."""
    numbers = np.empty(len(tag_start), dtype=np.int32)
    for length in np.unique(tag_length).tolist():
        rows = np.flatnonzero(tag_length == length)
        if length == 0:
            numbers[rows] = out.raw_number(b"")
            continue
        raw = sliding_window_view(data.u8, length)[tag_start[rows]]
        distinct, which = np.unique(raw.view(f"V{length}").ravel(), return_inverse=True)
        known = np.array([out.raw_number(tag.tobytes()) for tag in distinct], dtype=np.int32)
        numbers[rows] = known[which]
    return numbers


def _decode(data: bytes, whole: bool, info: InputFile, out: _Scalars, records: _Records) -> None:
    """Frame, check and decode every record of `data` (the file's bytes from `records.base`) into `out`, a batch
    at a time; problems are reported in record order. Where the framing ended is left in `records`."""
    view = _Bytes(data)
    while not records.done:
        first = records.count
        starts, crcs = records.batch()
        numbers = np.arange(first + 1, first + 1 + len(starts))
        lengths = view.u64[starts - 12].astype(np.int64)
        intact = _mask(crcs) == view.u32[starts + lengths]
        problems = [(record, f"record {record} at byte {records.base + start - 12}: the data CRC does not match; record skipped")
                    for record, start in zip(numbers[~intact].tolist(), starts[~intact].tolist(), strict=True)]
        info.skipped += len(problems)
        starts, lengths, numbers = starts[intact], lengths[intact], numbers[intact]
        info.records += len(starts)
        simple = _simple_values(view, starts, lengths)
        others = np.ones(len(starts), dtype=bool)
        others[simple["index"]] = False
        for index in np.flatnonzero(others).tolist():
            record, start = int(numbers[index]), int(starts[index])
            try:
                _event(data[start:start + int(lengths[index])], record, out)
            except (ValueError, IndexError, struct.error) as exc:
                info.records -= 1
                info.skipped += 1
                problems.append((record, f"record {record}: not a readable Event ({exc}); record skipped"))
        out.add({"record": numbers[simple["index"]], "wall": simple["wall"], "step": simple["step"],
                 "tag": _tag_numbers(view, simple["tag_start"], simple["tag_length"], out), "value": simple["value"]})
        for record, message in sorted(problems):
            info.problem(record, message)


@dataclass
class Decoded:
    """What the complete records of one event file held when it was read: kept between builds (ingest/cache.py),
    so that a file its writer has only appended to since is read on from `at.end`. Not kept when the framing
    stopped at damage (the rest of the file is never framed) or the read budget cut the file."""

    info: InputFile  # the records' counts and problems
    columns: dict[str, np.ndarray]  # their values (_Scalars.columns)
    names: list[str]  # the tags, by number
    plugins: dict[str, str | None]
    texts: dict[str, str]
    count: int  # records framed (a record cut off at the end is not: it is framed again from its start)
    at: ReadTo


def read(path: Path, rel: str, run: str, texts: dict[str, str] | None = None) -> tuple[InputFile, pd.DataFrame]:
    """Read one event file: its InputFile and a frame with one row per scalar value; `texts`, when
    given, receives the file's text summaries by tag (the Trainer writes its arguments as "args")."""
    info, frame, found = read_on(path, rel, run)[0]
    if texts is not None:
        texts.update(found)
    return info, frame


def read_on(path: Path, rel: str, run: str, since: Decoded | None = None
            ) -> tuple[tuple[InputFile, pd.DataFrame, dict[str, str]], Decoded | None]:
    """Read one event file, on from `since` (its records as an earlier read found them) when the file has only
    grown since, else whole: its InputFile, its frame and its text summaries, as reading it whole gives them,
    with what its complete records hold now, for the next read (None: the next read reads it whole)."""
    more = None if since is None else grown(path, since.at, LOG_BUDGET)
    if more is None:
        info = InputFile(path=rel, format=FORMAT)
        loaded = read_file(path, LOG_BUDGET)
        if not loaded.whole:
            info.problem(None, loaded.budget_note("records"))
        data, whole, head, before, out, records = loaded.data, loaded.whole, b"", b"", _Scalars(), _Records(loaded.data, loaded.whole)
        del loaded
    else:
        head, before, data = more
        info, out, whole = copy.deepcopy(since.info), _Scalars.of(since), True
        records = _Records(data, True, since.count, since.at.end)
    _decode(data, whole, info, out, records)
    columns = out.columns()
    kept = None
    if whole and (records.end is None or records.cut_off):  # framed to the end, or to a record still being written
        count = records.count - 1 if records.cut_off else records.count
        kept = Decoded(copy.deepcopy(info), dict(columns), list(out.names), dict(out.plugins), dict(out.texts), count,
                       ReadTo.of(path, records.base + records.pos, head + data[:EDGE],
                                 before + data[max(0, records.pos - EDGE):records.pos]))
    del data  # the file's bytes: the frame is built from the values' arrays alone
    if records.end is not None:
        info.skip(*records.end)
        info.cut_off = records.cut_off
    _skip_huge_steps(columns, info)
    walls, numbers = columns["wall"], columns["record"]
    absurd = ~((walls == 0) | ((walls > 0) & (walls < EPOCH_END)))  # 0: the record has no wall time
    if absurd.any():
        at = int(np.argmax(absurd))
        info.problem(int(numbers[at]), f"{int(absurd.sum()):,} value(s) with a wall time that is no time between 1970 and 2199 "
                     f"(first: {float(walls[at])!r} at record {int(numbers[at])}); their values are read, their times are not")
        columns["wall"] = np.where(absurd, np.nan, walls)
    del walls, numbers
    return (info, _frame(columns, out.names, rel, run), dict(out.texts)), kept


def _skip_huge_steps(columns: dict[str, np.ndarray], info: InputFile) -> None:
    """Records at a step past any campaign's (and, past 2^63, past the frame's 64 bits) are damaged:
    reported at the first, counted as skipped, and left out, as the native reader does."""
    steps, records = columns["step"], columns["record"]
    huge = np.abs(steps.astype(np.float64)) > MAX_COUNT
    if not huge.any():
        return
    first = int(np.argmax(huge))
    bad = len(np.unique(records[huge]))
    info.problem(int(records[first]), f"{bad:,} record(s) at a step past any step a campaign logged ({MAX_COUNT:.0e}; "
                 f"first: step {int(steps[first])} at record {int(records[first])}); skipped")
    info.records -= bad
    info.skipped += bad
    keep = ~huge
    for name in _COLUMNS:
        columns[name] = columns[name][keep]


# Lightning's TensorBoardLogger writes hp_metric = -1 at step 0 beside the hyperparameters (default_hp_metric):
# a placeholder for the hparams plugin, not a measurement, and no sign that training was at step 0.
PLACEHOLDER = ("hp_metric", 0, -1.0)


@cache
def _text_dtype() -> object:
    """The type pandas gives a column of strings, as metric_frame's run and kind columns get it
    (str, held by pyarrow, from pandas 3; object before)."""
    return pd.DataFrame({"text": pd.array(["text"], dtype=object)})["text"].dtype


def _text(words: list[str], codes: np.ndarray) -> pd.api.extensions.ExtensionArray:
    """A column of strings whose row i is words[codes[i]]: expanded by pyarrow from the few words,
    without a Python string per row. With no rows, pandas has no strings to infer str from: object."""
    if not len(codes):
        return pd.array([], dtype=object)
    dense = pa.DictionaryArray.from_arrays(codes, pa.array(words, pa.large_string())).cast(pa.large_string())
    return pd.array(dense, dtype=_text_dtype())


def _frame(columns: dict[str, np.ndarray], names: list[str], rel: str, run: str) -> pd.DataFrame:
    """One row per (record, tag): the tag's column holds the value, the others are null; a wall time
    that is NaN (none, or no time) leaves the row's time null. The columns and their types are
    metric_frame's; they are built from the arrays, without a Python object per row."""
    tag, step, value = PLACEHOLDER
    if tag in names:
        drop = (columns["tag"] == names.index(tag)) & (columns["step"] == step) & (columns["value"] == value)
        if drop.any():
            for name in _COLUMNS:
                columns[name] = columns[name][~drop]
    records, walls, steps, tags, values = (columns.pop(name) for name in _COLUMNS)
    rows = len(records)
    timed = walls > 0
    micros = np.where(timed, walls, 0)
    del walls
    micros *= 1e6
    stamps = pa.array(micros.round(out=micros).astype(np.int64), pa.timestamp("us", tz="UTC"), mask=~timed)
    del micros, timed
    evals = np.array([is_eval(name) for name in names], dtype=np.int8)
    frame = pd.DataFrame(
        {
            "path": pd.Categorical.from_codes(np.zeros(rows, dtype=np.int8), [rel]),
            "line": pd.arrays.IntegerArray(records, np.zeros(rows, dtype=bool)),
            "run": _text([run], np.zeros(rows, dtype=np.int8)),
            "kind": _text(["train", "eval"], evals[tags] if rows else np.zeros(0, dtype=np.int8)),
            "step": pd.arrays.IntegerArray(steps, np.zeros(rows, dtype=bool)),
            "ts": stamps.to_pandas() if rows else pd.Series([], dtype="datetime64[us, UTC]"),
        },
        copy=False,
    )
    del stamps
    present = sorted(np.unique(tags).tolist(), key=names.__getitem__)
    if not present:
        return frame
    # All metric columns at once, each the value array (shared, not copied) with the other tags' rows null.
    metrics = pd.DataFrame({names[number]: pd.arrays.ArrowExtensionArray(pa.array(values, mask=tags != number))
                            for number in present}, index=frame.index)
    return pd.concat([frame, metrics], axis=1)


def writer_process(rel: str) -> tuple[str, int] | None:
    """(host, pid) of the process that wrote an event file, from the name TensorBoard's writers give it."""
    match = _FILE_NAME.match(PurePosixPath(rel).name)
    return (match.group(2), int(match.group(3))) if match else None


def recognise(rel: str, head: bytes) -> str | None:
    return FORMAT if PurePosixPath(rel).name.startswith("events.out.tfevents") or sniff(head) else None


def read_files(scan: Scan) -> None:
    """In a run's folder a file belongs to that run; elsewhere its folder is a source of its own."""
    files: dict[str, list[tuple[int, str]]] = {}
    rels = scan.files(FORMAT)
    # A file's values go to its run folder's source: a file moved to another folder is read again.
    read_ahead = scan.read_ahead(rels, lambda rel: _read_file(scan, rel),
                                 Kept(FORMAT, context=lambda rel: _key(scan, rel),
                                      resume=lambda rel, since: read_on(scan.found[rel][0], rel, _key(scan, rel), since)))
    for rel in rels:
        with scan.contained(rel, FORMAT):
            _read_one(scan, rel, files, read_ahead.pop(rel, None))
        scan.done(rel)
    for key, starts in files.items():
        _restarts(scan, key, sorted(starts))


def _key(scan: Scan, rel: str) -> str:
    """The source a file's values go to: its run folder's, else its own folder's."""
    return scan.owner(rel) or f"{FORMAT}:{parents(rel)[0] or '.'}"


def _read_file(scan: Scan, rel: str) -> tuple[InputFile, pd.DataFrame, dict[str, str]]:
    return read_on(scan.found[rel][0], rel, _key(scan, rel))[0]


def _read_one(scan: Scan, rel: str, files: dict[str, list[tuple[int, str]]],
              ahead: tuple[InputFile, pd.DataFrame, dict[str, str]] | None) -> None:
    """One TensorBoard file (`ahead`: as a worker read it): in a run's folder it belongs to that run;
    elsewhere its folder is a source."""
    owner = scan.owner(rel)
    folder = parents(rel)[0]
    key = _key(scan, rel)
    if owner is None and key not in scan.sources:
        scan.sources[key] = Source(key, FORMAT, scan.name_of(folder), Evidence(rel), folder=folder)
    info, frame, texts = ahead or _read_file(scan, rel)
    args = hf.tensorboard_arguments(scan.sources[key], texts) if owner is None else None
    if len(frame):
        files.setdefault(key, []).append((int(frame["step"].min()), rel))
    facts = RunFacts(run=key, format=FORMAT, evidence=Evidence(rel))
    # A file cut mid-record tells its run was stopped (analysis/status.py: a cut-off source), unless a watch
    # build finds it still being written; either way no summary is made of what it holds so far.
    if args is not None and not info.cut_off:
        hf.tensorboard_summary(rel, frame, args, facts)
    if owner in scan.limits and len(frame):
        scan.reached(owner, int(frame["step"].max()) + 1, rel)
    scan.add(Reading([info], [frame], [facts]))


def _restarts(scan: Scan, key: str, starts: list[tuple[int, str]]) -> None:
    """A later file of another writer process, starting at a later step, is a restart; one of the
    same process (a writer reopened for a final evaluation, say) is the same run going on."""
    first_step, first = starts[0]
    for step, rel in starts[1:]:
        same = writer_process(rel)
        if same is not None and same == writer_process(first):
            text = (f"{PurePosixPath(rel).name} was written by the same process (host {same[0]}, pid {same[1]}) "
                    f"as {PurePosixPath(first).name}: one run going on, not a restart")
            scan.notes.append((key, Decision("merged", "same-process", text, (Evidence(first), Evidence(rel)))))
        elif step > first_step:
            message = f"a new TensorBoard file of another process starts at step {step}: the run was restarted and resumed"
            scan.add(Reading(events=[LogMessage(key, MessageKind.RESUMED, message, Evidence(rel))]))


READER = Reader(FORMAT, recognise, read_files)
