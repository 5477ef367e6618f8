"""reportgen's W&B transaction-log reader against a plain reader built on wandb's own protobuf classes.

    pip install wandb                # only for this benchmark (its Record classes); reportgen does not need it
    WANDB_MODE=offline python benchmarks/wandb_reader.py [--steps 300000] [--repeat 3]

Writes one run-<id>.wandb: a run record, then STEPS history records of three metrics (loss, lr and,
every 50 steps, eval/loss; a NaN loss every 10,007 steps) with `_step`, `_timestamp` and `_runtime`,
each followed by a summary record as wandb-core writes them, and an exit record. The records are
wandb's own protobuf messages (wandb_internal_pb2.Record, SerializeToString); the framing (32 KiB
blocks, FULL/FIRST/MIDDLE/LAST chunks, CRC-32 of type and data) is written as W&B's Python
DataStore wrote it (wandb 0.31 has no Python writer left: wandb-core writes the log in Go).

The reference reader is the plain one: the DataStore's scan loop (CRC-32 of every chunk, chunks
reassembled), `Record.ParseFromString` (protobuf's C implementation) and `json.loads` of every
history item's value_json. Both must return the same steps, times and values of every metric;
the median wall time of each and their ratio are printed.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import struct
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np

BLOCK = 32768
HEADER = b":W&B" + struct.pack("<HB", 0xBEE1, 0)


def _frame(out, data: bytes, written: list[int]) -> None:
    """One record as LevelDB log chunks; written[0] is the file offset so far."""

    def chunk(kind: int, part: bytes) -> None:
        out.write(struct.pack("<IHB", zlib.crc32(bytes([kind]) + part), len(part), kind))
        out.write(part)
        written[0] += 7 + len(part)

    left = BLOCK - written[0] % BLOCK
    if left < 7:
        out.write(b"\x00" * left)
        written[0] += left
        left = BLOCK
    if len(data) + 7 <= left:
        chunk(1, data)
        return
    chunk(2, data[:left - 7])
    data = data[left - 7:]
    while len(data) + 7 > BLOCK:
        chunk(3, data[:BLOCK - 7])
        data = data[BLOCK - 7:]
    chunk(4, data)


def write_log(path: Path, steps: int) -> None:
    from wandb.proto import wandb_internal_pb2 as pb

    start = 1.8e9
    with open(path, "wb") as out:
        out.write(HEADER)
        written = [len(HEADER)]
        run = pb.Record(run=pb.RunRecord(run_id="bench123", project="bench", display_name="bench"))
        run.run.start_time.FromSeconds(int(start))
        _frame(out, run.SerializeToString(), written)
        for step in range(steps):
            loss = 2 * math.exp(-step / 50_000) if step % 10_007 else float("nan")
            values = {"loss": loss, "lr": 1e-3 * (1 - step / (2 * steps))}
            if step % 50 == 49:
                values["eval/loss"] = loss + 0.05
            values.update(_step=step, _timestamp=start + step * 0.25, _runtime=step * 0.25)
            items = [pb.HistoryItem(nested_key=[k], value_json=json.dumps(v)) for k, v in values.items()]
            _frame(out, pb.Record(num=2 * step + 2, history=pb.HistoryRecord(
                item=items, step=pb.HistoryStep(num=step))).SerializeToString(), written)
            summary = [pb.SummaryItem(nested_key=[k], value_json=json.dumps(v)) for k, v in values.items()]
            _frame(out, pb.Record(summary=pb.SummaryRecord(update=summary)).SerializeToString(), written)
        _frame(out, pb.Record(exit=pb.RunExitRecord(exit_code=0, runtime=int(steps * 0.25))).SerializeToString(), written)


def read_reference(path: Path) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The DataStore scan, Record.ParseFromString and json.loads: the plain way to read a .wandb."""
    from wandb.proto import wandb_internal_pb2 as pb

    data = path.read_bytes()
    assert data[:7] == HEADER
    pos, parts = 7, []
    columns: dict[str, tuple[list, list, list]] = {}
    while pos < len(data):
        left = BLOCK - pos % BLOCK
        if left < 7:
            pos += left
            continue
        checksum, length, kind = struct.unpack_from("<IHB", data, pos)
        chunk = data[pos + 7:pos + 7 + length]
        assert zlib.crc32(data[pos + 6:pos + 7 + length]) == checksum
        pos += 7 + length
        parts.append(chunk)
        if kind not in (1, 4):
            continue
        record = pb.Record()
        record.ParseFromString(b"".join(parts))
        parts = []
        if record.WhichOneof("record_type") != "history":
            continue
        row = {("/".join(item.nested_key) or item.key): json.loads(item.value_json) for item in record.history.item}
        step, stamp = row.pop("_step"), row.pop("_timestamp")
        row.pop("_runtime", None)
        for name, value in row.items():
            steps, stamps, values = columns.setdefault(name, ([], [], []))
            steps.append(step)
            stamps.append(stamp)
            values.append(value)
    return {name: (np.array(s), np.array(t), np.array(v, dtype=np.float64)) for name, (s, t, v) in columns.items()}


def read_reportgen(path: Path) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    from reportgen.ingest import wandb

    info, log = wandb.read_log_file(path, path.name, "bench")
    assert not info.problems, info.problems
    frame = log.rows.frame()
    out = {}
    for name in [c for c in frame.columns if c not in ("path", "line", "run", "kind", "step", "ts")]:
        rows = frame[frame[name].notna()]
        out[name] = (rows["step"].to_numpy(dtype=np.int64), rows["ts"].astype("int64").to_numpy() / 1e6,
                     rows[name].astype("float64[pyarrow]").to_numpy(dtype=np.float64, na_value=np.nan))
    return out


def same(a: dict, b: dict) -> None:
    assert sorted(a) == sorted(b), (sorted(a), sorted(b))
    for name in a:
        steps_a, times_a, values_a = a[name]
        steps_b, times_b, values_b = b[name]
        assert np.array_equal(steps_a, steps_b), f"{name}: steps differ"
        assert np.allclose(times_a, times_b, rtol=0, atol=1e-5), f"{name}: times differ"
        assert np.array_equal(values_a, values_b, equal_nan=True), f"{name}: values differ"


def timed(func, path: Path, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = func(path)
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run-bench123.wandb"
        write_log(path, args.steps)
        size = path.stat().st_size
        ours, ours_result = timed(read_reportgen, path, args.repeat)
        theirs, theirs_result = timed(read_reference, path, args.repeat)
        same(ours_result, theirs_result)
        print(f"{args.steps:,} history records (and as many summary records), {size / 1e6:.1f} MB, median of {args.repeat}")
        print(f"  DataStore scan + protobuf ParseFromString + json.loads: {theirs:7.2f} s")
        print(f"  reportgen wandb.read_log_file:                         {ours:7.2f} s")
        print(f"  same steps, times and values for every metric; reportgen takes {ours / theirs:.2f}x the reference's time")


if __name__ == "__main__":
    main()
