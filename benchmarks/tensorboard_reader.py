"""reportgen's TensorBoard reader against tensorboard's own EventAccumulator, on the same file.

    python3 -m venv tbvenv && tbvenv/bin/pip install -e . tensorboard   # a venv of its own: reportgen does not use tensorboard
    tbvenv/bin/python benchmarks/tensorboard_reader.py [--steps 300000] [--tags 3] [--repeat 3]

Writes one event file (STEPS x TAGS scalar events, written with tensorboard's own record writer
and protos) and reads it with each reader, each read in a process of its own: a child process runs
this script with `--child READER`, times the read, and exits; the parent reaps it with os.wait4,
whose ru_maxrss is that child's whole-process peak memory (interpreter, imports, file and result).
A child that only imports the reader's modules shows how much of that peak is imports alone.
The readers take turns, REPEAT times each, and the medians are reported side by side.

On Linux a child's ru_maxrss also counts the parent's own peak at the moment the child was started
(exec records the peak of the memory image it replaces), so the parent does nothing heavy while it
starts children: the file is written by a child too, and the results are compared after the last
one. The parent's peak is printed, to show it is below every figure.

What is read is each reader's own result: EventAccumulator's Reload() and Scalars() of every tag,
reportgen's frame from tensorboard.read. One more child of each reader writes its steps, wall
times and values per tag to a file, and the parent checks that both readers agree (NaN included);
those children are not measured. Both readers check every record's CRC (EventAccumulator with a
pure-Python CRC-32C, reportgen with google-crc32c).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

READERS = {"accumulator": "tensorboard EventAccumulator", "reportgen": "reportgen tensorboard.read"}
MB = 1 << 20


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


def import_reader(reader: str) -> None:
    """Import the modules a reader needs, and nothing else."""
    if reader == "accumulator":
        from tensorboard.backend.event_processing import event_accumulator  # noqa: F401
    else:
        from reportgen.ingest import tensorboard  # noqa: F401


def read(reader: str, path: Path) -> object:
    """The reader's own result for the file: EventAccumulator's events of every tag, or reportgen's frame."""
    if reader == "accumulator":
        from tensorboard.backend.event_processing.event_accumulator import (
            EventAccumulator,
        )

        acc = EventAccumulator(str(path), size_guidance={"scalars": 0})
        acc.Reload()
        return {tag: acc.Scalars(tag) for tag in acc.Tags()["scalars"]}
    from reportgen.ingest import tensorboard

    info, frame = tensorboard.read(path, path.name, "bench")
    assert not info.problems, info.problems
    return frame


def arrays(reader: str, result: object) -> dict[str, object]:
    """Steps, wall times and values of each tag, as arrays named "<tag>|steps" and so on."""
    import numpy as np

    out = {}
    if reader == "accumulator":
        for tag, events in result.items():
            out[f"{tag}|steps"] = np.array([e.step for e in events], dtype=np.int64)
            out[f"{tag}|walls"] = np.array([e.wall_time for e in events], dtype=np.float64)
            out[f"{tag}|values"] = np.array([e.value for e in events], dtype=np.float64)
        return out
    for tag in [c for c in result.columns if c.startswith("train/")]:
        rows = result[result[tag].notna()]
        out[f"{tag}|steps"] = rows["step"].to_numpy(dtype=np.int64)
        out[f"{tag}|walls"] = rows["ts"].astype("int64").to_numpy() / 1e6
        out[f"{tag}|values"] = rows[tag].astype("float64[pyarrow]").to_numpy(dtype=np.float64, na_value=np.nan)
    return out


def same(a: dict, b: dict) -> None:
    import numpy as np

    assert sorted(a) == sorted(b), (sorted(a), sorted(b))
    for name in a:
        if name.endswith("|walls"):
            assert np.allclose(a[name], b[name], rtol=0, atol=1e-5), f"{name} differ"
        else:
            assert np.array_equal(a[name], b[name], equal_nan=name.endswith("|values")), f"{name} differ"


def child(reader: str, path: Path | None, dump: Path | None) -> None:
    """In the child process: import the reader, read the file once (unless there is no path), report the time."""
    import_reader(reader)
    if path is None:
        print(json.dumps({"seconds": None}))
        return
    start = time.perf_counter()
    result = read(reader, path)
    seconds = time.perf_counter() - start
    if dump is not None:
        import numpy as np

        np.savez(dump, **arrays(reader, result))
    print(json.dumps({"seconds": seconds}))


def run_child(*arguments: str) -> tuple[float | None, int]:
    """Run this script as a child with `--child ARGUMENTS`: its read time (None when it read nothing) and
    its whole-process peak memory in bytes, from os.wait4."""
    process = subprocess.Popen([sys.executable, __file__, "--child", *arguments], stdout=subprocess.PIPE)
    output = process.stdout.read()
    process.stdout.close()
    _pid, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        raise SystemExit(f"the child {' '.join(arguments)} failed (exit status {process.returncode})")
    return json.loads(output)["seconds"], peak_bytes(usage)


def peak_bytes(usage: resource.struct_rusage) -> int:
    return usage.ru_maxrss * (1 if sys.platform == "darwin" else 1024)  # Linux reports KiB, macOS bytes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300_000)
    parser.add_argument("--tags", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", choices=[*READERS, "write"], help=argparse.SUPPRESS)
    parser.add_argument("--path", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--dump", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "write":
        write_events(args.path, args.steps, args.tags)
        print(json.dumps({"seconds": None}))
        return
    if args.child:
        child(args.child, args.path, args.dump)
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "events.out.tfevents.bench"
        run_child("write", "--path", str(path), "--steps", str(args.steps), "--tags", str(args.tags))
        size = path.stat().st_size
        imports = {reader: run_child(reader)[1] for reader in READERS}
        times: dict[str, list[float]] = {reader: [] for reader in READERS}
        peaks: dict[str, list[int]] = {reader: [] for reader in READERS}
        for _ in range(args.repeat):
            for reader in READERS:  # taking turns spreads the other work on the machine over both
                seconds, peak = run_child(reader, "--path", str(path))
                times[reader].append(seconds)
                peaks[reader].append(peak)
        dumps = {reader: Path(tmp) / f"{reader}.npz" for reader in READERS}
        for reader, dump in dumps.items():
            run_child(reader, "--path", str(path), "--dump", str(dump))
        parent = peak_bytes(resource.getrusage(resource.RUSAGE_SELF))
        import numpy as np

        with np.load(dumps["accumulator"]) as theirs, np.load(dumps["reportgen"]) as ours:
            same(dict(theirs), dict(ours))
    time_of = {reader: statistics.median(times[reader]) for reader in READERS}
    peak_of = {reader: statistics.median(peaks[reader]) for reader in READERS}
    print(f"{args.steps:,} steps x {args.tags} tags, {size / 1e6:.1f} MB; each read in its own process, median of {args.repeat}")
    print(f"  {'':30} {'read time':>10} {'peak memory':>12} {'imports only':>13}")
    for reader, label in READERS.items():
        print(f"  {label:30} {time_of[reader]:8.2f} s {peak_of[reader] / MB:9.0f} MB {imports[reader] / MB:10.0f} MB")
    print(f"  reportgen is {time_of['accumulator'] / time_of['reportgen']:.1f}x faster, at "
          f"{peak_of['reportgen'] / peak_of['accumulator']:.2f}x EventAccumulator's peak memory (whole process vs whole process)")
    for reader, label in READERS.items():
        print(f"  runs of {label}: {', '.join(f'{t:.2f} s' for t in times[reader])}; "
              f"{', '.join(f'{p / MB:.0f} MB' for p in peaks[reader])}")
    print("  same steps, wall times and values for every tag (checked in two more, unmeasured, children)")
    print(f"  this script's own peak while it started the children: {parent / MB:.0f} MB")


if __name__ == "__main__":
    main()
