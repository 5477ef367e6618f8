"""Benchmark: what `reportgen watch` pays to build again after one line is appended to one log, against a
whole `reportgen build` of the same campaign.

    python benchmarks/watch_rebuild.py               # a campaign of 200 runs (build_scale's)
    python benchmarks/watch_rebuild.py --runs 50     # quicker

Reference: `reportgen build LOGS PLAN --no-cache` in a process of its own (imports, reading, analysis,
pages), the median of --repeats. Measured: in one long-lived process, as the watcher holds it, with the
parse cache and the page memo as the watcher keeps them (the cache in a folder of the benchmark's own,
empty at first): a first build (the cache is filled: what it costs a first build), then --repeats times:
one metric line appended to one run's log and the site built again (the cache holds every other log and
the grown one is read on from where it stopped; the pages of the runs and files that did not change are
the memo's; so are the traces and paces of the runs whose rows did not change, kept by the recall). All builds use the same jobs (the machine's cores). Target (issue: during the
lot): a rebuild at most 10% of a whole build.
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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from build_scale import campaign, write_plan  # noqa: E402  (the same generated campaigns)


def rebuilds(logs: Path, plan: Path, out: Path, repeats: int) -> tuple[float, list[float]]:
    """Child process: build once, then append a line and build again, `repeats` times; the times."""
    from reportgen.build import build
    from reportgen.parallel import cores
    from reportgen.recall import Recall
    from reportgen.render.memo import PageMemo

    memo, recall = PageMemo(), Recall()  # the pages and the work of the last build, as the watcher keeps them
    started = time.perf_counter()
    build(logs, plan, out, jobs=cores(), cache=True, memo=memo, recall=recall)
    first = time.perf_counter() - started
    log = sorted(logs.rglob("events.jsonl"))[0]
    last = json.loads(log.read_text(encoding="utf-8").splitlines()[-1])
    times = []
    for n in range(1, repeats + 1):
        row = {"ts": last["ts"], "type": "metric", "run": last["run"], "step": (last.get("step") or 0) + n,
               "metrics": {"loss": 1.0}}
        with log.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(row) + "\n")
        started = time.perf_counter()
        build(logs, plan, out, jobs=cores(), cache=True, memo=memo, recall=recall)
        times.append(time.perf_counter() - started)
    return first, times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", nargs=3, metavar=("LOGS", "PLAN", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(rebuilds(Path(args.child[0]), Path(args.child[1]), Path(args.child[2]), args.repeats)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        logs, plan = campaign(root, args.runs), write_plan(root / "plan.yaml")
        whole = []
        for _ in range(args.repeats):
            started = time.perf_counter()
            subprocess.run([sys.executable, "-m", "reportgen", "build", str(logs), str(plan), "-o", str(root / "site"), "-q",
                            "--no-cache"], check=True)
            whole.append(time.perf_counter() - started)
        out = subprocess.run([sys.executable, __file__, "--repeats", str(args.repeats), "--child", str(logs), str(plan),
                              str(root / "watched")], check=True, capture_output=True, text=True,
                             env={**os.environ, "XDG_CACHE_HOME": str(root / "cache")})
        first, again = json.loads(out.stdout)
    full, rebuild = statistics.median(whole), statistics.median(again)
    print(f"{args.runs} runs, {os.cpu_count()} cores, median of {args.repeats}")
    print(f"  reportgen build --no-cache (its own process) {full:7.2f} s   1.00")
    print(f"  first build, filling the cache (watching)   {first:7.2f} s   {first / full:4.2f}")
    print(f"  rebuild after one appended line (watching)   {rebuild:7.2f} s   {rebuild / full:4.2f}   (target 0.10)")
    print(f"  builds: {', '.join(f'{t:.2f}' for t in whole)}; rebuilds: {', '.join(f'{t:.2f}' for t in again)}")


if __name__ == "__main__":
    main()
