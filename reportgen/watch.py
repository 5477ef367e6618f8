"""`reportgen watch`: the site kept up to date during the lot. It builds once, then builds again whenever
a file under LOGS or the plan changes; each build is the same atomic, deterministic build as `reportgen
build`, and one that fails leaves the last good site in place and says why on the terminal. While a lot is
still to end, or a log's last line is being written, a minute without changes also builds again: the time
left, a run gone silent (a hung job) and a line cut off for good move with the clock, not with the logs.

Changes are heard from the operating system (watchfiles: inotify, FSEvents, ReadDirectoryChangesW) or,
where it delivers none (network mounts: NFS, SMB, SSHFS...), by looking at LOGS every --interval
seconds. Nothing is written under LOGS.
"""

from __future__ import annotations

import gc
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import watchfiles

from reportgen.build import Built, build
from reportgen.errors import ReportgenError
from reportgen.ingest import WriteTimes
from reportgen.ingest.cache import ParseCache, open_cache
from reportgen.recall import Recall
from reportgen.render import charts
from reportgen.render.memo import PageMemo
from reportgen.render.output import check_output
from reportgen.serve import Builds, start_server

# File systems that deliver no change events to this machine: a writer on another machine changes them.
NETWORK_FILE_SYSTEMS = frozenset({
    "nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "afs", "ceph", "glusterfs", "lustre", "gpfs", "beegfs",
    "fuse.sshfs", "fuse.s3fs", "fuse.gcsfuse", "fuse.rclone", "fuse.glusterfs", "fuse.juicefs",
    # A host's folder shared into a virtual machine or a container (Docker Desktop, VirtualBox, WSL): the
    # trainer often writes on the other side, whose changes send no events here.
    "virtiofs", "fuse.grpcfuse", "fakeowner", "vboxsf", "drvfs", "prl_fs", "vmhgfs", "fuse.vmhgfs-fuse",
})
MOUNTS = Path("/proc/self/mounts")
# After a build the watcher rests as long as the build took, this many seconds at most: at most half of the
# machine's time goes to rebuilding while logs change without pause.
MAX_REST = 60.0
# A log that grows at every build has what was read of it written to the parse cache at most this often;
# meanwhile the watcher holds it in memory (ingest/cache.py ParseCache).
WRITE_EVERY = 60.0
# While a lot of the order is still to end, the site moves on with the clock though no log changes (the time
# left; a run gone silent, a hung job, whose alert comes only from a build; a last line no longer being written):
# after this many seconds without a change, the site is built again.
TICK = 60.0
TICKED = "the clock moved on"  # why such a build is made; said on the terminal only when it brings an alert


def mount_type(path: Path, mounts: str) -> str | None:
    """The file system type of the mount that holds `path` (the longest mount point above it), from
    the text of /proc/self/mounts; None when no mount holds it."""
    best, kind = -1, None
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = Path(fields[1].replace("\\040", " "))
        if (path == point or path.is_relative_to(point)) and len(point.parts) > best:
            best, kind = len(point.parts), fields[2]
    return kind


def needs_polling(logs: Path) -> str | None:
    """Why LOGS must be polled (the file system its mount is, when change events do not reach this
    machine from it); None when the operating system tells of changes."""
    try:
        mounts = MOUNTS.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None  # not Linux: watchfiles' own events
    kind = mount_type(logs.resolve(), mounts)
    return f"{logs} is on {kind}, which sends no change events" if kind in NETWORK_FILE_SYSTEMS else None


@dataclass
class Watch:
    """What `reportgen watch` was asked to do."""

    logs: Path
    plan: Path
    out: Path
    interval: float = 1.0  # seconds for changes to settle before a build; with polling, between looks
    poll: bool = False
    templates: Path | None = None
    single_file: bool = False
    jobs: int = 1
    cache: bool = True  # keep what is read of each log between builds (ingest/cache.py)
    parse_cache: ParseCache | None = None  # that cache, held from build to build (opened at the first)
    memo: PageMemo = field(default_factory=PageMemo)  # the pages of the last build (render/memo.py)
    recall: Recall = field(default_factory=Recall)  # what the last build worked out (recall.py)
    writes: WriteTimes = field(default_factory=WriteTimes)  # the logs' modification times seen from build to build
    polled: bool = False  # LOGS looked at every interval (a network file system: its files' times are another clock's)
    warmed: bool = False  # the charts drawn once here, so that the page workers forked at each build need not import plotly's parts
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)  # the lot clock's now at each build
    tick: float = TICK  # seconds without a change after which a build that moves with the clock is made again


def changes(paths: Iterable[Path], interval: float, poll: bool, stop: threading.Event) -> Iterator[set[str]]:
    """The paths changed under `paths`, a batch at a time once they have settled for `interval`, and an empty
    batch every `interval` or so when nothing changed (a moment to look at what events cannot tell); ends
    when `stop` is set. Ctrl-C raises KeyboardInterrupt, as anywhere else in the watch (watchfiles would
    otherwise end the batches quietly, and the watch would start again)."""
    for batch in watchfiles.watch(*paths, debounce=int(interval * 1000), stop_event=stop, force_polling=poll or None,
                                  poll_delay_ms=int(interval * 1000), rust_timeout=int(max(interval, 0.5) * 1000),
                                  yield_on_timeout=True, raise_interrupt=True):
        yield {path for _change, path in batch}


def stamp(path: Path) -> tuple[int, int, int] | None:
    """What tells a file's content changed without reading it (the parse cache's signature reads its ends): its
    inode, size and modification time. An editor that saves by writing a new file and renaming it over the old
    changes the inode."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_ino, stat.st_size, stat.st_mtime_ns


@contextmanager
def collected_after() -> Iterator[None]:
    """Python's cycle collector held back while a build runs and the site is put in place, then run once. The
    watcher holds what every build needs (the parse cache, the page memo, the recall), and each full collection
    a build sets off looks over all of it again: a fifth of a rebuild's time. What a build leaves in reference
    cycles (plotly makes a class for each figure it writes out, for one) waits for the collection at its end:
    a whole build of 200 runs in one process peaked at the same memory either way (341 MB against 340 MB)."""
    held = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if held:
            gc.enable()
            gc.collect()


def ticking(built: Built, now: datetime) -> bool:
    """Whether what the site says moves on with the clock alone: a lot of the order not over at `now` (the time
    left, the alert for a run gone silent), or a log whose last record was being written (once it has been still
    for ingest.WRITING_SECONDS, the record is damage)."""
    clock = built.analysis.clock
    return (clock is not None and any(lot.end > now for lot in clock.lots)) or \
        any(info.being_written for info in built.analysis.campaign.inputs)


def run(watch: Watch, say: Callable[[str], None], stop: threading.Event | None = None,
        serve: tuple[str, int] | None = None, builds: Builds | None = None) -> Builds:
    """Build, then build again after every batch of changes until `stop` is set (Ctrl-C on the terminal);
    with `serve`, the site is served at that address meanwhile. Returns the builds' count."""
    stop = stop or threading.Event()
    builds = builds or Builds()
    check_output(watch.out, watch.logs, watch.plan)  # before anything: a folder that overlaps LOGS is refused at once
    server = None
    if serve is not None:
        server = start_server(watch.out, serve, builds)
        host, port = server.server_address[:2]
        say(f"serving {watch.out} at http://{'[' + host + ']' if ':' in host else host}:{port}/ "
            "(pages reload themselves after each build; Ctrl-C stops)")
    poll = watch.poll
    if not poll and (why := needs_polling(watch.logs)):
        say(f"{why}: looking for changes every {watch.interval:g} s")
        poll = True
    watch.polled = poll
    try:
        _watch(watch, builds, say, poll, stop)
    finally:
        if watch.parse_cache is not None:
            watch.parse_cache.flush()  # what it held back, for the next build or watch of LOGS
        if server is not None:
            server.shutdown()
            server.server_close()
    return builds


def _watch(watch: Watch, builds: Builds, say: Callable[[str], None], poll: bool, stop: threading.Event) -> None:
    """The first build, then one after every batch of changes until `stop`. A build that follows a wait (the
    first, LOGS back) is made once the watch is listening, so that what changes while it reads is heard. The
    plan is also looked at by its stamp (a file saved by renaming a new one over it is no longer the file
    events were asked for); when LOGS disappears, the watch waits for it to come back and starts again there."""
    plan_seen = stamp(watch.plan)
    due: str | None = "first build"
    moves = False  # the last build moves on with the clock (ticking), made at `last` (monotonic)
    last = time.monotonic()
    while not stop.is_set():
        if not watch.logs.is_dir():
            built = builds.state()["version"] > 0
            say(f"{watch.logs}: gone; waiting for it to come back (the last good site stays)" if built
                else f"{watch.logs}: no such folder yet; waiting for it")
            while not watch.logs.is_dir():
                if stop.wait(watch.interval):
                    return
            due = f"{watch.logs} is back" if built else "first build"
        inside = watch.plan.resolve().is_relative_to(watch.logs.resolve())
        watched = [watch.logs, *([] if inside else [watch.plan]), *([watch.templates] if watch.templates else [])]
        for changed in changes(watched, watch.interval, poll, stop):
            if not watch.logs.is_dir():
                break  # watched no more: wait for it above
            if (plan_now := stamp(watch.plan)) != plan_seen:
                plan_seen = plan_now
                changed.add(str(watch.plan.resolve()))
            if due is None and not changed and moves and time.monotonic() - last >= watch.tick:
                due = TICKED
            if due is not None or changed:
                began = time.monotonic()
                with collected_after():  # the pages told of the new site before the collection
                    # A build that fails moves as the last good one did: a hung run with quiet logs is still told of.
                    moves = _build(watch, builds, say, due or _what_changed(changed, watch), quiet=due == TICKED, moved=moves)
                last = time.monotonic()
                took = last - began
                due = None
                # The machine runs the training too: what changes meanwhile waits as long as the build took.
                if stop.wait(min(took, MAX_REST)):
                    return


def _build(watch: Watch, builds: Builds, say: Callable[[str], None], why: str, quiet: bool = False,
           moved: bool = False) -> bool:
    """One build, said on the terminal with the time it began in the plan's time zone (the site's; before
    any build has read the plan, the machine's); with `quiet` (a build the clock made, once a minute during the
    lot), said only when it brings a new alert, and a failure said only when it is not the last one's. Whether
    its site moves on with the clock (ticking); for a build that failed, `moved`: as the last good one."""
    started, now = time.monotonic(), watch.clock()
    if watch.cache and watch.parse_cache is None:
        # A polled file system's times are another machine's clock's: they do not tell an unchanged file.
        watch.parse_cache = open_cache(watch.logs, write_every=WRITE_EVERY, trust_times=not watch.polled)
    try:
        built = build(watch.logs, watch.plan, watch.out, templates=watch.templates, single_file=watch.single_file,
                      jobs=watch.jobs, now=now, cache=watch.parse_cache or False, memo=watch.memo, recall=watch.recall,
                      writes=watch.writes)
    except ReportgenError as exc:
        again = quiet and builds.state()["failure"] == exc.format_message()
        builds.failed(exc.format_message())
        kept = "the last good site stays" if builds.state()["version"] else "no site yet"
        if not again:
            say(f"{now.astimezone(builds.zone):%H:%M:%S} {why}: the build failed ({kept}):\n{exc.format_message()}")
        return moved
    builds.zone = built.analysis.schedule.window.start.tzinfo  # the site's: its first lot's start
    if not watch.warmed:
        charts.warm(built.report)
        watch.warmed = True
    clock = f"{now.astimezone(builds.zone):%H:%M:%S}"
    builds.built()
    report = built.report
    warnings = len(report["warnings"])
    # Each alert said once while it lasts; one that went away and comes back (the projection back within the
    # lot's end, then past it again) is said again.
    new = [alert for alert in report["alerts"] if alert["key"] not in builds.alerted]
    builds.alerted = {alert["key"] for alert in report["alerts"]}
    if new or not quiet:
        say(f"{clock} {why}: built {watch.out}/index.html in {time.monotonic() - started:.1f} s: "
            f"verdict {report['campaign']['verdict']}, {len(report['runs'])} runs"
            + (f", {warnings} warning{'s' if warnings != 1 else ''}" if warnings else ""))
    for alert in new:
        cited = ", ".join(f"{e['path']}:{e['line']}" if e["line"] else e["path"] for e in alert["evidence"][:2])
        say(f"alert: {alert['message']}" + (f" ({cited})" if cited else ""))
    return ticking(built, now)


def _what_changed(changed: set[str], watch: Watch) -> str:
    """The changed paths as a user reads them: relative to LOGS, the first three and a count."""
    logs = watch.logs.resolve()
    names = sorted(os.path.relpath(path, logs) if Path(path).resolve().is_relative_to(logs) else path for path in changed)
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return f"changed: {shown}"
