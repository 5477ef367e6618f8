"""Benchmark: reportgen's native event reader against pyarrow's JSON reader on the same file.

    python benchmarks/events_reader.py                 # 2,000,000 metric lines (~225 MB)
    python benchmarks/events_reader.py --lines 200000  # quicker

Writes a metric log like a long training run's (bare NaN included), and a copy with damaged
lines (junk, bad UTF-8, a line cut off at the end). Each reader runs in its own process, several
times, taking turns; the median wall time and the peak resident memory are reported as ratios to pyarrow's
`read_json` on the clean file, the reference. pyarrow alone cannot read the damaged copy at all,
which is why reportgen does more than call it. Target: reportgen within 1.5x on both files.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def write_log(path: Path, lines: int, damaged: bool) -> None:
    rng = random.Random(7)
    with path.open("wb") as out:
        out.write(b'{"ts":"2026-11-02T09:00:00.000+09:00","type":"run_start","run":"bench-1","config":{"lr":0.0002}}\n')
        for step in range(1, lines + 1):
            seconds = step * 0.5
            ts = f"2026-11-02T{9 + int(seconds // 3600) % 15:02d}:{int(seconds // 60) % 60:02d}:{seconds % 60:06.3f}+09:00"
            loss = "NaN" if step % 250_000 == 0 else f"{2.0 / (1 + step / 1e5) + rng.random() * 0.01:.6f}"
            out.write(
                f'{{"ts":"{ts}","type":"metric","run":"bench-1","step":{step},'
                f'"metrics":{{"loss":{loss},"grad_norm":{1 + rng.random():.6f},"learning_rate":{2e-4 * (1 - step / lines):.8g}}}}}\n'.encode()
            )
            if damaged and step % (lines // 4) == 0:
                out.write(b"Traceback (most recent call last):\n\xff\xfe not utf-8\n")
        if damaged:
            out.write(b'{"ts":"2026-11-02T23:59:59.000+09:00","type":"metric","run":"bench-1","st')


def measure(reader: str, path: Path) -> None:
    """Child process: read once, print seconds and peak RSS (KiB) as JSON."""
    import pyarrow.json as pa_json

    from reportgen.ingest import native

    start = time.perf_counter()  # imports are not timed: only reading the file is
    if reader == "pyarrow":
        rows = pa_json.read_json(str(path)).num_rows
    else:
        log = native.read(path, path.name)
        rows = len(log.metrics) + len(log.events)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"seconds": seconds, "peak_kib": peak, "rows": rows}))


def run_child(reader: str, path: Path) -> dict:
    out = subprocess.run([sys.executable, __file__, "--measure", reader, str(path)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--measure", nargs=2, metavar=("READER", "FILE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        measure(args.measure[0], Path(args.measure[1]))
        return
    with tempfile.TemporaryDirectory() as tmp:
        clean, damaged = Path(tmp) / "clean.jsonl", Path(tmp) / "damaged.jsonl"
        write_log(clean, args.lines, damaged=False)
        write_log(damaged, args.lines, damaged=True)
        size_mb = clean.stat().st_size / 1e6
        cases = [("pyarrow.json.read_json", "pyarrow", clean), ("reportgen", "reportgen", clean),
                 ("reportgen, damaged copy", "reportgen", damaged)]
        timed = {label: [] for label, _reader, _path in cases}
        for _ in range(args.repeat):  # the readers take turns, so a busy spell falls on each alike
            for label, reader, path in cases:
                timed[label].append(run_child(reader, path))
        results = {}
        for label, runs in timed.items():
            results[label] = {
                "seconds": statistics.median(r["seconds"] for r in runs),
                "peak_mib": max(r["peak_kib"] for r in runs) / 1024,
                "rows": runs[0]["rows"],
            }
    ref = results["pyarrow.json.read_json"]
    print(f"{args.lines:,} metric lines, {size_mb:,.0f} MB, {os.cpu_count()} cores, median of {args.repeat}")
    print(f"{'reader':28} {'seconds':>8} {'ratio':>6} {'peak MiB':>9} {'ratio':>6} {'rows':>10}")
    for label, r in results.items():
        print(f"{label:28} {r['seconds']:8.2f} {r['seconds'] / ref['seconds']:6.2f} "
              f"{r['peak_mib']:9.0f} {r['peak_mib'] / ref['peak_mib']:6.2f} {r['rows']:10,}")


if __name__ == "__main__":
    main()
