"""Benchmark: peak memory and time of `reportgen build` on every case of the hostile corpus.

    python benchmarks/hostile_memory.py                      # every case, the 300 MB text logs included
    python benchmarks/hostile_memory.py --no-big             # without the 300 MB cases (quicker, 0.6 GB less disk)
    python benchmarks/hostile_memory.py --only deep- --only big-

The corpus is written by tests/hostile/make_hostile.py into a temporary folder. Each build runs in
a process of its own, `python -m reportgen build LOGS PLAN -o SITE -q`, reaped with os.wait4, which
returns that child's own resource usage: its peak resident memory (ru_maxrss) and its wall time are
measured per case, never summed over children. The reference is the bundled sample campaign
(`sample_logs/` with its plan), built the same way, several times: the table gives each case's peak
as a ratio to the reference's. Target: no case above 1 GB of peak memory or 60 s, none exits 70
(an internal error) or dies; the script exits 1 when one does.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LIMIT_MB = 1024
LIMIT_S = 60.0


def load_corpus_module():
    spec = importlib.util.spec_from_file_location("make_hostile", REPO / "tests" / "hostile" / "make_hostile.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_hostile"] = module
    spec.loader.exec_module(module)
    return module


def measure(logs: Path, plan: Path, site: Path, logs_dir: Path, timeout: float) -> dict:
    """One build in a child process: its exit code (or signal), peak RSS in MB and wall seconds."""
    out_path, err_path = logs_dir / "stdout", logs_dir / "stderr"
    args = [sys.executable, "-m", "reportgen", "build", str(logs), str(plan), "-o", str(site), "-q"]
    env = {k: v for k, v in os.environ.items() if k != "REPORTGEN_DEBUG"}
    with open(out_path, "wb") as out, open(err_path, "wb") as err, open(os.devnull, "rb") as nothing:
        start = time.perf_counter()
        pid = os.posix_spawn(sys.executable, args, env, file_actions=[
            (os.POSIX_SPAWN_DUP2, nothing.fileno(), 0), (os.POSIX_SPAWN_DUP2, out.fileno(), 1),
            (os.POSIX_SPAWN_DUP2, err.fileno(), 2)])
        timed_out = False
        while True:
            done, status, usage = os.wait4(pid, os.WNOHANG)
            if done:
                break
            if time.perf_counter() - start > timeout:
                os.kill(pid, signal.SIGKILL)  # the child this function started, by its pid
                timed_out = True
                done, status, usage = os.wait4(pid, 0)
                break
            time.sleep(0.02)
        seconds = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    text = out_path.read_text(errors="replace") + err_path.read_text(errors="replace")
    return {"code": None if timed_out else code, "peak_mb": usage.ru_maxrss / 1024, "seconds": seconds,
            "output": text.strip().splitlines()[-1][:200] if text.strip() else ""}


def verdict(result: dict) -> str:
    issues = []
    if result["code"] is None:
        issues.append("killed at the timeout")
    elif result["code"] < 0:
        issues.append(f"died by signal {-result['code']}")
    elif result["code"] == 70:
        issues.append("internal error")
    if result["peak_mb"] > LIMIT_MB:
        issues.append(f"over {LIMIT_MB} MB")
    if result["seconds"] > LIMIT_S:
        issues.append(f"over {LIMIT_S:.0f} s")
    return ", ".join(issues)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-big", action="store_true", help="leave out the cases written only with HOSTILE_BIG=1")
    parser.add_argument("--only", action="append", default=[], metavar="PREFIX", help="only the case ids starting so (repeatable)")
    parser.add_argument("--repeat", type=int, default=3, help="builds of the reference (the median time, the highest peak)")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds before a build is killed (default 180)")
    args = parser.parse_args()
    hostile = load_corpus_module()

    def wanted(case) -> bool:
        return not args.only or any(case.id.startswith(prefix) for prefix in args.only)

    with tempfile.TemporaryDirectory(prefix="hostile-memory-") as tmp:
        tmp_path = Path(tmp)
        corpus, sites, logs_dir = tmp_path / "corpus", tmp_path / "sites", tmp_path / "logs"
        sites.mkdir()
        logs_dir.mkdir()
        print(f"writing the corpus into {corpus} ...", file=sys.stderr, flush=True)
        cases = hostile.build_corpus(corpus, big=not args.no_big, only=wanted)
        reference = [measure(REPO / "sample_logs", REPO / "sample_logs" / "plan.yaml", sites / f"reference-{i}", logs_dir,
                             args.timeout) for i in range(args.repeat)]
        ref_mb = max(r["peak_mb"] for r in reference)
        ref_s = statistics.median(r["seconds"] for r in reference)
        rows = []
        for case in cases:
            if case.needs_non_root and os.geteuid() == 0:
                rows.append((case, None))
                continue
            print(f"  {case.id} ...", file=sys.stderr, flush=True)
            result = measure(corpus / case.id / case.logs, corpus / case.id / case.plan, sites / case.id, logs_dir, args.timeout)
            rows.append((case, result))
            hostile.remove_tree(sites / case.id)
        hostile.remove_tree(corpus)  # a tree 1,100 folders deep: more than TemporaryDirectory's cleanup can take

    width = max([len("reference (sample_logs)")] + [len(c.id) for c, _r in rows])
    print(f"{len(rows)} cases, {os.cpu_count()} cores; reference: sample_logs/ with its plan, "
          f"peak {ref_mb:.0f} MB, {ref_s:.2f} s (median of {args.repeat})")
    print(f"{'case':{width}}  {'exit':>4} {'want':>4} {'peak MB':>8} {'ratio':>6} {'seconds':>8} {'ratio':>6}  verdict")
    print(f"{'reference (sample_logs)':{width}}  {reference[0]['code']:>4} {0:>4} {ref_mb:8.0f} {1:6.2f} {ref_s:8.2f} {1:6.2f}")
    failed = []
    for case, result in rows:
        if result is None:
            print(f"{case.id:{width}}  skipped: needs a user other than root")
            continue
        issues = verdict(result)
        code = "kill" if result["code"] is None else result["code"]
        note = issues or ("" if result["code"] == case.exit else f"exit {result['code']}, the case expects {case.exit}")
        print(f"{case.id:{width}}  {code:>4} {case.exit:>4} {result['peak_mb']:8.0f} {result['peak_mb'] / ref_mb:6.2f} "
              f"{result['seconds']:8.2f} {result['seconds'] / ref_s:6.2f}  {note}")
        if issues:
            failed.append((case.id, issues, result["output"]))
    measured = [(c, r) for c, r in rows if r is not None]
    if measured:
        top = max(measured, key=lambda cr: cr[1]["peak_mb"])
        slow = max(measured, key=lambda cr: cr[1]["seconds"])
        print(f"max peak: {top[1]['peak_mb']:.0f} MB ({top[0].id}, {top[1]['peak_mb'] / ref_mb:.2f}x the reference); "
              f"slowest: {slow[1]['seconds']:.1f} s ({slow[0].id})")
    for case_id, issues, output in failed:
        print(f"FAIL {case_id}: {issues}" + (f" -- {output}" if output else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
