"""What a build keeps of each log it read, so that the next build of the same LOGS reads again only what
changed (the parse cache).

A reader that reads its files one by one (`Scan.read_ahead`) keeps what it made of each file, keyed by
the file's signature: its size, modification time, inode, and a digest of its first and last 64 KB.
A file whose signature is unchanged is not read again: what was kept is loaded instead. A long-lived process
takes an unchanged file's signature once (`Signatures`: its status, change time included, tells it is unchanged). A reader that
can read a log on from where it stopped (the native event log, a TensorBoard event file, W&B's transaction log,
a console log, and
the line logs read through common.read_lines: Lightning's metrics.csv, Keras's CSVLogger files, torchtune's,
DVCLive's, LLaMA-Factory's trainer_log.jsonl, an MLflow file store's metric files) also keeps what
it needs to (`state`), and a log that has only grown since is read from there; `grown` checks that the
bytes it read before are still there (the same first and last 64 KB before where it stopped) before they
are trusted.

The cache lives in the user's cache folder (reportgen/ingest/<fingerprint>/<LOGS>/), never under
LOGS. The fingerprint covers reportgen's own code and the versions of Python and of the libraries
whose objects are kept, so any upgrade or edit starts a new cache and the old ones are thrown away.
What is kept is loaded with pickle, so a folder anyone else could write to is never used (usercache).
A damaged or foreign entry is a miss. REPORTGEN_CACHE=off (or `--no-cache`) turns it off.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import math
import os
import pickle
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from reportgen import __version__
from reportgen.boundary import open_file
from reportgen.usercache import cache_folder, private

EDGE = 64 << 10  # bytes of each end of a file in its signature
KEEP_DAYS = 30  # the cache of a LOGS folder no build used for this long is thrown away
FORMAT = 1  # the layout of an entry; part of the fingerprint


def digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


@dataclass(frozen=True)
class Signature:
    """What says a file is unchanged since it was read: size, modification time, inode, and a digest of
    its first and last EDGE bytes (a file rewritten in place to the same size within one tick of the
    clock is still told apart when either end differs)."""

    size: int
    mtime_ns: int
    inode: int
    head: bytes
    tail: bytes


def signature(path: Path, head: bytes) -> Signature | None:
    """The signature of the file at path now (`head`: its first bytes, as the listing read them); None
    when it cannot be taken (the file is gone, or not a regular file)."""
    try:
        with open_file(path) as handle:
            held = os.fstat(handle.fileno())
            first = head if len(head) >= min(EDGE, held.st_size) else os.pread(handle.fileno(), EDGE, 0)
            last = os.pread(handle.fileno(), EDGE, max(0, held.st_size - EDGE))
    except OSError:
        return None
    return Signature(held.st_size, held.st_mtime_ns, held.st_ino, digest(first[:EDGE]), digest(last))


# How long after a file last changed its times are trusted to tell a later change: the coarsest clock tick of a
# local file system that keeps them (FAT's 2 s), and a second more.
TICK_NS = 3_000_000_000


class Signatures:
    """A long-lived process's signatures of the files it looked at, by path. A file whose status (device, inode,
    size, modification and change times) is as it was at the last look, when that look came TICK_NS or more
    after the file's last change, has the signature taken then: its ends are not read and hashed again (a
    campaign's hundreds of unchanged logs, at every build). A file that changed within a tick of the look could
    have changed again within the same tick, unseen by its times: its signature is taken anew, as it is for
    any file whose status differs. On a local file system the change time is the kernel's, from this machine's
    clock, set at every write and not settable by a program: a file written to in place, its modification time
    put back, differs there. A network file system's times come from another machine's clock, in whole seconds
    for some (SSHFS): with `trusted` False (`watch` on a file system it polls) every signature is taken anew."""

    def __init__(self, clock: Callable[[], int] = time.time_ns, trusted: bool = True) -> None:
        self._clock = clock  # the wall clock, in ns since the epoch, as the files' times are
        self.trusted = trusted
        self._looked: dict[Path, tuple[tuple[int, ...], Signature]] = {}
        self._asked: set[Path] = set()  # the files asked of since `begin`

    def of(self, path: Path, head: bytes) -> Signature | None:
        """signature(path, head), the last look's when the file's status says it is unchanged since."""
        if not self.trusted:
            return signature(path, head)
        at = self._clock()  # before the status: a look taken later than the status could make a change look older
        try:
            held = os.stat(path)
        except OSError:
            return None
        self._asked.add(path)
        status = (held.st_dev, held.st_ino, held.st_size, held.st_mtime_ns, held.st_ctime_ns)
        looked = self._looked.get(path)
        if looked is not None and looked[0] == status:
            return looked[1]
        taken = signature(path, head)
        # Kept for the status only when the file did not change while it was looked at, nor within a tick of the look.
        steady = (taken is not None and (taken.size, taken.mtime_ns, taken.inode) == (held.st_size, held.st_mtime_ns, held.st_ino)
                  and at - max(held.st_mtime_ns, held.st_ctime_ns) >= TICK_NS)
        if steady:
            self._looked[path] = (status, taken)
        else:
            self._looked.pop(path, None)
        return taken

    def begin(self) -> None:
        """A build begins: the files the last one did not ask of (gone from the logs, say) are forgotten."""
        self._looked = {path: looked for path, looked in self._looked.items() if path in self._asked}
        self._asked = set()


@dataclass(frozen=True)
class ReadTo:
    """Where a read of a growing log stopped (`end`, in bytes) and what says the file still holds what was read
    there: digests of its first EDGE bytes and of the EDGE bytes before `end` (each fewer when `end` is nearer),
    its inode and modification time. Kept by a reader that reads a log on from where it stopped."""

    end: int
    head: bytes
    edge: bytes
    inode: int
    mtime_ns: int

    @classmethod
    def of(cls, path: Path, end: int, first: bytes, last: bytes) -> ReadTo:
        """`first`: the file's bytes from its start (all of them up to `end`, or EDGE at least); `last`: the
        bytes that end at `end` (EDGE of them at least, or all from the start). The file is the one at
        `path` now (its inode and time taken now, after the read)."""
        held = os.stat(path)
        return cls(end, digest(first[:min(EDGE, end)]), digest(last[len(last) - min(EDGE, end):]),
                   held.st_ino, held.st_mtime_ns)


def grown(path: Path, since: ReadTo, budget: int) -> tuple[bytes, bytes, bytes] | None:
    """When the file at `path` has only grown since it was read to `since` (the same file, its first bytes and
    the bytes before `since.end` as they were, and all of it within `budget`): those first bytes, the bytes
    before `since.end`, and the bytes past it. None otherwise: the file is to be read whole."""
    with open_file(path) as handle:
        fd = handle.fileno()
        held = os.fstat(fd)
        if held.st_ino != since.inode or held.st_size < since.end:
            return None  # another file at the path (a rotated log's successor), or cut short
        if held.st_size == since.end and held.st_mtime_ns != since.mtime_ns:
            return None  # changed but no longer: edited in place, not appended to
        head = os.pread(fd, min(EDGE, since.end), 0)
        before = os.pread(fd, min(EDGE, since.end), max(0, since.end - EDGE))
        if digest(head) != since.head or digest(before) != since.edge:
            return None
        handle.seek(since.end)
        more = handle.read(budget - since.end + 1)
    return None if since.end + len(more) > budget else (head, before, more)


@dataclass
class Appended:
    """What a line log that has only grown holds past where it was last read to: its new complete lines (each
    ended by a newline), the last line when it has no newline yet, and where its complete lines end now."""

    complete: str | bytes
    tail: str | bytes
    at: ReadTo


def appended(path: Path, since: ReadTo, budget: int, text: bool = True) -> Appended | None:
    """The lines appended to a line log since it was read to `since` (see `grown`), as UTF-8 text (as bytes
    when not `text`: a log read line by line whose lines are decoded one by one); None when it is to be read
    whole: it did more than grow, or what it grew by is not UTF-8 text (a character not written whole yet, say:
    read whole, the log says so as a whole read does)."""
    found = grown(path, since, budget)
    if found is None:
        return None
    head, before, more = found
    body = more.rfind(b"\n") + 1
    try:
        complete, tail = (more[:body].decode("utf-8"), more[body:].decode("utf-8")) if text else (more[:body], more[body:])
    except UnicodeDecodeError:
        return None
    return Appended(complete, tail, ReadTo.of(path, since.end + body, head + more[:EDGE], before + more[max(0, body - EDGE):body]))


def copied(value: Any) -> Any:
    """An independent copy of what a reader reads on from (pickled and loaded, as the cache keeps it: much
    quicker than a deep copy for the columns of values it holds)."""
    return pickle.loads(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))


def read_to_lines(path: Path, data: bytes) -> ReadTo:
    """Where a text log read whole (`data`, its bytes from the start) ends its complete lines."""
    body = data.rfind(b"\n") + 1
    return ReadTo.of(path, body, data[:EDGE], data[max(0, body - EDGE):body])


# pandas 3 copies a frame's data when it is written to through pandas, whatever else shares it (copy-on-write): a
# kept reading's frames can be shared by the builds that load it, each given frames of its own over the same data.
# (Writing into an array taken from a frame's `.array` bypasses it; reportgen writes into no array of a frame it
# did not make.)
SHARED_FRAMES = int(pd.__version__.split(".")[0]) >= 3


class _FramesApart(pickle.Pickler):
    """Pickles a value with its frames left out, each by its place in `frames`."""

    def __init__(self, file: io.BytesIO, frames: list[pd.DataFrame]):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.frames = frames

    def persistent_id(self, obj: Any) -> int | None:
        if type(obj) is pd.DataFrame:
            self.frames.append(obj)
            return len(self.frames) - 1
        return None


class _FramesShared(pickle.Unpickler):
    """Loads what _FramesApart pickled, each frame a new frame over the kept one's data (copy-on-write)."""

    def __init__(self, file: io.BytesIO, frames: list[pd.DataFrame]):
        super().__init__(file)
        self.frames = frames

    def persistent_load(self, pid: Any) -> pd.DataFrame:
        return self.frames[pid].copy(deep=False)


@dataclass
class Entry:
    """What was kept of one file: its signature then, what its reader made of it, and the state its reader
    reads on from (both pickled, loaded only when used, so each use gets objects of its own).

    An entry a long-lived process holds in memory (`shared`) keeps its value loaded once, its frames apart: each
    use then loads the rest and gets frames of its own over the kept frames' data, which pandas copies before a
    change made through it (SHARED_FRAMES). The frames are most of a reading; loading them anew at every build was most of
    what an unchanged log cost."""

    signature: Signature | tuple  # a folder's: each of its files with its signature
    value: bytes
    state: bytes | None
    shared: bool = field(default=False, compare=False, repr=False)
    _apart: tuple[bytes, list[pd.DataFrame]] | None = field(default=None, compare=False, repr=False)

    def __getstate__(self) -> dict:
        return {"signature": self.signature, "value": self.value, "state": self.state}  # what is written to the disk

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state, shared=False, _apart=None)

    def share(self, held: bool) -> None:
        """Held in memory from build to build (its value then loaded once, its frames shared), or let go."""
        self.shared = held
        if not held:
            self._apart = None

    def loaded(self) -> Any:
        if not (self.shared and SHARED_FRAMES):
            return pickle.loads(self.value)
        if self._apart is None:
            frames: list[pd.DataFrame] = []
            rest = io.BytesIO()
            _FramesApart(rest, frames).dump(pickle.loads(self.value))
            self._apart = (rest.getvalue(), frames)
        rest, frames = self._apart
        return _FramesShared(io.BytesIO(rest), frames).load()

    def loaded_state(self) -> Any:
        return None if self.state is None else pickle.loads(self.state)


def pickled(value: Any, state: Any = None) -> tuple[bytes, bytes | None]:
    """A reader's result and state as they are kept (pickled where they are made: a worker process)."""
    return (pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL),
            None if state is None else pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL))


def fingerprint() -> str:
    """reportgen's code (every module of the package), the entry layout, and the versions of Python and of
    the libraries whose objects are pickled: a cache made by anything else is never loaded."""
    package = Path(__file__).resolve().parents[1]
    total = hashlib.sha256(f"{FORMAT}|{__version__}|{sys.version}|{pd.__version__}|{pa.__version__}|{np.__version__}".encode())
    for module in sorted(package.rglob("*.py")):
        total.update(module.relative_to(package).as_posix().encode())
        total.update(module.read_bytes())
    return total.hexdigest()[:16]


# What a long-lived process keeps in memory of its last build's entries (ParseCache.known), in bytes (_size).
KNOWN_BYTES = 256 << 20


def _size(entry: Entry) -> int:
    """An entry's bytes in memory: its pickles, and its value again when it is loaded once and shared (its frames)."""
    return len(entry.value) * (2 if SHARED_FRAMES else 1) + len(entry.state or b"")


class ParseCache:
    """The kept entries of one LOGS folder: one file each, named by the reader's kind and the file's path
    (and what else its result depends on: `context`).

    Held by a long-lived process (`watch`, `write_every` seconds), an entry put again within `write_every`
    of its last writing is held in memory and written later (at a build `write_every` after, or `flush`):
    a log that grows at every build is not written whole to the disk at every build. An entry not written
    yet when the process ends leaves the one written before, whose log has only grown since: the next
    build reads it on from there. Such a process also keeps the entries of its last build in memory (`known`),
    up to KNOWN_BYTES of them, so that an unchanged file's entry is read from the disk once, not at every build
    (a campaign's hundreds of small logs); an entry beyond that is read from the disk when used (a 1.2 M-row
    TensorBoard run's is 150 MB, whose unpickling takes longer than its reading)."""

    def __init__(self, folder: Path, write_every: float = 0.0, trust_times: bool = True):
        self.folder = folder
        self.write_every = write_every
        self.used: set[str] = set()
        self.hits = self.reads = 0  # files loaded from the cache, files read (whole or on from where they stopped)
        self.held: dict[str, tuple[tuple[str, str, str], Entry]] = {}  # entries not written yet, by name
        # A long-lived process's entries of the last build, by name, written or not: loaded from the disk once.
        # An entry is what its reader made of a file with its signature, whatever the disk holds since.
        self.known: dict[str, tuple[tuple[str, str, str], Entry]] = {}
        self.known_bytes = 0
        self.written: dict[str, float] = {}  # when each entry was last written (time.monotonic)
        self.signatures = Signatures(trusted=trust_times)  # the files' signatures, taken once while they do not change

    def begin(self) -> None:
        """A build begins: what it uses and reads is counted anew."""
        self.used = set()
        self.hits = self.reads = 0
        self.signatures.begin()

    def _name(self, kind: str, rel: str, context: str) -> str:
        return hashlib.sha256(f"{kind}\0{rel}\0{context}".encode("utf-8", "surrogateescape")).hexdigest()[:32] + ".entry"

    def get(self, kind: str, rel: str, context: str = "") -> Entry | None:
        """The entry kept for this file, whatever its signature; None when there is none or it cannot be trusted."""
        name = self._name(kind, rel, context)
        self.used.add(name)
        if name in self.held or name in self.known:
            key, entry = self.held.get(name) or self.known[name]
            return entry if key == (kind, rel, context) else None
        path = self.folder / name
        if not private(path):
            return None
        try:
            with path.open("rb") as handle:
                key, entry = pickle.load(handle)
        except Exception:  # noqa: BLE001 - a damaged or unreadable entry is a miss
            return None
        if key != (kind, rel, context) or not isinstance(entry, Entry):
            return None
        self._know(name, key, entry)
        return entry

    def _know(self, name: str, key: tuple[str, str, str], entry: Entry | None) -> None:
        """Keep an entry in memory (a long-lived process's), within KNOWN_BYTES; None: let it go."""
        if name in self.known:
            gone = self.known.pop(name)[1]
            self.known_bytes -= _size(gone)
            gone.share(False)
        if entry is not None and self.write_every and self.known_bytes + _size(entry) <= KNOWN_BYTES:
            self.known[name] = (key, entry)
            self.known_bytes += _size(entry)
            entry.share(True)

    def put(self, kind: str, rel: str, context: str, entry: Entry) -> None:
        """Keep an entry: written now, or held until `write_every` has passed since it was last written."""
        name = self._name(kind, rel, context)
        self.used.add(name)
        self._know(name, (kind, rel, context), entry)
        if self.write_every and time.monotonic() - self.written.get(name, -math.inf) < self.write_every:
            self.held[name] = ((kind, rel, context), entry)
            return
        self.held.pop(name, None)
        self._write(name, (kind, rel, context), entry)

    def _write(self, name: str, key: tuple[str, str, str], entry: Entry) -> None:
        """An entry written whole or not at all (a build that dies mid-write leaves no half entry)."""
        self.written[name] = time.monotonic()
        part = self.folder / f".{name}.{os.getpid()}.part"
        try:
            # This user's alone whatever the umask (a group-writable entry would never be loaded: private).
            fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
            with os.fdopen(fd, "wb") as handle:
                pickle.dump((key, entry), handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(part, self.folder / name)
        except OSError:
            with contextlib.suppress(OSError):
                part.unlink(missing_ok=True)

    def flush(self, due_only: bool = False) -> None:
        """Write the entries held in memory (`due_only`: those last written `write_every` ago or more)."""
        now = time.monotonic()
        for name, (key, entry) in list(self.held.items()):
            if not due_only or now - self.written.get(name, -math.inf) >= self.write_every:
                del self.held[name]
                self._write(name, key, entry)

    def forget_the_rest(self) -> None:
        """Entries of files this build did not ask for (deleted, renamed or rotated logs) are thrown away; the
        held entries due to be written are written."""
        self.held = {name: held for name, held in self.held.items() if name in self.used}
        for name in [name for name in self.known if name not in self.used]:
            self._know(name, self.known[name][0], None)
        self.flush(due_only=True)
        try:
            for path in self.folder.iterdir():
                if path.name not in self.used:
                    path.unlink()
        except OSError:
            pass


def enabled() -> bool:
    return os.environ.get("REPORTGEN_CACHE", "").strip().lower() not in {"off", "0", "no"}


def open_cache(logs: Path, write_every: float = 0.0, trust_times: bool = True) -> ParseCache | None:
    """The parse cache of a LOGS folder in the user's cache folder; the caches of other fingerprints (an
    earlier reportgen, other library versions) are thrown away. None when it is turned off or no
    private folder can be had. `write_every`: see ParseCache (a long-lived process's); `trust_times`: whether the
    files' times tell an unchanged file (Signatures.trusted: not on a network file system)."""
    if not enabled():
        return None
    current = fingerprint()
    top = cache_folder("ingest")
    if top is None:
        return None
    try:
        for other in top.iterdir():
            if other.name != current and private(other):
                shutil.rmtree(other, ignore_errors=True)
    except OSError:
        pass
    where = hashlib.sha256(str(logs.resolve()).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    folder = cache_folder("ingest", current, where)
    if folder is None:
        return None
    try:
        os.utime(folder)  # used now: kept while it is used
        stale = time.time() - KEEP_DAYS * 86400
        for other in folder.parent.iterdir():  # the caches of LOGS folders not built for KEEP_DAYS
            if other != folder and private(other) and other.stat().st_mtime < stale:
                shutil.rmtree(other, ignore_errors=True)
    except OSError:
        pass
    return ParseCache(folder, write_every, trust_times)
