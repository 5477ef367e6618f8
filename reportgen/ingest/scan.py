"""One pass over LOGS, and the interface every format's reader implements.

A format is one module with one `Reader`: how it recognises a file by its content (and name),
which folders it claims as run folders, and how it reads its files into facts. The registry in
ingest/formats.py lists the readers in order; that order is the order files are recognised in
(the first reader that recognises a file takes it) and the order the readers read in.

The scan holds what the readers share: every file found with its first bytes, the kind each was
recognised as, the run folders claimed, the sources (one reader's unit of a run, keyed by the
provisional run id it gave its records), and the readings. Which sources are one run is decided
afterwards, from evidence, by ingest/identity.py.
"""

from __future__ import annotations

import functools
import pickle
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, TypeVar

import pandas as pd

from reportgen.ingest.cache import Entry, ParseCache, Signature, pickled
from reportgen.ingest.common import Reading
from reportgen.lfs import LFS_FORMAT, lfs_pointer
from reportgen.model import (
    Decision,
    Evidence,
    InputFile,
    LogMessage,
    ManifestEntry,
    RunFacts,
)
from reportgen.parallel import ordered_map, workers_for

if TYPE_CHECKING:
    from reportgen.ingest.textlog import Session

LFS = "lfs"  # the kind of a Git LFS pointer, whatever file it stands for
# File names too generic to name a run on their own (train.log, training.log, stdout.txt).
GENERIC_STEMS = {"train", "training", "stdout", "stderr", "log", "logs", "output", "out", "err", "nohup", "console", "run"}


@dataclass(frozen=True)
class Reader:
    """One format's reader.

    recognise(rel, head): the kind of file this reader reads (a name of its own, such as
        "hf-state"), from the file's path under LOGS and its first bytes; None when it is not one.
    read(scan): read every file of its kinds that no reader has taken yet (`scan.files(kind)`),
        each through `scan.contained`, adding readings and sources, and marking each file read
        (`scan.done`).
    claim(scan): before any reader reads, register the folders this format makes run folders
        (`scan.run_folder`): the files below one belong to its run (a TensorBoard file, a text log).
    """

    format: str
    recognise: Callable[[str, bytes], str | None]
    read: Callable[[Scan], None]
    claim: Callable[[Scan], None] | None = None


@dataclass(frozen=True)
class Kept:
    """How a reader's results are kept between builds (ingest/cache.py): `kind` names them, `context` says
    what else one file's result depends on besides its bytes (the run folder that holds it, say), and a
    reader that reads a log on from where it stopped reads through `resume(rel, state) -> (result, state)`
    (state None: read the file whole)."""

    kind: str
    context: Callable[[str], str] = lambda _rel: ""
    resume: Callable[[str, Any], tuple[Any, Any]] | None = None
    # A reader whose result is made from several files (a W&B run folder, an MLflow store and its write-ahead
    # log): those files. The result is kept while every one of them is unchanged (the same files, each with
    # the same signature).
    members: Callable[[str], list[str]] | None = None


@dataclass
class Source:
    """One reader's unit of a run, keyed by the provisional run id its reader gave its records."""

    key: str
    format: str
    name: str  # the run id it proposes: the folder's name, <name>/version_N, the MLflow run name, a native id
    evidence: Evidence
    folder: str | None = None  # its run folder under LOGS
    version_name: str | None = None  # a Lightning logger's <name>/version_N
    declared: bool = False  # a native run id: the user named the run
    params: dict[str, str] | None = None  # an MLflow run's parameters
    dirs: dict[str, str] | None = None  # the folders its configuration names (a W&B run of a Trainer: output_dir)
    uuid: str | None = None  # an MLflow run's uuid
    parent: str | None = None  # an MLflow run's parent run uuid (a nested run)
    # A folder of Lightning checkpoints alone (a ModelCheckpoint dirpath outside the version folder):
    # each checkpoint's hyperparameters, by its path; its checkpoints may be other runs'.
    checkpoint_configs: dict[str, dict] | None = None


@dataclass(eq=False)  # one per file or process: compared and hashed as itself
class TextLog:
    """A captured log, with its sessions (one per process) and messages."""

    path: str
    folder: str
    sessions: list[Session]
    messages: list[LogMessage]
    owner: str | None  # the run whose folder holds it (a source key until merged)
    name: str | None  # the run it names if it is a run of its own (oom-1.log -> oom-1)
    linked: dict[int, str] = field(default_factory=dict)  # session index -> the run it was linked to
    metrics: pd.DataFrame | None = None  # the metric rows it printed (the Trainer's dicts), given to its run in link


@functools.lru_cache(maxsize=65536)
def path_parts(path: str) -> tuple[str, ...]:
    """The parts of a path as a training machine wrote it (POSIX or Windows separators)."""
    return tuple(p for p in PurePosixPath(path.replace("\\", "/")).parts if p not in ("/", "."))


def path_ends_with(path: str, folder: str) -> bool:
    """A path from the training machine ends with every part of `folder` (a folder under LOGS)."""
    inner, outer = path_parts(folder), path_parts(path)
    return bool(inner) and outer[-len(inner):] == inner


def parents(rel: str) -> list[str]:
    """The folders holding rel, nearest first ('' is LOGS itself)."""
    parts = PurePosixPath(rel).parts[:-1]
    return ["/".join(parts[:i]) for i in range(len(parts), -1, -1)]


def folder_name(folder: str) -> str:
    return PurePosixPath(folder).name


def parent(folder: str) -> str:
    above = PurePosixPath(folder).parent.as_posix()
    return "" if above == "." else above


T = TypeVar("T")


class Scan:
    """Every file found under LOGS (path -> (file, first bytes)), what each was recognised as, and
    what the readers made of them. Each file is read once: a reader marks it done."""

    def __init__(self, logs: Path, found: dict[str, tuple[Path, bytes]], readers: tuple[Reader, ...],
                 progress: Callable[[str, str, int, int], None] | None = None, jobs: int = 1,
                 cache: ParseCache | None = None):
        self.logs, self.found, self.progress, self.jobs, self.cache = logs, found, progress, jobs, cache
        self.kinds = {rel: recognise(readers, rel, head) for rel, (_path, head) in found.items()}
        self.readings: list[Reading] = []
        self.claimed: set[str] = set()
        self.sources: dict[str, Source] = {}
        self.texts: list[TextLog] = []
        self.notes: list[tuple[str, Decision]] = []  # decisions a reader made within one source
        self.run_dirs: dict[str, str] = {}  # run folder -> its source key
        self.native_runs: dict[str, set[str]] = {}  # folder -> runs named in its native event logs
        self.entries: list[ManifestEntry] = []  # deliverables manifests' entries
        # Sources whose completion is decided by how far another file shows them: facts and max_steps.
        self.limits: dict[str, tuple[RunFacts, int | None]] = {}
        self.heard: set[str] = set()  # files whose reading progress has been told

    # What the readers call.

    def files(self, kind: str | None) -> list[str]:
        """The files recognised as `kind` that no reader has taken yet, in path order."""
        return sorted(rel for rel, k in self.kinds.items() if k == kind and rel not in self.claimed)

    def members(self, folder: str) -> list[str]:
        """Every file found below a folder ('' is LOGS), in path order."""
        prefix = f"{folder}/" if folder else ""
        return sorted(rel for rel in self.found if rel.startswith(prefix))

    def done(self, rel: str) -> None:
        self.claimed.add(rel)
        self._heard(rel)

    def _heard(self, rel: str) -> None:
        if self.progress and rel not in self.heard:
            self.heard.add(rel)
            self.progress("reading", rel, len(self.heard), len(self.found))

    def read_ahead(self, rels: list[str], read: Callable[[str], T], kept: Kept | None = None) -> dict[str, T]:
        """`read(rel)` of each file (or folder), shared among the scan's workers, for a reader to take
        its results from; one whose read failed is left out, for the reader to read it again within
        `contained`, which reports the failure as that file's.

        With `kept`, the results are kept between builds (ingest/cache.py): a file unchanged since the
        last build is not read again, and one that has grown is read on through `kept.resume`."""
        if kept is None or self.cache is None:
            return self._read_now(rels, read)
        return self._read_kept(rels, read, kept, self.cache)

    def read_one(self, rel: str, read: Callable[[str], T], kept: Kept) -> T:
        """`read(rel)` of one file (or of the files `kept.members` names), through the parse cache when
        the build has one: unchanged since the last build, what was kept is loaded instead. Called within
        `contained`: a read that fails raises here, as it does without the cache."""
        if self.cache is None:
            return read(rel)
        found = self._read_kept([rel], read, kept, self.cache)
        return found[rel] if rel in found else read(rel)

    def _read_now(self, rels: list[str], read: Callable[[str], T]) -> dict[str, T]:
        """read_ahead without the cache: every file read, shared among the workers."""
        def attempt(rel: str) -> T | None:
            try:
                return read(rel)
            except Exception:  # noqa: BLE001 - reported when the reader reads the file again
                return None

        def heard(index: int, _result: T | None) -> None:
            if rels[index] in self.found:  # a file (a folder read whole is told of by its reader)
                self._heard(rels[index])

        results = ordered_map(attempt, rels, self.jobs, heard)
        return {rel: result for rel, result in zip(rels, results) if result is not None}

    def _read_kept(self, rels: list[str], read: Callable[[str], T], kept: Kept, cache: ParseCache) -> dict[str, T]:
        """read_ahead with the cache: what was kept of a file with the same signature is loaded; the other files
        are read (on from their kept state, when their reader can) and kept."""
        results: dict[str, T] = {}
        todo: list[tuple[str, Signature | tuple, Any]] = []  # (file, its signature now, the state its reader reads on from)
        uncached = []  # read as without the cache: folders of a reader that names no members, files gone
        for rel in rels:
            now = self._signature(rel, kept, cache)
            if now is None:
                uncached.append(rel)
                continue
            entry = cache.get(kept.kind, rel, kept.context(rel))
            if entry is not None and entry.signature == now:
                try:
                    results[rel] = entry.loaded()
                    cache.hits += 1
                    if rel in self.found:  # a folder read whole is told of by its reader
                        self._heard(rel)
                    continue
                except Exception:  # noqa: BLE001 - an entry that cannot be loaded: the file is read again
                    pass
            try:
                state = entry.loaded_state() if entry is not None and kept.resume is not None else None
            except Exception:  # noqa: BLE001 - read whole
                state = None
            todo.append((rel, now, state))

        def attempt(item: tuple[str, Signature, Any]) -> tuple[T, Any] | None:
            """The file's result and the state its reader reads on from."""
            rel, _now, state = item
            try:
                return (read(rel), None) if kept.resume is None else kept.resume(rel, state)
            except Exception:  # noqa: BLE001 - reported when the reader reads the file again
                return None

        def attempt_there(item: tuple[str, Signature, Any]) -> tuple[bytes, bytes | None] | None:
            """attempt in a worker: pickled there, as it travels back and is kept."""
            made = attempt(item)
            return None if made is None else pickled(*made)

        def heard(index: int, _result: object) -> None:
            if todo[index][0] in self.found:
                self._heard(todo[index][0])

        # Read here (one worker: a file grown since the last build, say), a result is handed on as it is made and
        # kept as its pickle, made before anything can change it; read by workers, it comes back pickled.
        here = workers_for(self.jobs, len(todo)) == 1
        for (rel, now, _state), made in zip(todo, ordered_map(attempt if here else attempt_there, todo, self.jobs, heard)):
            if made is None:
                continue
            value, new_state = pickled(*made) if here else made
            cache.put(kept.kind, rel, kept.context(rel), Entry(now, value, new_state))
            cache.reads += 1
            results[rel] = made[0] if here else pickle.loads(value)
        results.update(self._read_now(uncached, read) if uncached else {})
        return {rel: results[rel] for rel in rels if rel in results}

    def _signature(self, rel: str, kept: Kept, cache: ParseCache) -> Signature | tuple | None:
        """The signatures of the files `kept.members` names, else the file's own (None: it is not kept, a file of
        it gone, or a folder of a reader that names no members)."""
        if kept.members is None:
            return cache.signatures.of(*self.found[rel]) if rel in self.found else None
        parts = []
        for member in kept.members(rel):
            now = cache.signatures.of(*self.found[member]) if member in self.found else None
            if now is None:
                return None
            parts.append((member, now))
        return tuple(parts)

    def add(self, reading: Reading) -> None:
        self.readings.append(reading)

    @contextmanager
    def contained(self, rel: str, fmt: str | None) -> Iterator[None]:
        """A reader that fails on a file it did not foresee fails for that file alone: the file is
        listed with what went wrong, and the rest of the campaign is read."""
        try:
            yield
        except FileNotFoundError:  # renamed or removed since LOGS was listed: a log rotated while the build ran
            info = InputFile(rel, fmt)
            info.problem(None, "gone before it could be read (renamed or removed while the build ran, as a rotated log "
                               "is); the next build reads what is there then")
            self.readings.append(Reading([info]))
            self.claimed.add(rel)
        except Exception as error:  # noqa: BLE001 - any failure of one reader is that file's problem
            info = InputFile(rel, fmt)
            what = str(error).strip().splitlines()[0][:200] if str(error).strip() else ""
            info.problem(None, f"reportgen could not read this file ({type(error).__name__}{': ' + what if what else ''}); "
                         "the rest of the campaign was read. Please report it with the file")
            self.readings.append(Reading([info]))
            self.claimed.add(rel)

    def run_folder(self, folder: str, source: Source) -> None:
        """A folder is a run folder: the files below it belong to `source` (unless a nearer run folder holds them)."""
        self.run_dirs[folder] = source.key
        self.sources[source.key] = source

    def run_folders(self, fmt: str) -> list[tuple[str, str]]:
        """(folder, source key) of every run folder of one format, in path order."""
        return sorted((folder, key) for folder, key in self.run_dirs.items() if self.sources[key].format == fmt)

    def owner(self, rel: str) -> str | None:
        """The source whose run folder holds rel (the nearest)."""
        folder = self.owner_folder(rel)
        return None if folder is None else self.run_dirs[folder]

    def owner_folder(self, rel: str) -> str | None:
        """The nearest run folder that holds rel ('' is LOGS itself)."""
        return next((f for f in parents(rel) if f in self.run_dirs), None)

    def name_of(self, folder: str) -> str:
        """The run name a folder proposes: its own name; LOGS itself is named after LOGS."""
        return folder_name(folder) or self.logs.resolve().name or "logs"

    def file_name_of(self, rel: str) -> str:
        """The run name a file proposes: its stem (oom-1.log -> oom-1), or its folder's name when the
        stem is too generic to name a run (training.log)."""
        stem = PurePosixPath(rel).stem
        return stem if stem.lower() not in GENERIC_STEMS else self.name_of(parents(rel)[0])

    def shown_by(self, folder: str, names: tuple[str, ...]) -> Evidence:
        """The file that stands for a run folder in evidence: the first of `names` it holds, else its first file."""
        prefix = f"{folder}/" if folder else ""
        for name in names:
            if prefix + name in self.found:
                return Evidence(prefix + name)
        inside = self.members(folder)
        return Evidence(inside[0] if inside else folder or ".")

    def pointer(self, rel: str) -> str | None:
        """What a Git LFS pointer says it stands for (None: the file is no pointer)."""
        return lfs_pointer(self.found[rel][1]) if self.kinds.get(rel) == LFS else None

    def pointer_file(self, rel: str) -> InputFile:
        """A Git LFS pointer's InputFile: named as a pointer, never read as the file it stands for."""
        info = InputFile(rel, LFS_FORMAT)
        info.problem(None, lfs_pointer(self.found[rel][1]) or "a Git LFS pointer")
        return info

    def reached(self, key: str, reached: int, rel: str) -> None:
        """A source whose completion is decided by max_steps (scan.limits) was shown at `reached` steps by rel."""
        facts, limit = self.limits[key]
        facts.last_step = max(facts.last_step or 0, reached)
        if limit is not None and reached >= limit and facts.status is None:
            facts.status, facts.reason = "completed", f"reached max_steps {limit} (hyperparameters; steps logged in {rel})"


def recognise(readers: tuple[Reader, ...], rel: str, head: bytes) -> str | None:
    """The kind of a file: a Git LFS pointer whatever its name, else the first reader's that recognises it."""
    if lfs_pointer(head):
        return LFS
    for reader in readers:
        kind = reader.recognise(rel, head)
        if kind is not None:
            return kind
    return None


def read_all(scan: Scan, readers: tuple[Reader, ...]) -> None:
    """Every reader claims its run folders, then every reader reads its files, in registry order."""
    for reader in readers:
        if reader.claim is not None:
            reader.claim(scan)
    for reader in readers:
        reader.read(scan)
