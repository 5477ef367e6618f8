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
"""

from __future__ import annotations

import re
import struct
from pathlib import Path, PurePosixPath

import google_crc32c
import numpy as np
import pandas as pd
import pyarrow as pa

from reportgen.boundary import read_file
from reportgen.ingest import hf
from reportgen.ingest.common import (
    EPOCH_END,
    LOG_BUDGET,
    MAX_COUNT,
    Reading,
    is_eval,
    metric_frame,
)
from reportgen.ingest.protowire import fields, signed, varint
from reportgen.ingest.scan import Reader, Scan, Source, parents
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


class _Scalars:
    """The scalar values of one file, column by column."""

    def __init__(self):
        self.record: list[int] = []
        self.wall: list[float] = []
        self.step: list[int] = []
        self.tag: list[str] = []
        self.value: list[float] = []
        self.plugins: dict[str, str | None] = {}  # each tag's plugin, from the first metadata seen
        self.tag_names: dict[bytes, str] = {}
        self.texts: dict[str, str] = {}  # the first text summary of each tag (the Trainer's "args")


def _event(buf: bytes, record: int, out: _Scalars) -> None:
    """Decode one Event record in any field order; read() decodes the common layout inline."""
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


def read(path: Path, rel: str, run: str, texts: dict[str, str] | None = None) -> tuple[InputFile, pd.DataFrame]:
    """Read one event file: its InputFile and a frame with one row per scalar value; `texts`, when
    given, receives the file's text summaries by tag (the Trainer writes its arguments as "args")."""
    info = InputFile(path=rel, format=FORMAT)
    out = _Scalars()
    read = read_file(path, LOG_BUDGET)
    if not read.whole:
        info.problem(None, read.budget_note("records"))
    buf = read.data
    size = len(buf)
    pos = 0
    record = 0
    masked = masked_crc
    header = _HEADER.unpack_from
    u32 = _U32.unpack_from
    unpack_double, unpack_float = _DOUBLE.unpack_from, _FLOAT.unpack_from
    records, walls, steps, tags, values = out.record, out.wall, out.step, out.tag, out.value
    tag_names = out.tag_names
    while pos < size:
        record += 1
        if size - pos < 12:
            if not read.whole:
                break  # reportgen's budget ends the read here, not the writer
            info.problem(record, f"cut off in the header of record {record} ({size - pos} bytes left): the writer stopped mid-record")
            info.skipped += 1
            info.cut_off = True
            break
        length, length_crc = header(buf, pos)
        if masked(buf[pos:pos + 8]) != length_crc:
            info.problem(record, f"record {record} at byte {pos}: the length's CRC does not match; the rest of the file cannot be framed and is not read")
            info.skipped += 1
            break
        start = pos + 12
        end = start + length
        if end + 4 > size:
            if not read.whole:
                break
            info.problem(record, f"record {record} is cut off ({size - start} of {length + 4} bytes): the writer stopped mid-record")
            info.skipped += 1
            info.cut_off = True
            break
        data = buf[start:end]
        pos = end + 4
        if masked(data) != u32(buf, end)[0]:
            info.problem(record, f"record {record} at byte {start - 12}: the data CRC does not match; record skipped")
            info.skipped += 1
            continue
        info.records += 1
        # Fast path for the common record {1: wall_time, 2: step, 5: {1: {1: tag, 2: simple_value}}}
        # with short lengths, decoded inline; anything else goes through the general decoder.
        if length > 16 and data[0] == 0x09 and data[9] == 0x10:
            i = 10
            byte = data[i]
            step = byte & 0x7F
            shift = 7
            while byte >= 0x80 and shift < 64:
                i += 1
                byte = data[i]
                step |= (byte & 0x7F) << shift
                shift += 7
            i += 1
            if (i + 6 < length and data[i] == 0x2A and data[i + 1] + i + 2 == length and data[i + 2] == 0x0A
                    and data[i + 3] + i + 4 == length and data[i + 4] == 0x0A and data[i + 5] < 0x80):
                tag_end = i + 6 + data[i + 5]
                if tag_end + 5 == length and data[tag_end] == 0x15 and step < 1 << 63:
                    raw = data[i + 6:tag_end]
                    tag = tag_names.get(raw)
                    if tag is None:
                        tag = tag_names[raw] = raw.decode("utf-8", errors="replace")
                    records.append(record)
                    walls.append(unpack_double(data, 1)[0])
                    steps.append(step)
                    tags.append(tag)
                    values.append(unpack_float(data, tag_end + 1)[0])
                    continue
        try:
            _event(data, record, out)
        except (ValueError, IndexError, struct.error) as exc:
            info.records -= 1
            info.problem(record, f"record {record}: not a readable Event ({exc}); record skipped")
            info.skipped += 1
            continue
    if texts is not None:
        texts.update(out.texts)
    _skip_huge_steps(out, info)
    walls = np.asarray(out.wall, dtype=np.float64)
    absurd = ~((walls == 0) | ((walls > 0) & (walls < EPOCH_END)))  # 0: the record has no wall time
    if absurd.any():
        at = int(np.argmax(absurd))
        info.problem(out.record[at], f"{int(absurd.sum()):,} value(s) with a wall time that is no time between 1970 and 2199 "
                     f"(first: {out.wall[at]!r} at record {out.record[at]}); their values are read, their times are not")
    return info, _frame(out, rel, run, np.where(absurd, np.nan, walls))


def _skip_huge_steps(out: _Scalars, info: InputFile) -> None:
    """Records at a step past any campaign's (and, past 2^63, past the frame's 64 bits) are damaged:
    reported at the first, counted as skipped, and left out, as the native reader does."""
    huge = np.abs(np.asarray(out.step, dtype=np.float64)) > MAX_COUNT
    if not huge.any():
        return
    first = int(np.argmax(huge))
    bad = sorted({out.record[i] for i in np.flatnonzero(huge)})
    info.problem(out.record[first], f"{len(bad):,} record(s) at a step past any step a campaign logged ({MAX_COUNT:.0e}; "
                 f"first: step {out.step[first]} at record {out.record[first]}); skipped")
    info.records -= len(bad)
    info.skipped += len(bad)
    keep = np.flatnonzero(~huge)
    for name in ("record", "wall", "step", "tag", "value"):
        column = getattr(out, name)
        setattr(out, name, [column[i] for i in keep])


# Lightning's TensorBoardLogger writes hp_metric = -1 at step 0 beside the hyperparameters (default_hp_metric):
# a placeholder for the hparams plugin, not a measurement, and no sign that training was at step 0.
PLACEHOLDER = ("hp_metric", 0, -1.0)


def _frame(out: _Scalars, rel: str, run: str, walls: np.ndarray) -> pd.DataFrame:
    """One row per (record, tag): the tag's column holds the value, the others are null; a wall time
    that is NaN (none, or no time) leaves the row's time null."""
    tag, step, value = PLACEHOLDER
    if tag in out.tag:
        keep = [i for i, t in enumerate(out.tag) if not (t == tag and out.step[i] == step and out.value[i] == value)]
        if len(keep) < len(out.tag):
            for name in ("record", "step", "tag", "value"):
                column = getattr(out, name)
                setattr(out, name, [column[i] for i in keep])
            walls = walls[keep]
    rows = len(out.record)
    values = np.asarray(out.value, dtype=np.float64)
    tags = np.asarray(out.tag, dtype=object)
    metrics = {}
    for tag in sorted(set(out.tag)):
        present = tags == tag
        metrics[tag] = pa.array(values, mask=~present)
    timed = walls > 0
    stamps = pa.array((np.where(timed, walls, 0) * 1e6).round().astype(np.int64), pa.timestamp("us", tz="UTC"),
                      mask=~timed) if rows else pa.array([], pa.timestamp("us", tz="UTC"))
    kind_of = {t: "eval" if is_eval(t) else "train" for t in set(out.tag)}
    kinds = [kind_of[t] for t in out.tag]
    return metric_frame(rel, out.record, run, kinds, out.step, stamps, metrics)


def writer_process(rel: str) -> tuple[str, int] | None:
    """(host, pid) of the process that wrote an event file, from the name TensorBoard's writers give it."""
    match = _FILE_NAME.match(PurePosixPath(rel).name)
    return (match.group(2), int(match.group(3))) if match else None


def recognise(rel: str, head: bytes) -> str | None:
    return FORMAT if PurePosixPath(rel).name.startswith("events.out.tfevents") or sniff(head) else None


def read_files(scan: Scan) -> None:
    """In a run's folder a file belongs to that run; elsewhere its folder is a source of its own."""
    files: dict[str, list[tuple[int, str]]] = {}
    for rel in scan.files(FORMAT):
        with scan.contained(rel, FORMAT):
            _read_one(scan, rel, files)
        scan.done(rel)
    for key, starts in files.items():
        _restarts(scan, key, sorted(starts))


def _read_one(scan: Scan, rel: str, files: dict[str, list[tuple[int, str]]]) -> None:
    """One TensorBoard file: in a run's folder it belongs to that run; elsewhere its folder is a source."""
    owner = scan.owner(rel)
    folder = parents(rel)[0]
    key = owner or f"{FORMAT}:{folder or '.'}"
    if owner is None and key not in scan.sources:
        scan.sources[key] = Source(key, FORMAT, scan.name_of(folder), Evidence(rel), folder=folder)
    texts: dict[str, str] = {}
    info, frame = read(scan.found[rel][0], rel, key, texts)
    args = hf.tensorboard_arguments(scan.sources[key], texts) if owner is None else None
    if len(frame):
        files.setdefault(key, []).append((int(frame["step"].min()), rel))
    facts = RunFacts(run=key, format=FORMAT, evidence=Evidence(rel))
    if info.cut_off and owner is None:
        facts.status, facts.reason = "interrupted", f"{rel} ends mid-record: its writer was stopped"
    elif args is not None:
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
