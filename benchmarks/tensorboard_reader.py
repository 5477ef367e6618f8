"""reportgen's TensorBoard reader against tensorboard's own EventAccumulator, on the same file.

    pip install tensorboard          # only for this benchmark; reportgen does not need it
    python benchmarks/tensorboard_reader.py [--steps 300000] [--tags 3] [--repeat 3]

Writes one event file (STEPS x TAGS scalar events, written with tensorboard's own record writer
and protos), reads it with both readers, checks that they return the same steps, wall times and
values for every tag, and reports the median wall time of each and their ratio. Both check every
record's CRC (EventAccumulator with a pure-Python CRC-32C, reportgen with google-crc32c).
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np


def write_events(path: Path, steps: int, tags: int) -> None:
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.record_writer import RecordWriter

    with open(path, "wb") as handle:
        writer = RecordWriter(handle)
        writer.write(event_pb2.Event(wall_time=1.7e9, file_version="brain.Event:2").SerializeToString())
        for step in range(steps):
            for t in range(tags):
                value = math.exp(-step / 50000) + t if step % 10007 else float("nan")
                summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=f"train/metric_{t}", simple_value=value)])
                event = event_pb2.Event(wall_time=1.7e9 + step * 0.5 + t * 0.001, step=step, summary=summary)
                writer.write(event.SerializeToString())
        writer.flush()


def read_accumulator(path: Path) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(path), size_guidance={"scalars": 0})
    acc.Reload()
    out = {}
    for tag in acc.Tags()["scalars"]:
        events = acc.Scalars(tag)
        out[tag] = (np.array([e.step for e in events]), np.array([e.wall_time for e in events]),
                    np.array([e.value for e in events], dtype=np.float64))
    return out


def read_reportgen(path: Path) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    from reportgen.ingest import tensorboard

    info, frame = tensorboard.read(path, path.name, "bench")
    assert not info.problems, info.problems
    out = {}
    for tag in [c for c in frame.columns if c.startswith("train/")]:
        rows = frame[frame[tag].notna()]
        walls = rows["ts"].astype("int64").to_numpy() / 1e6
        out[tag] = (rows["step"].to_numpy(dtype=np.int64), walls,
                    rows[tag].astype("float64[pyarrow]").to_numpy(dtype=np.float64, na_value=np.nan))
    return out


def same(a: dict, b: dict) -> None:
    assert sorted(a) == sorted(b), (sorted(a), sorted(b))
    for tag in a:
        steps_a, walls_a, values_a = a[tag]
        steps_b, walls_b, values_b = b[tag]
        assert np.array_equal(steps_a, steps_b), f"{tag}: steps differ"
        assert np.allclose(walls_a, walls_b, rtol=0, atol=1e-5), f"{tag}: wall times differ"
        assert np.array_equal(values_a, values_b, equal_nan=True), f"{tag}: values differ"


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
    parser.add_argument("--tags", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "events.out.tfevents.bench"
        write_events(path, args.steps, args.tags)
        size = path.stat().st_size
        ours, ours_result = timed(read_reportgen, path, args.repeat)
        theirs, theirs_result = timed(read_accumulator, path, args.repeat)
        same(ours_result, theirs_result)
        print(f"{args.steps:,} steps x {args.tags} tags, {size / 1e6:.1f} MB, median of {args.repeat}")
        print(f"  tensorboard EventAccumulator: {theirs:7.2f} s")
        print(f"  reportgen tensorboard.read:   {ours:7.2f} s")
        print(f"  same steps, wall times and values for every tag; reportgen is {theirs / ours:.1f}x faster")


if __name__ == "__main__":
    main()
