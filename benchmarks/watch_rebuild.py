"""Benchmark: what `reportgen watch` pays to build again after one line is appended to one log, against a
whole `reportgen build` of the same campaign.

    python benchmarks/watch_rebuild.py               # a campaign of 200 runs (build_scale's)
    python benchmarks/watch_rebuild.py --runs 50     # quicker

Reference: `reportgen build LOGS PLAN --no-cache` in a process of its own (imports, reading, analysis,
pages), the median of --repeats. Measured: in one long-lived process, as the watcher holds it, with the
parse cache (held from build to build: a log that grows at every build is written to it once a minute at
most), the page memo and the recall as the watcher keeps them (the cache in a folder of the benchmark's own,
empty at first): a first build (the cache is filled: what it costs a first build), then --repeats times
(after SETTLE rebuilds not measured, as a watcher has made them in its first minutes):
one metric line appended to one run's log and the site built again (the cache holds every other log and
the grown one is read on from where it stopped; the pages of the runs and files that did not change are
the memo's; so are the traces and paces of the runs whose rows did not change, kept by the recall; the
charts were drawn once after the first build, as the watcher draws them, so that the page workers forked at
each build inherit the parts of plotly they import; Python's cycle collector held back during each build and
run once after it, as the watcher holds it: its time is shown apart, the site being in place by then). All
builds use the same jobs (the machine's cores). Target (issue: during the lot): a rebuild at most 10% of a
whole build.

    python benchmarks/watch_rebuild.py --tensorboard 400000   # one long run's TensorBoard file instead

With --tensorboard STEPS the campaign is one run whose TensorBoard event file holds STEPS steps of three
scalars, written with tensorboard's own record writer and protos (pip install tensorboard: reportgen does
not use it), and what is appended before each rebuild is one more scalar record: the watcher reads the file
on from where it stopped instead of reading it whole.

    python benchmarks/watch_rebuild.py --console 200000   # one run's Trainer console instead

With --console STEPS the campaign is one run whose captured stdout is a Trainer's console still training
(stdout_reader's: tqdm's bar redrawn every step, a printed dict every 10 steps, an evaluation every 1,000),
and what is appended before each rebuild is one more logging step: a printed dict and the bar redrawn after
it, the bar's line left without its newline as tqdm leaves it. The watcher scans the console on from the end
of its last complete line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from build_scale import campaign, write_plan  # noqa: E402  (the same generated campaigns)

TENSORBOARD_FILE = "events.out.tfevents.1796244580.vm.4242.0"


def tensorboard_campaign(root: Path, steps: int) -> Path:
    """One run, `v-long`, whose TensorBoard file holds `steps` steps of three scalars."""
    from tensorboard_reader import write_events

    logs = root / f"tensorboard-{steps}"
    (logs / "v-long").mkdir(parents=True)
    write_events(logs / "v-long" / TENSORBOARD_FILE, steps, 3)
    return logs


CONSOLE = "train.log"
CONSOLE_STEPS = [0]  # the console's steps, for the bars appended after them


def console_campaign(root: Path, steps: int) -> Path:
    """One run, `v-long`, whose captured stdout is a Trainer console of `steps` steps, still training."""
    from stdout_reader import write_stdout

    logs = root / f"console-{steps}"
    (logs / "v-long").mkdir(parents=True)
    write_stdout(logs / "v-long" / CONSOLE, steps, 10, finished=False)
    CONSOLE_STEPS[0] = steps
    return logs


def append_console(logs: Path, n: int) -> None:
    """One logging step more: tqdm clears its bar, the Trainer prints its dict, tqdm draws the bar again."""
    steps = CONSOLE_STEPS[0]
    with (logs / "v-long" / CONSOLE).open("a", encoding="utf-8") as handle:
        handle.write(f"\r{' ' * 46}\r{{'loss': '{1.0 / n:.4g}', 'grad_norm': '0.5', 'learning_rate': '1e-05', "
                     f"'epoch': '{steps / 64:.4g}'}}\n\r 99%|█████████▉| {steps - 1}/{steps} [1:00:00<00:01,  4.77it/s]")


def append_line(logs: Path, n: int) -> None:
    """One metric line more at the end of the first run's native event log."""
    log = sorted(logs.rglob("events.jsonl"))[0]
    last = json.loads(log.read_text(encoding="utf-8").splitlines()[-1])
    row = {"ts": last["ts"], "type": "metric", "run": last["run"], "step": (last.get("step") or 0) + n,
           "metrics": {"loss": 1.0}}
    with log.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(row) + "\n")


def append_record(logs: Path, n: int) -> None:
    """One scalar record more at the end of the TensorBoard file, as its writer adds it."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.record_writer import RecordWriter

    path = next(logs.rglob(TENSORBOARD_FILE))
    summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="train/metric_0", simple_value=0.5)])
    with path.open("ab") as handle:
        RecordWriter(handle).write(event_pb2.Event(wall_time=1.8e9 + n, step=10**9 + n, summary=summary).SerializeToString())


# Rebuilds made before those measured, as a watcher has made them after its first minutes: the kept readings
# loaded once (their frames then shared from build to build), the logs' signatures taken a clock tick after
# their last change (ingest/cache.py).
SETTLE = 2


def rebuilds(logs: Path, plan: Path, out: Path, repeats: int, append: Callable[[Path, int], None]
             ) -> tuple[float, list[float]]:
    """Child process: build once, then append a line (or a record) and build again, `repeats` times; the times."""
    from reportgen.build import build
    from reportgen.ingest.cache import open_cache
    from reportgen.parallel import cores
    from reportgen.recall import Recall
    from reportgen.render import charts
    from reportgen.render.memo import PageMemo
    from reportgen.watch import WRITE_EVERY, collected_after

    # The parse cache, the pages and the work of the last build, as the watcher holds them.
    cache, memo, recall = open_cache(logs, write_every=WRITE_EVERY), PageMemo(), Recall()
    with collected_after():  # Python's cycle collection held back until the site is in place, as the watcher holds it
        started = time.perf_counter()
        built = build(logs, plan, out, jobs=cores(), cache=cache, memo=memo, recall=recall)
        first = time.perf_counter() - started
        charts.warm(built.report)  # as the watcher does after its first build
    times, collections = [], []
    for n in range(1, SETTLE + repeats + 1):
        append(logs, n)
        with collected_after():
            started = time.perf_counter()
            build(logs, plan, out, jobs=cores(), cache=cache, memo=memo, recall=recall)
            times.append(time.perf_counter() - started)
            started = time.perf_counter()
        collections.append(time.perf_counter() - started)
    return first, times[SETTLE:], collections[SETTLE:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tensorboard", type=int, metavar="STEPS", help="one run's TensorBoard file of STEPS steps")
    parser.add_argument("--console", type=int, metavar="STEPS", help="one run's Trainer console of STEPS steps")
    parser.add_argument("--child", nargs=3, metavar=("LOGS", "PLAN", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        append = append_record if args.tensorboard else append_line
        if args.console:
            append, CONSOLE_STEPS[0] = append_console, args.console
        print(json.dumps(rebuilds(Path(args.child[0]), Path(args.child[1]), Path(args.child[2]), args.repeats, append)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if args.console:
            logs = console_campaign(root, args.console)
            mib = (logs / "v-long" / CONSOLE).stat().st_size / 2**20
        else:
            logs = tensorboard_campaign(root, args.tensorboard) if args.tensorboard else campaign(root, args.runs)
        plan = write_plan(root / "plan.yaml")
        whole = []
        for _ in range(args.repeats):
            started = time.perf_counter()
            subprocess.run([sys.executable, "-m", "reportgen", "build", str(logs), str(plan), "-o", str(root / "site"), "-q",
                            "--no-cache"], check=True)
            whole.append(time.perf_counter() - started)
        out = subprocess.run([sys.executable, __file__, "--repeats", str(args.repeats), "--tensorboard", str(args.tensorboard or 0),
                              "--console", str(args.console or 0), "--child", str(logs), str(plan), str(root / "watched")], check=True, capture_output=True, text=True,
                             env={**os.environ, "XDG_CACHE_HOME": str(root / "cache")})
        first, again, collected = json.loads(out.stdout)
    full, rebuild = statistics.median(whole), statistics.median(again)
    what = f"one run's TensorBoard file of {args.tensorboard:,} steps" if args.tensorboard else f"{args.runs} runs"
    if args.console:
        what = f"one run's Trainer console of {args.console:,} steps ({mib:.1f} MiB)"
    print(f"{what}, {os.cpu_count()} cores, median of {args.repeats}")
    print(f"  reportgen build --no-cache (its own process) {full:7.2f} s   1.00")
    print(f"  first build, filling the cache (watching)   {first:7.2f} s   {first / full:4.2f}")
    added = "record" if args.tensorboard else ("step" if args.console else "line")
    print(f"  rebuild after one appended {added} (watching) {rebuild:7.2f} s   {rebuild / full:4.2f}   (target 0.10)")
    print(f"  then the cycle collection, the site in place  {statistics.median(collected):7.2f} s")
    print(f"  builds: {', '.join(f'{t:.2f}' for t in whole)}; rebuilds: {', '.join(f'{t:.2f}' for t in again)}")


if __name__ == "__main__":
    main()
