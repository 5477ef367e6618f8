"""The registry of format readers, and the one pass that reads LOGS with them.

Each format is one module with one `Reader` (ingest/scan.py says what a reader does). READERS is
the order files are recognised in (the first reader that recognises a file takes it) and the order
the readers claim run folders and read. A new format is one module and one line here, with its
section in docs/formats.md and its fixtures.

A source is what one reader describes as one run: a Trainer output folder, a Lightning version
folder, an MLflow run, a TensorBoard folder outside every run folder, a native run id. Files
inside a run folder (TensorBoard events in a Trainer folder, a train.log beside them) belong to
that folder's source. Which sources are one run, which run continues which, and which run a
captured log outside every run folder belongs to is decided afterwards, from evidence, by
ingest/identity.py; here every source gets a provisional key and the name it would propose.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from reportgen.ingest import (
    bench,
    dvclive,
    hf,
    hydra,
    keras,
    lightning,
    llamafactory,
    manifest,
    mlflow,
    native,
    tensorboard,
    textlog,
    torchtune,
    wandb,
)
from reportgen.ingest.cache import ParseCache
from reportgen.ingest.common import Reading
from reportgen.ingest.scan import (
    LFS,
    Reader,
    Scan,
    Source,
    TextLog,
    read_all,
    recognise,
)
from reportgen.lfs import lfs_pointer
from reportgen.model import Decision, InputFile

# Specific before general: a native event log before any JSON lines, run folders before the TensorBoard
# files and captured logs they hold, the line formats of one library (a CSVLogger training.log, a
# DiskLogger log_<t>.txt) before captured text, captured text last.
READERS: tuple[Reader, ...] = (
    native.READER,
    bench.READER,
    manifest.READER,
    hf.READER,
    llamafactory.READER,
    lightning.READER,
    mlflow.READER,
    wandb.READER,
    tensorboard.READER,
    keras.READER,
    torchtune.READER,
    dvclive.READER,
    hydra.READER,
    textlog.READER,
)


@dataclass
class Scanned:
    """Everything read from LOGS, with the sources and captured logs identity decides about."""

    readings: list[Reading]
    sources: dict[str, Source]
    text_logs: list[TextLog]
    notes: list[tuple[str, Decision]] = field(default_factory=list)  # decisions a reader made within one source


def kind_of(rel: str, head: bytes) -> str | None:
    """The kind a file is recognised as, from its path under LOGS and its first bytes (None: no reader's)."""
    return recognise(READERS, rel, head)


def read_all_formats(logs: Path, found: dict[str, tuple[Path, bytes]], progress: Callable[[str, str, int, int], None] | None,
                     jobs: int = 1, cache: ParseCache | None = None) -> Scanned:
    """Read every file found under LOGS (path -> (file, first bytes)), each once, the files of a
    format that reads ahead shared among up to `jobs` workers (and kept in `cache` between builds)."""
    scan = Scan(logs, found, READERS, progress, jobs, cache)
    read_all(scan, READERS)
    _deliverable_files(scan)
    _pointers(scan)
    _the_rest(scan)
    return Scanned(scan.readings, scan.sources, scan.texts, scan.notes)


def _deliverable_files(scan: Scan) -> None:
    """Files a manifest names that no format claimed: deliverables and expected ids, not unknown files."""
    named = [(p, manifest.DELIVERABLE) for e in scan.entries for p in e.paths]
    named += [(e.expected_ids, manifest.EXPECTED_IDS) for e in scan.entries if e.expected_ids]
    for path, kind in named:
        if path.startswith("/") or ".." in PurePosixPath(path).parts:
            continue  # refused at build time; nothing outside LOGS is listed
        prefix = PurePosixPath(path).as_posix()
        for other in sorted(scan.found):
            if other not in scan.claimed and (other == prefix or other.startswith(prefix + "/")):
                pointed = lfs_pointer(scan.found[other][1]) is not None
                scan.add(Reading([scan.pointer_file(other) if pointed else InputFile(other, kind, records=1)]))
                scan.done(other)


def _pointers(scan: Scan) -> None:
    """Git LFS pointers left where a large file should be: named as such, never read as the file."""
    for rel in scan.files(LFS):
        scan.add(Reading([scan.pointer_file(rel)]))
        scan.done(rel)


def _the_rest(scan: Scan) -> None:
    """Files of a run folder (weights, optimizer, tokenizer) are its output; others are not recognised."""
    for rel in sorted(set(scan.kinds) - scan.claimed):
        folder = scan.owner_folder(rel)
        if folder is None:
            scan.add(Reading([InputFile(rel, None)]))
        else:
            note = f"not read: a file of the run folder {folder or '.'}/, listed as part of that run's output"
            fmt = scan.sources[scan.run_dirs[folder]].format
            scan.add(Reading([InputFile(rel, fmt, records=1, notes=[note])]))
        scan.done(rel)
