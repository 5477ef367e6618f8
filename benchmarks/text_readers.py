"""reportgen's Keras CSVLogger, DVCLive and torchtune readers against naive references, on the same files.

    python benchmarks/text_readers.py [--rows 200000] [--repeat 3]

Writes, in a temporary folder, a Keras CSVLogger file (ROWS epochs of accuracy, loss, val_accuracy,
val_loss, as CSVLogger writes them: "\\r\\n" ends, `NA` now and then), a DVCLive metric file (ROWS
rows of `timestamp step loss`) and a torchtune DiskLogger file (ROWS `Step N | loss:... lr:...
tokens_per_second_per_gpu:... grad_norm:...` lines). Each is read by reportgen and by a reference
that only parses: pandas.read_csv (its C parser) and a plain Python csv.reader loop for the two
CSV files, a plain Python loop of str.split for the torchtune file; none accounts for lines,
reports problems or builds a metrics frame. The script checks that both
return the same steps and values, then prints the median time of each and their ratio.
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd


def write_keras(path: Path, rows: int) -> None:
    with open(path, "w", newline="") as out:
        out.write("epoch,accuracy,loss,val_accuracy,val_loss\r\n")
        for epoch in range(rows):
            val = "NA" if epoch % 97 == 0 else repr(0.5 + math.sin(epoch) / 3)
            out.write(f"{epoch},{1 - math.exp(-epoch / 5e4)!r},{math.exp(-epoch / 5e4)!r},{val},{0.9 / (1 + epoch)!r}\r\n")


def write_dvclive(path: Path, rows: int) -> None:
    with open(path, "w") as out:
        out.write("timestamp\tstep\tloss\n")
        for step in range(rows):
            out.write(f"{1796418339298 + 7 * step}\t{step}\t{math.exp(-step / 5e4)!r}\n")


def write_torchtune(path: Path, rows: int) -> None:
    with open(path, "w") as out:
        for step in range(1, rows + 1):
            out.write(f"Step {step} | loss:{math.exp(-step / 5e4)!r} lr:2e-05 "
                      f"tokens_per_second_per_gpu:{1e6 + step!r} grad_norm:{7 - step / 1e6!r} \n")


def values(frame: pd.DataFrame, name: str, kind: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    rows = frame[frame[name].notna()] if kind is None else frame[(frame["kind"] == kind) & frame[name].notna()]
    return rows["step"].to_numpy(dtype=np.int64), rows[name].astype("float64[pyarrow]").to_numpy(dtype=np.float64)


def ours_keras(path: Path):
    from reportgen.ingest import keras

    log = keras.read(path, path.name, "bench")
    assert not log.reading.inputs[0].problems
    frame = log.reading.frames[0]
    return values(frame, "loss", "train"), values(frame, "val_accuracy", "eval")


def ref_keras(path: Path):
    frame = pd.read_csv(path, na_values=["NA"], keep_default_na=False)
    acc = frame[frame["val_accuracy"].notna()]
    return ((frame["epoch"].to_numpy(np.int64), frame["loss"].to_numpy(np.float64)),
            (acc["epoch"].to_numpy(np.int64), acc["val_accuracy"].to_numpy(np.float64)))


def loop_keras(path: Path):
    epochs, loss, acc_epochs, acc = [], [], [], []
    with open(path, newline="") as handle:
        reader = csv.reader(handle)
        next(reader)
        for row in reader:
            epochs.append(int(row[0]))
            loss.append(float(row[2]))
            if row[3] != "NA":
                acc_epochs.append(int(row[0]))
                acc.append(float(row[3]))
    return ((np.array(epochs, dtype=np.int64), np.array(loss)), (np.array(acc_epochs, dtype=np.int64), np.array(acc)))


def ours_dvclive(path: Path):
    from reportgen.ingest import dvclive

    folder = path.parent.parent.parent
    rel = path.relative_to(folder.parent).as_posix()
    run = dvclive.read_folder(folder.parent, folder.name, [rel], "bench")
    assert not run.reading.inputs[0].problems
    frame = run.reading.frames[0]
    return values(frame, "loss"), frame["ts"].astype("int64").to_numpy() // 1000


def ref_dvclive(path: Path):
    frame = pd.read_csv(path, sep="\t")
    return (frame["step"].to_numpy(np.int64), frame["loss"].to_numpy(np.float64)), frame["timestamp"].to_numpy(np.int64)


def loop_dvclive(path: Path):
    steps, loss, stamps = [], [], []
    with open(path, newline="") as handle:
        reader = csv.reader(handle, delimiter="\t")
        next(reader)
        for row in reader:
            stamps.append(int(row[0]))
            steps.append(int(row[1]))
            loss.append(float(row[2]))
    return (np.array(steps, dtype=np.int64), np.array(loss)), np.array(stamps, dtype=np.int64)


def ours_torchtune(path: Path):
    from reportgen.ingest import torchtune

    log = torchtune.read(path, path.name, "bench")
    assert not log.reading.inputs[0].problems
    frame = log.reading.frames[0]
    return values(frame, "loss"), values(frame, "grad_norm")


def ref_torchtune(path: Path):
    steps, loss, grad = [], [], []
    with open(path) as lines:
        for line in lines:
            head, _bar, rest = line.partition(" | ")
            items = dict(item.split(":", 1) for item in rest.split())
            steps.append(int(head[5:]))
            loss.append(float(items["loss"]))
            grad.append(float(items["grad_norm"]))
    steps_array = np.array(steps, dtype=np.int64)
    return (steps_array, np.array(loss)), (steps_array, np.array(grad))


def same(a, b) -> None:
    if isinstance(a, tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y)
        return
    assert np.array_equal(a, b, equal_nan=True), "the readers differ"


def timed(func, path: Path, repeat: int):
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = func(path)
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        metrics = root / "dvclive" / "plots" / "metrics"
        metrics.mkdir(parents=True)
        cases = [
            ("keras-csv", root / "training.log", write_keras, ours_keras,
             [("pandas.read_csv", ref_keras), ("a csv.reader loop", loop_keras)]),
            ("dvclive", metrics / "loss.tsv", write_dvclive, ours_dvclive,
             [("pandas.read_csv", ref_dvclive), ("a csv.reader loop", loop_dvclive)]),
            ("torchtune", root / "log_1796418366.txt", write_torchtune, ours_torchtune,
             [("a str.split loop", ref_torchtune)]),
        ]
        print(f"{args.rows:,} rows per file, median of {args.repeat}")
        print(f"{'reader':<11} {'MB':>6} {'reference':<19} {'ref s':>7} {'reportgen s':>12} {'ratio':>6}")
        for name, path, write, ours, refs in cases:
            write(path, args.rows)
            ours_s, ours_result = timed(ours, path, args.repeat)
            for ref_name, ref in refs:
                ref_s, ref_result = timed(ref, path, args.repeat)
                same(ours_result, ref_result)
                print(f"{name:<11} {path.stat().st_size / 1e6:6.1f} {ref_name:<19} {ref_s:7.2f} {ours_s:12.2f} "
                      f"{ours_s / ref_s:6.1f}")
        print("same steps and values (and DVCLive times) from both readers of each file")


if __name__ == "__main__":
    main()
