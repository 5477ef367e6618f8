"""The parse cache (ingest/cache.py): a log unchanged since the last build is not read again, a native
event log that has only grown is read on from where the last read stopped, and either way the campaign
reads exactly as it does without the cache. The cache lives in the user's cache folder, never under LOGS,
and is thrown away when it does not match."""

from __future__ import annotations

import codecs
import json
import os
import pickle
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import SAMPLE_LOGS, SAMPLE_PLAN

from reportgen.build import build
from reportgen.events import EventLog, ticking
from reportgen.ingest import cache as cache_module
from reportgen.ingest import ingest, native
from reportgen.ingest.cache import open_cache
from reportgen.usercache import cache_folder

START = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


def event_log(path: Path, run: str = "r1", steps: int = 30) -> bytes:
    """A native event log as reportgen's EventLog writes it, with damaged lines a crash or a stray print
    leaves among them (those only can be written by hand)."""
    log = EventLog(path, run=run, clock=ticking(START, minutes=1))
    log.run_start(config={"lr": 1e-4, "max_steps": steps}, variant="control")
    for step in range(1, steps + 1):
        log.metric(step=step, loss=2.0 / step, **({"grad_norm": 1.0} if step % 3 else {}))
        if step % 10 == 0:
            log.eval(step=step, metrics={"eval_loss": 1.0 / step})
            log.checkpoint_save(step=step, path=f"ckpt/{run}/checkpoint-{step}", seconds=3.0,
                                state=["model", "optimizer", "scheduler", "rng", "progress"])
    log.run_end(status="completed", step=steps)
    lines = path.read_bytes().splitlines(keepends=True)
    lines.insert(5, b"Traceback (most recent call last):\n")  # a stray print: set aside, counted
    lines.insert(9, b"\n")
    lines.insert(14, b'  {"ts":"2026-11-02T09:14:30Z","type":"metric","run":"r1","step":14,"metrics":{"late":0.5}}\n')
    lines.insert(20, b'{"ts":"2026-11-02T09:20:00Z","type":"metric","run":"r1","step":"x","metrics":{"loss":1}}\n')
    data = codecs.BOM_UTF8 + b"".join(lines)
    path.write_bytes(data)
    return data


def same_log(a: native.NativeLog, b: native.NativeLog) -> None:
    pd.testing.assert_frame_equal(a.metrics, b.metrics)
    assert a.events == b.events
    assert a.input == b.input


def test_a_log_read_on_from_where_it_stopped_reads_as_the_whole_log_wherever_it_was_cut(tmp_path):
    """Every way a growing log can have been seen (cut at any byte: mid-line, at a line's end, inside the
    BOM) then read on gives what reading the whole log gives: nothing read twice, nothing lost."""
    whole_path = tmp_path / "whole.jsonl"
    data = event_log(whole_path)
    whole = native.read(whole_path, "events.jsonl")
    assert whole.input.skipped == 2 and whole.input.blank == 1 and "late" in whole.metrics.columns
    growing = tmp_path / "events.jsonl"
    cuts = sorted({*range(0, len(data), 97), *(i + d for i, b in enumerate(data) if b == 10 for d in (0, 1) if i % 5 == 0), 1, 2, 3})
    for cut in cuts:
        growing.write_bytes(data[:cut])
        _seen, since = native.read_on(growing, "events.jsonl")
        growing.write_bytes(data)
        again, _ = native.read_on(growing, "events.jsonl", since)
        same_log(again, whole)


def test_a_log_that_grew_is_read_from_where_it_stopped_not_from_its_start(tmp_path, monkeypatch):
    path = tmp_path / "events.jsonl"
    data = event_log(path)
    _log, since = native.read_on(path, "events.jsonl")
    with path.open("ab") as handle:
        handle.write(json.dumps({"ts": "2026-11-02T10:00:00Z", "type": "metric", "run": "r1", "step": 31,
                                 "metrics": {"loss": 0.01}}).encode() + b"\n")
    read = []
    monkeypatch.setattr(native, "_read_lines", lambda buf, body, first, out, real=native._read_lines: read.append((len(buf), first)) or real(buf, body, first, out))
    log, after = native.read_on(path, "events.jsonl", since)
    assert read == [(path.stat().st_size - len(data), since.lines + 1)]  # the new line alone, numbered after the others
    assert log.metrics["step"].iloc[-1] == 31 and log.metrics["line"].iloc[-1] == since.lines + 1
    assert after.end == path.stat().st_size and after.lines == since.lines + 1


@pytest.mark.parametrize("change", ["rewritten", "truncated", "edited before the end", "edited at the start"])
def test_a_log_that_did_not_only_grow_is_read_whole(tmp_path, monkeypatch, change):
    """Counter-examples: what was read before is trusted only when its first and last 64 KB are as they were."""
    path = tmp_path / "events.jsonl"
    data = event_log(path)
    _log, since = native.read_on(path, "events.jsonl")
    edited = {
        "rewritten": data.replace(b'"r1"', b'"r2"') + b"\n",
        "truncated": data[: len(data) // 2],
        "edited before the end": data[:-40] + data[-40:].replace(b"completed", b"failed---") + b"\n",
        "edited at the start": data[:60].replace(b"2026", b"2027") + data[60:] + b"\n",
    }[change]
    path.write_bytes(edited)
    read = []
    monkeypatch.setattr(native, "_read_lines", lambda buf, body, first, out, real=native._read_lines: read.append(first) or real(buf, body, first, out))
    log, _ = native.read_on(path, "events.jsonl", since)
    assert read == [1]
    same_log(log, native.read(path, "events.jsonl"))


def test_a_line_being_written_is_read_when_it_is_whole_and_counted_once(tmp_path):
    """The half-written last line of a live log is read as cut off while it is; once its writer ends it,
    the next read reads it whole, and it is one line, not a damaged one and a good one."""
    path = tmp_path / "events.jsonl"
    data = event_log(path)
    line = json.dumps({"ts": "2026-11-02T10:00:00Z", "type": "metric", "run": "r1", "step": 31, "metrics": {"loss": 0.01}}).encode()
    path.write_bytes(data + line[:25])
    log, since = native.read_on(path, "events.jsonl")
    assert log.input.cut_off and log.input.skipped == 3
    path.write_bytes(data + line + b"\n")
    log, _ = native.read_on(path, "events.jsonl", since)
    assert not log.input.cut_off and log.input.skipped == 2
    assert log.input.lines == since.lines + 1 and log.metrics["step"].iloc[-1] == 31


def sample_copy(tmp_path: Path) -> Path:
    logs = tmp_path / "logs"
    shutil.copytree(SAMPLE_LOGS, logs)
    (logs / "plan.yaml").unlink()
    return logs


def site_files(site: Path) -> dict[str, bytes]:
    return {p.relative_to(site).as_posix(): p.read_bytes() for p in sorted(site.rglob("*")) if p.is_file()}


def test_a_build_with_the_cache_is_the_build_without_it(tmp_path, monkeypatch):
    """Cold, warm, and after a log grew, a cut-off line was finished and a file was removed: the site is
    the one a build without the cache writes, and an unchanged log is not read again."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1800000000")
    logs = sample_copy(tmp_path)
    calls: list[str] = []
    real = native.read_on
    monkeypatch.setattr(native, "read_on", lambda path, rel, since=None: calls.append(rel) or real(path, rel, since))

    def both(name: str) -> None:
        build(logs, SAMPLE_PLAN, tmp_path / f"{name}-plain", jobs=1)
        calls.clear()
        build(logs, SAMPLE_PLAN, tmp_path / f"{name}-cached", jobs=1, cache=True)
        assert site_files(tmp_path / f"{name}-cached") == site_files(tmp_path / f"{name}-plain"), name

    both("cold")
    natives = sorted(p.relative_to(logs).as_posix() for p in logs.rglob("*.jsonl") if p.read_bytes().lstrip().startswith(b'{"ts"'))
    assert natives and set(natives) <= set(calls)
    both("warm")
    assert calls == []  # nothing changed: nothing read
    grown = logs / natives[0]
    last = json.loads(grown.read_text(encoding="utf-8").splitlines()[-1])
    with grown.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"ts": last["ts"], "type": "metric", "run": last.get("run", "x"), "step": 1,
                                 "metrics": {"note_loss": 1.0}}) + "\n" + '{"ts": "2026-11-0')
    both("grown")
    assert calls == [natives[0]]
    with grown.open("a", encoding="utf-8") as handle:
        handle.write('2T09:00:00Z", "type": "metric", "run": "x", "step": 2, "metrics": {"note_loss": 2.0}}\n')
    (logs / natives[-1]).unlink()
    both("finished")
    assert calls == [natives[0]]


def test_the_cache_lives_in_the_user_cache_folder_and_nothing_is_written_under_logs(tmp_path, monkeypatch):
    logs = sample_copy(tmp_path)
    before = {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in logs.rglob("*")}
    build(logs, SAMPLE_PLAN, tmp_path / "site", cache=True)
    assert {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in logs.rglob("*")} == before
    cache = open_cache(logs)
    assert cache is not None and cache.folder.is_relative_to(Path(os.environ["XDG_CACHE_HOME"]))
    assert any(cache.folder.iterdir())


def test_a_removed_log_leaves_the_cache_with_it(tmp_path):
    logs = sample_copy(tmp_path)
    first = open_cache(logs)
    ingest(logs, cache=first)
    kept = set(first.folder.iterdir())
    victim = next(p for p in sorted(logs.rglob("*.jsonl")) if p.read_bytes().lstrip().startswith(b'{"ts"'))
    victim.unlink()
    second = open_cache(logs)
    ingest(logs, cache=second)
    assert len(set(second.folder.iterdir())) == len(kept) - 1


def test_a_cache_of_another_reportgen_is_thrown_away_and_a_damaged_entry_is_a_miss(tmp_path, monkeypatch):
    logs = sample_copy(tmp_path)
    monkeypatch.setattr(cache_module, "fingerprint", lambda: "an-older-build00")
    old = open_cache(logs)
    ingest(logs, cache=old)
    monkeypatch.undo()
    monkeypatch.setenv("XDG_CACHE_HOME", os.environ["XDG_CACHE_HOME"])
    current = open_cache(logs)
    assert not old.folder.exists() and current.folder != old.folder
    expected = ingest(logs)
    ingest(logs, cache=current)
    for entry in current.folder.iterdir():
        entry.write_bytes(b"not a pickle")
    again = open_cache(logs)
    got = ingest(logs, cache=again)
    assert again.hits == 0 and again.reads > 0
    pd.testing.assert_frame_equal(got.metrics, expected.metrics)


def test_the_cache_is_off_when_asked_or_when_others_could_write_to_it(tmp_path, monkeypatch):
    logs = sample_copy(tmp_path)
    monkeypatch.setenv("REPORTGEN_CACHE", "off")
    assert open_cache(logs) is None
    monkeypatch.delenv("REPORTGEN_CACHE")
    shared = tmp_path / "shared-cache"
    shared.mkdir()
    monkeypatch.setenv("XDG_CACHE_HOME", str(shared))
    assert cache_folder("ingest") is not None  # made private to this user
    (shared / "reportgen").chmod(0o777)  # a folder anyone could write to: what it holds is never loaded
    assert cache_folder("ingest") is None and open_cache(logs) is None


def test_a_signature_tells_a_file_rewritten_to_the_same_size_apart(tmp_path):
    path = tmp_path / "a.log"
    path.write_bytes(b"x" * 200_000)
    first = cache_module.signature(path, path.read_bytes()[:65536])
    stat = path.stat()
    path.write_bytes(b"x" * 199_999 + b"y")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # the same size and time: only the tail differs
    assert cache_module.signature(path, path.read_bytes()[:65536]) != first
    assert cache_module.signature(tmp_path / "gone.log", b"") is None


def _counted_signatures(monkeypatch, later_ns: int) -> tuple[cache_module.Signatures, list[Path]]:
    """Signatures whose looks come `later_ns` after the wall clock, and the files whose ends they read."""
    taken, real = [], cache_module.signature
    monkeypatch.setattr(cache_module, "signature", lambda path, head: taken.append(path) or real(path, head))
    return cache_module.Signatures(clock=lambda: time.time_ns() + later_ns), taken


def test_a_file_unchanged_since_a_look_a_tick_after_its_change_keeps_its_signature_unread(tmp_path, monkeypatch):
    path = tmp_path / "a.log"
    path.write_bytes(b"x" * 200_000)
    signatures, taken = _counted_signatures(monkeypatch, 10 * 10**9)  # looked at 10 s after the file was written
    first = signatures.of(path, b"")
    assert signatures.of(path, b"") == first == cache_module.signature(path, b"") and taken == [path, path]
    # Counter-example: rewritten in place to the same size, its modification time put back: its change time is not
    # (put again until the kernel's coarser clock, on some systems a few ms a tick, has moved on).
    stat = path.stat()
    path.write_bytes(b"x" * 199_999 + b"y")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    for _ in range(300):
        if path.stat().st_ctime_ns != stat.st_ctime_ns:
            break
        time.sleep(0.01)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert signatures.of(path, b"") != first and len(taken) == 3
    # A file the last build did not ask of is forgotten: looked at anew when it is back.
    signatures.begin()
    signatures.begin()
    signatures.of(path, b"")
    assert len(taken) == 4


def test_a_file_looked_at_within_a_tick_of_its_change_is_looked_at_again(tmp_path, monkeypatch):
    """Counter-example: a file changed within the tick of the look could change again with the same times."""
    path = tmp_path / "a.log"
    path.write_bytes(b"x" * 1000)
    signatures, taken = _counted_signatures(monkeypatch, 0)
    signatures.of(path, b"")
    signatures.of(path, b"")
    assert taken == [path, path]
    assert signatures.of(tmp_path / "gone.log", b"") is None
    # Its modification time put an hour back: its change time, now, still says it just changed.
    hour_ago = time.time() - 3600
    os.utime(path, (hour_ago, hour_ago))
    signatures.of(path, b"")
    signatures.of(path, b"")
    assert len(taken) == 4


def test_a_file_that_changed_while_it_was_looked_at_is_looked_at_again(tmp_path, monkeypatch):
    """Counter-example: the file grew between its status and the read of its ends (its signature's size is not the
    status's): what was read is not kept for the status, and the next look reads it again."""
    path = tmp_path / "a.log"
    path.write_bytes(b"x" * 1000)
    signatures, taken = _counted_signatures(monkeypatch, 10 * 10**9)
    counted = cache_module.signature  # the signature as _counted_signatures counts it

    def grown(path: Path, head: bytes) -> cache_module.Signature:
        now = counted(path, head)
        return cache_module.Signature(now.size + 10, now.mtime_ns, now.inode, now.head, now.tail)

    monkeypatch.setattr(cache_module, "signature", grown)
    signatures.of(path, b"")
    signatures.of(path, b"")
    assert taken == [path, path]


def test_a_file_system_whose_times_are_not_trusted_has_every_signature_taken_anew(tmp_path, monkeypatch):
    """Counter-example: a polled (network) file system's times are another machine's clock's, in whole seconds for
    some: with `trusted` False, a file unchanged for a long time is looked at at every build all the same."""
    path = tmp_path / "a.log"
    path.write_bytes(b"x" * 1000)
    signatures, taken = _counted_signatures(monkeypatch, 10 * 10**9)
    signatures.trusted = False
    signatures.of(path, b"")
    signatures.of(path, b"")
    assert taken == [path, path]


@pytest.mark.parametrize("campaign", ["trainer-restart", "trainer-tb-only", "plain-prints"])
def test_unchanged_tensorboard_files_and_console_logs_are_loaded_not_read(tmp_path, campaign):
    """Real TensorBoard event files and captured Trainer output (tests/fixtures/make_fixtures.py): a warm
    build reads none of them and the campaign reads the same, runs, continuations and all."""
    logs = tmp_path / campaign
    shutil.copytree(Path(__file__).parent / "fixtures" / "campaigns" / campaign, logs)
    expected = ingest(logs)
    cold = open_cache(logs)
    ingest(logs, cache=cold)
    warm = open_cache(logs)
    got = ingest(logs, cache=warm)
    assert cold.reads > 0 and warm.reads == 0 and warm.hits == cold.reads
    pd.testing.assert_frame_equal(got.metrics, expected.metrics)
    assert got.runs == expected.runs and got.inputs == expected.inputs and got.messages == expected.messages


def test_a_log_rotated_while_the_build_runs_is_said_gone_and_the_next_build_reads_every_row_once(tmp_path, monkeypatch):
    """The trainer's logger rotates events.jsonl (renamed to events.jsonl.1, a new events.jsonl begun just
    after) once the build has listed LOGS and before it reads the file: no traceback, the file is said gone,
    and the next build, with the parse cache that holds the file as it was, reads the rotated file and the new
    one: every row once."""
    from reportgen.ingest import formats

    logs = tmp_path / "logs"
    run = logs / "runs" / "r1"
    run.mkdir(parents=True)
    log = run / "events.jsonl"
    event_log(log)
    first_rows = len(ingest(logs, cache=open_cache(logs)).metrics)
    real = formats.read_all_formats

    def rotated_meanwhile(*args, **kwargs):
        log.rename(run / "events.jsonl.1")
        return real(*args, **kwargs)

    monkeypatch.setattr(formats, "read_all_formats", rotated_meanwhile)
    during = ingest(logs, cache=open_cache(logs))
    [info] = [i for i in during.inputs if i.path == "runs/r1/events.jsonl"]
    assert [p.message.split(" (")[0] for p in info.problems] == ["gone before it could be read"]
    monkeypatch.setattr(formats, "read_all_formats", real)
    fresh = EventLog(log, run="r1", clock=ticking(datetime(2026, 11, 2, 10, 0, tzinfo=UTC), minutes=1))
    for step in range(31, 36):
        fresh.metric(step=step, loss=0.05)
    after = ingest(logs, cache=open_cache(logs))
    assert sorted(i.path for i in after.inputs) == ["runs/r1/events.jsonl", "runs/r1/events.jsonl.1"]
    assert not any(i.problems for i in after.inputs if i.path == "runs/r1/events.jsonl")
    rows = after.metrics.groupby("path")["line"].agg(["count", "nunique"])
    assert rows.to_dict("index") == {"runs/r1/events.jsonl": {"count": 5, "nunique": 5},  # every row, none twice
                                     "runs/r1/events.jsonl.1": {"count": first_rows, "nunique": first_rows}}


def test_the_cache_works_under_a_umask_that_lets_the_group_write(tmp_path, monkeypatch):
    """Ubuntu, Debian and Fedora give users umask 002: entries are written for this user alone all the same
    (a group-writable one would never be loaded)."""
    logs = sample_copy(tmp_path)
    old = os.umask(0o002)
    try:
        ingest(logs, cache=open_cache(logs))
        warm = open_cache(logs)
        ingest(logs, cache=warm)
    finally:
        os.umask(old)
    assert warm.hits > 0 and warm.reads == 0
    assert all(entry.stat().st_mode & 0o777 == 0o600 for entry in warm.folder.iterdir())


def test_a_log_read_on_at_every_build_keeps_a_few_tables_and_reads_as_the_whole(tmp_path):
    """Thousands of rebuilds during a lot each read a log on by a line or two: what is kept for the next read
    stays a few tables (joined, in line order), and the log still reads as it does whole."""
    path = tmp_path / "events.jsonl"
    data = event_log(path)
    _log, since = native.read_on(path, "events.jsonl")
    for n in range(40):
        with path.open("ab") as handle:
            line = json.dumps({"ts": "2026-11-02T10:00:00Z", "type": "metric", "run": "r1", "step": 100 + n,
                               "metrics": {"loss": 1.0 / (n + 1), **({"late_metric": 1.0} if n == 20 else {})}})
            handle.write(line.encode() + (b"\n" if n % 3 else b"\n\n"))
        log, since = native.read_on(path, "events.jsonl", since)
        assert len(since.tables) <= native.JOIN_ABOVE
    same_log(log, native.read(path, "events.jsonl"))
    assert len(data) < path.stat().st_size


def test_a_log_edited_in_place_or_replaced_is_read_whole(tmp_path, monkeypatch):
    """Counter-examples to reading on: a line repaired in place (the log no longer, but changed), and another
    file moved to the log's path with the same first and last bytes: both are read whole."""
    path = tmp_path / "events.jsonl"
    data = event_log(path)
    _log, since = native.read_on(path, "events.jsonl")
    repaired = data.replace(b'"step":"x"', b'"step": 20')
    assert len(repaired) == len(data) and repaired != data
    path.write_bytes(repaired)
    read = []
    monkeypatch.setattr(native, "_read_lines", lambda buf, body, first, out, real=native._read_lines: read.append(first) or real(buf, body, first, out))
    log, _ = native.read_on(path, "events.jsonl", since)
    assert read == [1] and log.input.skipped == since.info.skipped - 1  # the repaired line is read
    other = tmp_path / "other.jsonl"
    other.write_bytes(repaired + b"\n")
    _log, since = native.read_on(path, "events.jsonl")
    os.replace(other, path)
    read.clear()
    native.read_on(path, "events.jsonl", since)
    assert read == [1]


def test_a_last_line_cut_inside_a_character_is_cut_off_not_damaged_text(tmp_path):
    """A writer of raw UTF-8 (a Japanese reason, say) stopped inside a character: the line is cut off, as any
    other last line without its end, not a line that is not UTF-8."""
    path = tmp_path / "events.jsonl"
    data = event_log(path)
    line = json.dumps({"ts": "2026-11-02T10:00:00Z", "type": "stop", "run": "r1", "rule": "S1", "kind": "early",
                       "reason": "損失が下がらない"}, ensure_ascii=False).encode()
    cut = line.index("失".encode()) + 1  # inside the character's three bytes
    path.write_bytes(data + line[:cut])
    log = native.read(path, "events.jsonl")
    assert log.input.cut_off and "cut off" in log.input.problems[-1].message


def test_the_cache_of_a_logs_folder_not_built_for_a_month_is_thrown_away(tmp_path):
    """Counter-example included: a folder built within the month stays."""
    logs, other, recent = sample_copy(tmp_path), tmp_path / "other", tmp_path / "recent"
    other.mkdir()
    recent.mkdir()
    old, kept = open_cache(other).folder, open_cache(recent).folder
    month = time.time() - (cache_module.KEEP_DAYS + 1) * 86400
    os.utime(old, (month, month))
    open_cache(logs)
    assert not old.exists() and kept.exists()


def test_metrics_logged_first_as_null_take_the_same_place_however_the_log_was_cut(tmp_path):
    """A logger that writes every key, null where it has no value: each metric's column follows its first
    value, then the order its line writes them; the same whole or read on from any line."""
    rows = [{"b": None, "loss": 1.0}, {"a": 1.0, "b": 2.0, "loss": 0.9}, {"c": None, "loss": 0.8}, {"loss": 0.7}]
    data = b"".join(json.dumps({"ts": f"2026-11-02T09:0{n}:00Z", "type": "metric", "run": "r1", "step": n + 1,
                                "metrics": metrics}).encode() + b"\n" for n, metrics in enumerate(rows))
    path = tmp_path / "events.jsonl"
    path.write_bytes(data)
    whole = native.read(path, "events.jsonl")
    # c has no value at all: no column (as pyarrow gives it no type)
    assert [c for c in whole.metrics.columns if c not in ("path", "line", "run", "kind", "step", "ts")] == ["loss", "a", "b"]
    for cut in [i + 1 for i, byte in enumerate(data) if byte == 10][:-1]:
        path.write_bytes(data[:cut])
        _seen, since = native.read_on(path, "events.jsonl")
        path.write_bytes(data)
        same_log(native.read_on(path, "events.jsonl", since)[0], whole)


def test_values_that_are_not_numbers_are_reported_once_per_file_however_the_log_was_cut(tmp_path):
    """A metric logged as text on every line: one problem at its first line with the whole count, whether
    the log is read whole or on from any line (not one per piece read)."""
    data = b"".join(json.dumps({"ts": f"2026-11-02T09:{n:02d}:00Z", "type": "metric", "run": "r1", "step": n + 1,
                                "metrics": {"loss": 1.0, "note": "x"}}).encode() + b"\n" for n in range(10))
    path = tmp_path / "events.jsonl"
    path.write_bytes(data)
    whole = native.read(path, "events.jsonl")
    assert [(p.line, p.message) for p in whole.input.problems] == [(1, "metrics.note is not a number (10 values ignored)")]
    for cut in [i + 1 for i, byte in enumerate(data) if byte == 10][:-1]:
        path.write_bytes(data[:cut])
        _seen, since = native.read_on(path, "events.jsonl")
        path.write_bytes(data)
        same_log(native.read_on(path, "events.jsonl", since)[0], whole)


def test_a_result_that_depends_on_more_than_its_file_is_read_again_when_that_changes(tmp_path):
    """Kept.context: what a file's reading depends on besides its bytes (the run folder that holds a
    TensorBoard file). The same file under another context is read again; under the same one it is not."""
    from reportgen.ingest import formats
    from reportgen.ingest.scan import Kept, Scan

    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.log").write_text("hello\n", encoding="utf-8")
    found = {"a.log": (logs / "a.log", b"hello\n")}
    calls: list[str] = []

    def read(rel: str) -> str:
        calls.append(rel)
        return (logs / rel).read_text(encoding="utf-8")

    for context, expected_calls in (("folder-1", 1), ("folder-1", 1), ("folder-2", 2)):
        scan = Scan(logs, found, formats.READERS, cache=open_cache(logs))
        assert scan.read_ahead(["a.log"], read, Kept("test", context=lambda _rel, c=context: c)) == {"a.log": "hello\n"}
        assert len(calls) == expected_calls, context


@pytest.mark.parametrize("jobs", [1, 2])
def test_what_is_kept_of_a_file_is_its_result_as_made_whatever_becomes_of_the_result(tmp_path, jobs):
    """A file read in the building process hands on the very result its reader made, and the cache keeps its pickle,
    made before anything could change it; read by workers (jobs=2, enough files to share), the result comes back
    pickled. Either way a later change to a result handed on is not what the next build loads."""
    from reportgen.ingest import formats
    from reportgen.ingest.scan import Kept, Scan

    logs = tmp_path / "logs"
    logs.mkdir()
    names = [f"{n}.log" for n in range(8 if jobs > 1 else 1)]
    for name in names:
        (logs / name).write_text(name, encoding="utf-8")
    found = {name: (logs / name, name.encode()) for name in names}
    made: dict[str, dict] = {}

    def read(rel: str) -> dict:
        made[rel] = {"text": (logs / rel).read_text(encoding="utf-8"), "rows": [1, 2]}
        return made[rel]

    cache = open_cache(logs)
    first = Scan(logs, found, formats.READERS, cache=cache, jobs=jobs).read_ahead(names, read, Kept("test"))
    if jobs == 1:  # made here: the result itself (workers make theirs in their own processes)
        assert first[names[0]] is made[names[0]]
    for result in first.values():
        result["rows"].append("changed by the build")
    again = Scan(logs, found, formats.READERS, cache=cache, jobs=jobs).read_ahead(names, read, Kept("test"))
    assert again == {name: {"text": name, "rows": [1, 2]} for name in names} and cache.hits == len(names)


def ingest_kept(logs: Path, cache) -> tuple[object, list[tuple[str, str]]]:
    """ingest with `cache`, and what it read and kept this time: (the reader's kind, the file or folder) of each."""
    put = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cache, "put", lambda kind, rel, context, entry, real=cache.put: put.append((kind, rel)) or real(kind, rel, context, entry))
        return ingest(logs, cache=cache), put


def test_a_wandb_run_folder_is_loaded_while_its_files_are_unchanged_and_read_again_when_one_changes(tmp_path):
    """W&B run folders written by wandb itself (tests/fixtures/wandb, a run killed and resumed in a second folder):
    a warm build loads both folders; a folder one of whose W&B files grew, or that holds a new one, is read again
    (counter-examples), the other loaded; the run's console output (files/output.log, read as a console log) growing
    is that log's change alone. The campaign reads as without the cache each time."""
    logs = tmp_path / "resumed"
    shutil.copytree(Path(__file__).parent / "fixtures" / "wandb" / "resumed", logs)
    folders = sorted(p for p in (logs / "wandb").iterdir() if p.is_dir())
    expected = ingest(logs)
    cold = open_cache(logs)
    ingest(logs, cache=cold)
    warm = open_cache(logs)
    got = ingest(logs, cache=warm)
    assert cold.reads > 2 and (warm.reads, warm.hits) == (0, cold.reads)  # the two folders, train.log, the debug logs
    pd.testing.assert_frame_equal(got.metrics, expected.metrics)
    assert got.runs == expected.runs and got.inputs == expected.inputs
    for change, kind in (("debug log grown", "wandb"), ("new file", "wandb"), ("console grown", "text-log")):
        if change == "debug log grown":
            with (folders[1] / "logs" / "debug.log").open("a", encoding="utf-8") as handle:
                handle.write("2026-12-04 21:04:40,000 INFO    MainThread:1 [wandb_run.py:_atexit_cleanup()] one more\n")
        elif change == "new file":
            (folders[0] / "files" / "wandb-summary.json").write_text('{"_step": 3, "loss": 0.5}\n', encoding="utf-8")
        else:
            with (folders[1] / "files" / "output.log").open("a", encoding="utf-8") as handle:
                handle.write("one more line the run printed\n")
        again = open_cache(logs)
        got, read = ingest_kept(logs, again)
        assert [k for k, _rel in read] == [kind] and again.hits == cold.reads - 1, change
        expected = ingest(logs)
        pd.testing.assert_frame_equal(got.metrics, expected.metrics)
        assert got.runs == expected.runs and got.inputs == expected.inputs


FIXTURES = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize("folder", ["formats/hf/hf-resumed", "formats/lightning/pl-killed", "keras/resumed", "torchtune/resumed",
                                    "sample", "dvclive/resumed", "llamafactory/saves", "formats/mlflow", "formats/mlruns",
                                    "hydra/outputs"])
def test_files_of_every_kept_reader_are_loaded_while_unchanged_and_read_again_once_changed(tmp_path, folder):
    """Trainer states and adapters, Lightning metrics, hyperparameters and checkpoints, Keras CSVLogger and torchtune
    logs, checkpoint benchmarks, DVCLive and LLaMA-Factory folders, MLflow stores and run folders, Hydra's .hydra
    files (files the libraries wrote, tests/fixtures/make_fixtures.py): a warm build loads every one; a file touched since (a new modification time: its signature
    differs) is read again, alone, or the folder that holds it (counter-example). The campaign reads as without
    the cache."""
    if folder == "sample":
        logs = sample_copy(tmp_path)
    else:
        logs = tmp_path / "logs"
        shutil.copytree(FIXTURES / folder, logs)

    def same(got) -> None:
        expected = ingest(logs)
        pd.testing.assert_frame_equal(got.metrics, expected.metrics)
        assert got.runs == expected.runs and got.inputs == expected.inputs
        # by repr: a NaN logged (an evaluation's) equals no other NaN object, though it is the same value
        assert repr((got.evaluations, got.checkpoints, got.checkpoint_ops)) == repr((expected.evaluations, expected.checkpoints,
                                                                                    expected.checkpoint_ops))

    cold = open_cache(logs)
    _campaign, first = ingest_kept(logs, cold)
    kinds = {kind for kind, _rel in first}
    expected_kinds = {"formats/hf/hf-resumed": {"hf-trainer-state", "hf-trainer-adapter"},
                      "formats/lightning/pl-killed": {"lightning-csv-metrics", "lightning-csv-hparams", "lightning-csv-checkpoint"},
                      "keras/resumed": {"keras-csv"}, "torchtune/resumed": {"torchtune"},
                      "sample": {"checkpoint-bench", "reportgen-events"}, "dvclive/resumed": {"dvclive"},
                      "llamafactory/saves": {"llamafactory"}, "formats/mlflow": {"mlflow-sqlite"},
                      "formats/mlruns": {"mlflow-files"}, "hydra/outputs": {"hydra"}}[folder]
    assert expected_kinds <= kinds, kinds
    warm = open_cache(logs)
    got, again = ingest_kept(logs, warm)
    assert again == [] and warm.hits == cold.reads
    same(got)
    kind, touched = next((kind, rel) for kind, rel in first if kind in expected_kinds)
    member = logs / touched
    if member.is_dir():  # a folder read as one: one of the files it is read from (metrics)
        member = next(p for p in sorted(member.rglob("*"))
                      if p.suffix in (".tsv", ".jsonl") or p.parent.name == "metrics" or p.name == "config.yaml")
    held = member.stat()
    os.utime(member, ns=(held.st_atime_ns, held.st_mtime_ns + 10**9))
    got, again = ingest_kept(logs, open_cache(logs))
    assert again == [(kind, touched)]
    same(got)


def test_an_mlflow_store_is_read_again_when_only_its_write_ahead_log_changed(tmp_path):
    """A live MLflow server in WAL mode commits to mlflow.db-wal and leaves mlflow.db as it was until a checkpoint:
    the store is kept with its write-ahead log, so a commit to the log alone is read (counter-example to loading
    it because the database file is unchanged)."""
    import sqlite3

    work, logs = tmp_path / "work", tmp_path / "logs"
    work.mkdir()
    logs.mkdir()
    shutil.copyfile(FIXTURES / "formats" / "mlflow" / "mlflow.db", work / "mlflow.db")
    writer = sqlite3.connect(work / "mlflow.db")
    writer.execute("pragma journal_mode=wal")
    writer.execute("pragma wal_autocheckpoint=0")
    uuid, key, ts, step = writer.execute("select run_uuid, key, timestamp, step from metrics order by step desc limit 1").fetchone()

    def commit(value: float, later: int) -> None:
        writer.execute("insert into metrics (key, value, timestamp, run_uuid, step, is_nan) values (?, ?, ?, ?, ?, 0)",
                       (key, value, ts + later, uuid, step + later))
        writer.commit()
        for name in ("mlflow.db-wal", "mlflow.db-shm"):  # copied as the server holds them
            shutil.copyfile(work / name, logs / name)

    commit(0.125, 1000)
    shutil.copyfile(work / "mlflow.db", logs / "mlflow.db")
    ingest(logs, cache=open_cache(logs))
    database = (logs / "mlflow.db").stat()
    commit(0.0625, 2000)
    assert (logs / "mlflow.db").stat().st_mtime_ns == database.st_mtime_ns  # only the log changed
    got, put = ingest_kept(logs, open_cache(logs))
    writer.close()
    assert put == [("mlflow-sqlite", "mlflow.db")]
    assert got.metrics.select_dtypes("number").eq(0.0625).any().any()


def test_a_log_that_grows_at_every_build_of_a_watch_is_written_to_the_cache_at_most_every_so_often(tmp_path, monkeypatch):
    """The watcher holds its parse cache from build to build (write_every): a log read on at every build is
    written at its first build, then held in memory, each build reading on from the last one's read (not from
    what the disk holds), and written when due or when the watch ends (flush). Counter-example: a build's
    cache (no write_every) writes every read."""
    logs = tmp_path / "logs"
    logs.mkdir()
    path = logs / "events.jsonl"
    event_log(path)

    def grow(step: int) -> None:
        with path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"ts": "2026-11-02T10:00:00Z", "type": "metric", "run": "r1", "step": step,
                                     "metrics": {"loss": 1.0 / step}}) + "\n")

    held = open_cache(logs, write_every=3600)
    ingest(logs, cache=held)
    [entry] = list(held.folder.glob("*.entry"))
    written = entry.read_bytes()
    firsts = []
    monkeypatch.setattr(native, "_read_lines", lambda buf, body, first, out, real=native._read_lines: firsts.append(first) or real(buf, body, first, out))
    lines = ingest(logs).inputs[0].lines
    firsts.clear()
    for step in (100, 101, 102):
        grow(step)
        got = ingest(logs, cache=held)
        lines += 1
        assert firsts[-1] == lines and held.reads == 1  # on from the last build's read, held in memory
        assert entry.read_bytes() == written
    held.flush()
    assert entry.read_bytes() != written
    fresh = open_cache(logs)
    again = ingest(logs, cache=fresh)
    assert (fresh.reads, fresh.hits) == (0, 1)
    pd.testing.assert_frame_equal(again.metrics, got.metrics)
    flushed = entry.read_bytes()
    grow(103)
    ingest(logs, cache=open_cache(logs))
    assert entry.read_bytes() != flushed  # a build's cache writes at once


def test_a_watchers_cache_loads_an_entry_from_the_disk_once_and_keeps_it_while_its_file_is_read(tmp_path, monkeypatch):
    """The watcher's cache (write_every) keeps the entries of the last build in memory: an unchanged file is
    loaded without reading its entry from the disk again (an entry is what its reader made of the file with its
    signature, whatever the disk holds since). Counter-examples: a build's cache reads the disk every time, and
    an entry of a file no longer there is let go."""
    logs = tmp_path / "logs"
    (logs / "a").mkdir(parents=True)
    (logs / "b").mkdir()
    event_log(logs / "a" / "events.jsonl", run="a")
    event_log(logs / "b" / "events.jsonl", run="b")
    first = ingest(logs, cache=open_cache(logs))  # a build's cache: the entries on the disk
    opened: list[str] = []
    real_open = Path.open

    def counted(self, *args, **kwargs):
        if self.name.endswith(".entry"):
            opened.append(self.name)
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", counted)
    build_cache = open_cache(logs)
    ingest(logs, cache=build_cache)
    assert len(opened) == 2 and (build_cache.hits, build_cache.reads) == (2, 0)
    opened.clear()
    watching = open_cache(logs, write_every=3600)
    ingest(logs, cache=watching)
    assert len(opened) == 2 and (watching.hits, watching.reads) == (2, 0)  # the watcher's first build: from the disk
    for entry in watching.folder.glob("*.entry"):
        entry.unlink()  # what the disk holds no longer matters to it
    again = ingest(logs, cache=watching)
    assert len(opened) == 2 and (watching.hits, watching.reads) == (2, 0)
    pd.testing.assert_frame_equal(again.metrics, first.metrics)
    shutil.rmtree(logs / "b")
    ingest(logs, cache=watching)
    assert len(watching.known) == 1


def test_a_watchers_cache_keeps_in_memory_no_more_entries_than_its_budget(tmp_path, monkeypatch):
    """Counter-example of the entries kept in memory: past KNOWN_BYTES an entry is not kept, and is read from
    the disk again when used (here the disk no longer has it: its file is read again)."""
    logs = tmp_path / "logs"
    (logs / "a").mkdir(parents=True)
    (logs / "b").mkdir()
    event_log(logs / "a" / "events.jsonl", run="a")
    event_log(logs / "b" / "events.jsonl", run="b")
    watching = open_cache(logs, write_every=3600)
    ingest(logs, cache=watching)
    sizes = sorted(cache_module._size(entry) for _key, entry in watching.known.values())
    assert len(sizes) == 2 and watching.known_bytes == sum(sizes)
    monkeypatch.setattr(cache_module, "KNOWN_BYTES", sizes[-1])  # room for one
    watching = open_cache(logs, write_every=3600)
    ingest(logs, cache=watching)
    assert len(watching.known) == 1 and watching.known_bytes <= sizes[-1]
    for entry in watching.folder.glob("*.entry"):
        entry.unlink()
    ingest(logs, cache=watching)
    assert (watching.hits, watching.reads) == (1, 1)


@pytest.mark.skipif(not cache_module.SHARED_FRAMES, reason="frames are shared under pandas' copy-on-write (pandas 3)")
def test_a_reading_held_in_memory_shares_its_frames_and_a_build_that_changes_them_changes_its_own():
    frame = pd.DataFrame({"run": ["a", "a"], "step": [1, 2], "loss": [0.5, 0.25]})
    value, _state = cache_module.pickled({"frames": [frame], "notes": ["read whole"]})
    entry = cache_module.Entry(None, value, None, shared=True)
    first = entry.loaded()
    held = entry._apart[1][0]
    # A build changes what it was given: a value set, a column replaced, a list grown.
    first["frames"][0].loc[0, "loss"] = 9.0
    first["frames"][0]["run"] = "b"
    first["notes"].append("changed")
    again = entry.loaded()
    assert again == {"frames": [again["frames"][0]], "notes": ["read whole"]}
    pd.testing.assert_frame_equal(again["frames"][0], frame)
    assert again["frames"][0] is not first["frames"][0] and again["frames"][0] is not held
    # The frame's data is the kept one's until it is written to (copy-on-write), not a copy made at each load.
    assert np.shares_memory(again["frames"][0]["step"].to_numpy(), held["step"].to_numpy())
    # What is written to the disk is the entry's pickle alone, loaded as an entry not held in memory.
    assert set(entry.__getstate__()) == {"signature", "value", "state"}
    back = pickle.loads(pickle.dumps(entry))
    assert back == entry and not back.shared and back._apart is None


@pytest.mark.skipif(not cache_module.SHARED_FRAMES, reason="frames are shared under pandas' copy-on-write (pandas 3)")
def test_a_watchers_cache_shares_the_frames_of_the_entries_it_holds_and_lets_go_of_those_it_drops(tmp_path):
    logs = tmp_path / "logs"
    for run in ("a", "b"):
        event_log(logs / run / "events.jsonl", run=run)
    watching = open_cache(logs, write_every=3600)
    ingest(logs, cache=watching)
    ingest(logs, cache=watching)  # each held entry loaded: its frames kept apart, shared from now on
    held = {key[1]: entry for key, entry in watching.known.values()}
    assert all(entry.shared and entry._apart is not None for entry in held.values())
    # What a held entry costs: its pickles, and its value again for its frames loaded once.
    assert watching.known_bytes == sum(2 * len(e.value) + len(e.state or b"") for e in held.values())
    shutil.rmtree(logs / "b")
    ingest(logs, cache=watching)
    gone = held["b/events.jsonl"]
    assert "b/events.jsonl" not in {key[1] for key, _ in watching.known.values()}
    assert not gone.shared and gone._apart is None  # let go: nothing of it held


def test_an_entry_not_held_in_memory_is_loaded_whole_at_each_use():
    """Counter-example: an entry read from the disk and not held (a build's own, or beyond KNOWN_BYTES) keeps nothing."""
    value, _state = cache_module.pickled([pd.DataFrame({"step": [1]})])
    entry = cache_module.Entry(None, value, None)
    assert entry.loaded()[0] is not entry.loaded()[0] and entry._apart is None
