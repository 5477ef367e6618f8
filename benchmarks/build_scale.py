"""Benchmark: a whole `reportgen build` against `reportgen inspect` (ingest alone) on the same logs.

    python benchmarks/build_scale.py                          # 10, 50 and 200 runs; one run of 1,000,000 steps
    python benchmarks/build_scale.py --runs 10 --steps 200000 # quicker
    python benchmarks/build_scale.py --steps 5000000          # one run of 5,000,000 steps (about 2 GB of logs)

Generates campaigns in reportgen's own event format, written with its EventLog: campaigns of N
runs of 10,000 steps each (a checkpoint saved and transferred every 500 steps, an evaluation every
1,000), and one long run of M steps with a checkpoint every 2,000. Each command runs in its own
process, the ingest (`inspect`, with its default workers) and the build with one worker (`-j 1`)
and with the machine's cores taking turns; reported side by side in one run: the build's time as a
ratio to its ingest (the target is at most 2x), the time per run as the campaign grows (flat when the
build is linear), the CPU used as a share of one core (above 100% when both cores work; the workers'
time counts), and each process's peak memory (its largest process: workers are forked, not added up)."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import yaml

from reportgen.events import EventLog, ticking
from reportgen.parallel import cores

REPO = Path(__file__).resolve().parents[1]
JST = timezone(timedelta(hours=9))
START = datetime(2026, 11, 2, 9, 30, tzinfo=JST)


def write_run(logs: Path, run: str, steps: int, every: int, save_every: int, start: datetime) -> None:
    """One run: a metric row every `every` steps, an evaluation every 1,000, a checkpoint saved and
    transferred every `save_every`, and its end."""
    log = EventLog(logs / "runs" / run / "events.jsonl", run=run, clock=ticking(start, minutes=0.05 / 60))  # a record every 0.05 s
    log.run_start(config={"lr": 2e-4, "max_steps": steps}, variant="control" if run.startswith("c") else "lora-r16")
    for step in range(every, steps + 1, every):
        log.metric(step=step, loss=2.0 / (1 + step / 1e4), grad_norm=1.0, learning_rate=2e-4 * (1 - step / steps))
        if step % 1000 == 0:
            log.eval(step=step, metrics={"eval_rougeL": 0.30 + 0.03 * step / steps})
        if step % save_every == 0:
            path = f"ckpt/{run}/checkpoint-{step}"
            log.checkpoint_save(step=step, path=path, seconds=30.0,
                                state=["model", "optimizer", "scheduler", "rng", "progress"])
            log.checkpoint_transfer(path=path, seconds=40.0, destination="bucket")
    log.run_end(status="completed", step=steps)


def write_plan(path: Path) -> Path:
    plan = yaml.safe_load((REPO / "sample_logs" / "plan.yaml").read_text(encoding="utf-8"))
    for variant in plan["variants"]:
        variant["runs"] = {"control": ["c-*"], "lora-r16": ["v-*"]}.get(variant["id"], [f"none-{variant['id']}-*"])
    for step in plan["schedule"]["steps"]:
        step["runs"] = {"control-preds": ["c-*"], "train-r16": ["v-*"]}.get(step["id"], [])
    plan["order"]["lots"][0]["days"] = 30
    path.write_text(yaml.safe_dump(plan, sort_keys=False), encoding="utf-8")
    return path


def campaign(root: Path, runs: int) -> Path:
    logs = root / f"runs-{runs}"
    for n in range(runs):
        write_run(logs, f"{'c' if n % 2 == 0 else 'v'}-{n}", 10_000, 10, 500, START + timedelta(minutes=20 * n))
    return logs


def long_run(root: Path, steps: int) -> Path:
    logs = root / f"steps-{steps}"
    write_run(logs, "v-long", steps, 1, 2_000, START)
    return logs


def measured(command: list[str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak MiB of one process."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode not in (0,):
        raise SystemExit(f"{' '.join(command)} exited {process.returncode}: {process.stderr.read().decode()[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def compare(name: str, logs: Path, plan: Path, out: Path, repeats: int, runs: int, jobs: list[int]) -> list[str]:
    """Ingest alone, then the build with each number of jobs, each repeat taking its turn with the others
    (a load that comes and goes on a shared machine weighs on all of them alike)."""
    reportgen = [sys.executable, "-m", "reportgen"]
    commands = {"inspect (ingest)": [*reportgen, "inspect", str(logs), "--json", "-q"]}
    for n in jobs:
        commands[f"build -j {n}"] = [*reportgen, "build", str(logs), str(plan), "-o", str(out), "-q", "-j", str(n)]
    samples: dict[str, list[tuple[float, float, float]]] = {label: [] for label in commands}
    for _ in range(repeats):
        for label, command in commands.items():
            samples[label].append(measured(command))
    rows = []
    base = statistics.median(w for w, _, _ in samples["inspect (ingest)"])
    for label, taken in samples.items():
        wall = statistics.median(w for w, _, _ in taken)
        cpu = statistics.median(c / w for w, c, _ in taken)
        peak = max(m for _, _, m in taken)
        rows.append(f"{name:<22} {label:<17} {wall:8.2f} {wall / base:6.2f} {wall / runs:9.3f} {cpu:6.0%} {peak:9.0f}")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, nargs="*", default=[10, 50, 200], help="campaign sizes in runs")
    parser.add_argument("--steps", type=int, default=1_000_000, help="steps of the long run (0: none)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--jobs", type=int, nargs="*", default=sorted({1, cores()}),
                        help="worker counts to build with (default: 1 and the machine's cores)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="reportgen-build-scale-") as tmp:
        root = Path(tmp)
        plan = write_plan(root / "plan.yaml")
        print(f"{cores()} cores, median of {args.repeats}")
        print(f"{'campaign':<22} {'command':<17} {'seconds':>8} {'ratio':>6} {'s/run':>9} {'CPU':>6} {'peak MiB':>9}")
        for runs in args.runs:
            for row in compare(f"{runs} runs", campaign(root, runs), plan, root / "site", args.repeats, runs, args.jobs):
                print(row, flush=True)
        if args.steps:
            for row in compare(f"1 run, {args.steps:,} steps", long_run(root, args.steps), plan, root / "site",
                               args.repeats, 1, args.jobs):
                print(row, flush=True)


if __name__ == "__main__":
    main()
