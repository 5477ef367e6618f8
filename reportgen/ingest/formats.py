"""Recognise every file under LOGS by content and folder layout, and give each one its source.

A source is what one reader describes as one run: a Trainer output folder, a Lightning version
folder, an MLflow run, a TensorBoard folder outside every run folder, a native run id. Files
inside a run folder (TensorBoard events in a Trainer folder, a train.log beside them) belong to
that folder's source. Which sources are one run, which run continues which, and which run a
captured log outside every run folder belongs to is decided afterwards, from evidence, by
ingest/identity.py; here every source gets a provisional key and the name it would propose.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import pandas as pd

from reportgen.bounded import load_json
from reportgen.ingest import (
    bench,
    hf,
    lightning,
    manifest,
    mlflow,
    native,
    tensorboard,
    textlog,
)
from reportgen.ingest.common import Reading
from reportgen.ingest.identity import Source, TextLog, path_ends_with
from reportgen.ingest.mlflow import MlflowRun
from reportgen.lfs import LFS_FORMAT, lfs_pointer
from reportgen.model import (
    STOPPED_BY_LOOP,
    Decision,
    Evaluation,
    Evidence,
    InputFile,
    LogMessage,
    ManifestEntry,
    RunFacts,
)

VERSION_DIR = re.compile(r"^version_(\d+)$")
# Text-log names too generic to name a run on their own.
GENERIC_STEMS = {"train", "training", "stdout", "stderr", "log", "logs", "output", "out", "err", "nohup", "console", "run"}


@dataclass
class Scanned:
    """Everything read from LOGS, with the sources and captured logs identity decides about."""

    readings: list[Reading]
    sources: dict[str, Source]
    text_logs: list[TextLog]
    notes: list[tuple[str, Decision]] = field(default_factory=list)  # decisions a reader made within one source


def _kind(rel: str, head: bytes) -> str | None:
    name = PurePosixPath(rel).name
    if lfs_pointer(head):
        return "lfs"
    if native.sniff(head):
        return "native"
    if bench.sniff(head):
        return "bench"
    if manifest.sniff(head, name):
        return "manifest"
    if name.startswith("events.out.tfevents") or tensorboard.sniff(head):
        return "tensorboard"
    if mlflow.sniff_sqlite(head):
        return "sqlite"
    if head.startswith(b"PK\x03\x04") and name.endswith(".ckpt"):
        return "ckpt"
    if name == hf.STATE or hf.sniff_state(head):
        return "hf-state"
    if name == "adapter_config.json" or hf.sniff_adapter(head):
        return "hf-adapter"
    if name == "meta.yaml" and mlflow.is_run_meta(head):
        return "mlflow-run-meta"
    if lightning.sniff_metrics(head, name):
        return "lightning-metrics"
    if name == "hparams.yaml":
        return "hparams"
    if textlog.sniff(head, name):
        return "text"
    return None


def _parents(rel: str) -> list[str]:
    """The folders holding rel, nearest first ('' is LOGS itself)."""
    parts = PurePosixPath(rel).parts[:-1]
    return ["/".join(parts[:i]) for i in range(len(parts), -1, -1)]


def _name(folder: str) -> str:
    return PurePosixPath(folder).name


def _parent(folder: str) -> str:
    parent = PurePosixPath(folder).parent.as_posix()
    return "" if parent == "." else parent


def read_all(logs: Path, found: dict[str, tuple[Path, bytes]], progress: Callable[[str], None] | None) -> Scanned:
    """Read every file found under LOGS (path -> (file, first bytes)); each file is read once."""
    scan = _Scan(logs, found, progress)
    scan.native()
    scan.benchmarks()
    scan.manifests()
    scan.trainer_folders()
    scan.lightning_folders()
    scan.mlflow()
    scan.tensorboard()
    scan.text_logs()
    scan.deliverable_files()
    scan.pointers()
    scan.the_rest()
    return Scanned(scan.readings, scan.sources, scan.texts, scan.notes)


class _Scan:
    """One pass over LOGS: the run folders, then each format's files, then whatever is left."""

    def __init__(self, logs: Path, found: dict[str, tuple[Path, bytes]], progress: Callable[[str], None] | None):
        self.logs, self.found, self.progress = logs, found, progress
        self.kinds = {rel: _kind(rel, head) for rel, (_path, head) in found.items()}
        self.readings: list[Reading] = []
        self.claimed: set[str] = set()
        self.sources: dict[str, Source] = {}
        self.texts: list[TextLog] = []
        self.notes: list[tuple[str, Decision]] = []
        self.hf_dirs, self.pl_dirs = self._run_folders()
        self.run_dirs = {**self.pl_dirs, **self.hf_dirs}  # folder -> source key
        self.native_runs: dict[str, set[str]] = {}  # folder -> runs named in its native event logs
        self.entries: list[ManifestEntry] = []  # deliverables manifests' entries
        self.pl_limits: dict[str, tuple[RunFacts, int | None]] = {}  # Lightning source -> its facts and max_steps

    def done(self, rel: str) -> None:
        self.claimed.add(rel)
        if self.progress:
            self.progress(rel)

    @contextmanager
    def contained(self, rel: str, fmt: str | None) -> Iterator[None]:
        """A reader that fails on a file it did not foresee fails for that file alone: the file is
        listed with what went wrong, and the rest of the campaign is read."""
        try:
            yield
        except Exception as error:  # noqa: BLE001 - any failure of one reader is that file's problem
            info = InputFile(rel, fmt)
            what = str(error).strip().splitlines()[0][:200] if str(error).strip() else ""
            info.problem(None, f"reportgen could not read this file ({type(error).__name__}{': ' + what if what else ''}); "
                         "the rest of the campaign was read. Please report it with the file")
            self.readings.append(Reading([info]))
            self.claimed.add(rel)

    def files(self, kind: str | None) -> list[str]:
        return sorted(rel for rel, k in self.kinds.items() if k == kind and rel not in self.claimed)

    def owner(self, rel: str) -> str | None:
        """The source whose run folder holds rel."""
        return next((self.run_dirs[f] for f in _parents(rel) if f in self.run_dirs), None)

    def _run_folders(self) -> tuple[dict[str, str], dict[str, str]]:
        """Trainer output folders and Lightning version folders, by the files that make them."""
        hf_dirs: dict[str, str] = {}
        for rel, kind in self.kinds.items():
            if kind == "hf-state":
                folder = _parents(rel)[0]
                hf_dirs.setdefault(_parent(folder) if hf.CHECKPOINT_DIR.match(_name(folder)) else folder, "")
        pl_dirs: dict[str, str] = {}
        for rel, kind in self.kinds.items():
            name = PurePosixPath(rel).name
            if kind not in ("lightning-metrics", "hparams", "ckpt") and not (kind == "lfs" and name.endswith(".ckpt")):
                continue
            folder = _parents(rel)[0]
            if kind in ("ckpt", "lfs") and _name(folder) == "checkpoints":
                folder = _parent(folder)
            if folder in hf_dirs:
                continue
            if kind == "lightning-metrics" and name != "metrics.csv" and not VERSION_DIR.match(_name(folder)):
                continue
            pl_dirs.setdefault(folder, "")
        for folder in hf_dirs:
            hf_dirs[folder] = key = f"{hf.FORMAT}:{folder or '.'}"
            self.sources[key] = Source(key, hf.FORMAT, _name(folder) or "logs", self._shown_by(folder, (hf.STATE,)),
                                       folder=folder)
        for folder in pl_dirs:
            pl_dirs[folder] = key = f"{lightning.FORMAT}:{folder or '.'}"
            version = VERSION_DIR.match(_name(folder))
            name = f"{_name(_parent(folder)) or 'logs'}/{_name(folder)}" if version else (_name(folder) or "logs")
            self.sources[key] = Source(key, lightning.FORMAT, name, self._shown_by(folder, ("metrics.csv", "hparams.yaml")),
                                       folder=folder, version_name=name if version else None)
        return hf_dirs, pl_dirs

    def _shown_by(self, folder: str, names: tuple[str, ...]) -> Evidence:
        """The file that stands for a run folder in evidence: the first of `names` it holds, else its first file."""
        prefix = f"{folder}/" if folder else ""
        for name in names:
            if prefix + name in self.found:
                return Evidence(prefix + name)
        inside = sorted(rel for rel in self.found if rel.startswith(prefix))
        return Evidence(inside[0] if inside else folder or ".")

    def native(self) -> None:
        """Native event logs name their runs inside; their folders name the runs for text logs."""
        for rel in self.files("native"):
            with self.contained(rel, native.FORMAT):
                log = native.read(self.found[rel][0], rel)
                self.readings.append(Reading([log.input], [log.metrics], log.events))
                named = {e.run for e in log.events if getattr(e, "run", None)} | {str(r) for r in log.metrics["run"].unique()}
                self.native_runs.setdefault(_parents(rel)[0], set()).update(named)
                for run in sorted(named):
                    self.sources.setdefault(run, Source(run, native.FORMAT, run, Evidence(rel), declared=True))
            self.done(rel)

    def benchmarks(self) -> None:
        """Checkpoint benchmark records (JSONL or CSV): save, transfer, restore and reload-test timings."""
        for rel in self.files("bench"):
            with self.contained(rel, bench.FORMAT):
                self.readings.append(bench.read(self.found[rel][0], rel))
            self.done(rel)

    def manifests(self) -> None:
        """Deliverables manifests: what the campaign produced; their files are checked at build time."""
        for rel in self.files("manifest"):
            with self.contained(rel, manifest.FORMAT):
                info, entries = manifest.read(self.found[rel][0], rel)
                self.readings.append(Reading([info], [], list(entries)))
                self.entries += entries
            self.done(rel)

    def deliverable_files(self) -> None:
        """Files a manifest names that no format claimed: deliverables and expected ids, not unknown files."""
        named = [(p, manifest.DELIVERABLE) for e in self.entries for p in e.paths]
        named += [(e.expected_ids, manifest.EXPECTED_IDS) for e in self.entries if e.expected_ids]
        for path, kind in named:
            if path.startswith("/") or ".." in PurePosixPath(path).parts:
                continue  # refused at build time; nothing outside LOGS is listed
            prefix = PurePosixPath(path).as_posix()
            for other in sorted(self.found):
                if other not in self.claimed and (other == prefix or other.startswith(prefix + "/")):
                    pointer = lfs_pointer(self.found[other][1])
                    info = InputFile(other, LFS_FORMAT if pointer else kind, records=0 if pointer else 1)
                    if pointer:
                        info.problem(None, pointer)
                    self.readings.append(Reading([info]))
                    self.done(other)

    def trainer_folders(self) -> None:
        for folder, key in sorted(self.hf_dirs.items()):
            with self.contained(f"{folder}/{hf.STATE}" if folder else hf.STATE, hf.FORMAT):
                self.readings.append(self._read_hf(folder, key))

    def lightning_folders(self) -> None:
        """Each version folder on its own: which version continues which is decided from evidence, later."""
        for folder, key in sorted(self.pl_dirs.items()):
            with self.contained(self.sources[key].evidence.path or folder, lightning.FORMAT):
                reading, limit = self._read_lightning(folder, key)
                self.readings.append(reading)
                facts = next(e for e in reading.events if isinstance(e, RunFacts))
                self.pl_limits[key] = (facts, limit)

    def mlflow(self) -> None:
        for rel in self.files("sqlite"):
            wal = rel + mlflow.WAL_SUFFIX
            with self.contained(rel, mlflow.SQLITE_FORMAT):
                logged = wal in self.found and len(self.found[wal][1]) > 0  # its first bytes: not empty
                read = mlflow.read_sqlite(self.found[rel][0], rel, self.found[wal][0] if logged else None)
                if read is not None:
                    reading, runs = read
                    self.readings.append(reading)
                    self._mlflow_sources(runs, mlflow.SQLITE_FORMAT)
                    self.done(rel)
                    self._store_parts(rel, logged)
        readable = sorted(self.found)
        for rel in self.files("mlflow-run-meta"):
            with self.contained(rel, mlflow.FILES_FORMAT):
                reading, run = mlflow.read_file_run(self.logs / _parents(rel)[0], self.logs, readable)
                self.readings.append(reading)
                self._mlflow_sources([run], mlflow.FILES_FORMAT)
                for info in reading.inputs:
                    self.done(info.path)
        for rel in self.files(None):
            if PurePosixPath(rel).name == "meta.yaml" and b"experiment_id:" in self.found[rel][1]:
                self.readings.append(Reading([InputFile(rel, mlflow.FILES_FORMAT, records=1)]))  # an experiment's
                self.done(rel)

    def _store_parts(self, rel: str, logged: bool) -> None:
        """The -wal and -shm files beside an MLflow store: listed as parts of it, never as unknown files."""
        for part, note in mlflow.store_parts(rel, logged):
            if part in self.found and part not in self.claimed:
                info = InputFile(part, mlflow.SQLITE_FORMAT, records=0)
                info.notes.append(note)
                self.readings.append(Reading([info]))
                self.done(part)

    def _mlflow_sources(self, runs: list[MlflowRun], fmt: str) -> None:
        for run in runs:
            self.sources[run.key] = Source(run.key, fmt, run.name or run.uuid, run.evidence, params=run.params,
                                           uuid=run.uuid, parent=run.parent)

    def tensorboard(self) -> None:
        """In a run's folder a file belongs to that run; elsewhere its folder is a source of its own."""
        files: dict[str, list[tuple[int, str]]] = {}
        for rel in self.files("tensorboard"):
            with self.contained(rel, tensorboard.FORMAT):
                self._tensorboard_file(rel, files)
            self.done(rel)
        for key, starts in files.items():
            self._restarts(key, sorted(starts))

    def _tensorboard_file(self, rel: str, files: dict[str, list[tuple[int, str]]]) -> None:
        """One TensorBoard file: in a run's folder it belongs to that run; elsewhere its folder is a source."""
        owner = self.owner(rel)
        folder = _parents(rel)[0]
        key = owner or f"{tensorboard.FORMAT}:{folder or '.'}"
        if owner is None and key not in self.sources:
            self.sources[key] = Source(key, tensorboard.FORMAT, _name(folder) or "logs", Evidence(rel), folder=folder)
        texts: dict[str, str] = {}
        info, frame = tensorboard.read(self.found[rel][0], rel, key, texts)
        args = self._trainer_arguments(key, texts) if owner is None else None
        if len(frame):
            files.setdefault(key, []).append((int(frame["step"].min()), rel))
        facts = RunFacts(run=key, format=tensorboard.FORMAT, evidence=Evidence(rel))
        if info.cut_off and owner is None:
            facts.status, facts.reason = "interrupted", f"{rel} ends mid-record: its writer was stopped"
        elif args is not None:
            self._trainer_summary(rel, frame, args, facts)
        if owner in self.pl_limits and len(frame):
            self._lightning_reached(owner, int(frame["step"].max()) + 1, rel)
        self.readings.append(Reading([info], [frame], [facts]))

    def _trainer_arguments(self, key: str, texts: dict[str, str]) -> dict | None:
        """The Trainer's TensorBoard writer logs its TrainingArguments as the text summary "args": their
        output_dir names the Trainer folder the events belong to (a logging_dir outside it, say).

        When that folder holds the events (output_dir/runs/<date_host>, the Trainer's default) and no
        trainer_state.json made it a run folder, the events' run is that folder's: it takes its name."""
        raw = texts.get("args/text_summary") or texts.get("args")
        if raw is None:
            return None
        try:
            args = load_json(raw)
        except ValueError:
            return None
        if not isinstance(args, dict):
            return None
        source = self.sources[key]
        if source.params is None:
            source.params = {k: str(v) for k, v in args.items() if k in ("output_dir", "logging_dir", "run_name")}
        output_dir = args.get("output_dir")
        if isinstance(output_dir, str) and source.folder:
            above = [f for f in _parents(source.folder + "/x")[1:] if f and path_ends_with(output_dir, f)]
            if above:
                source.folder, source.name = above[0], _name(above[0])
        return args

    def _trainer_summary(self, rel: str, frame: pd.DataFrame, args: dict, facts: RunFacts) -> None:
        """The Trainer logs its final training summary (train/train_runtime) once, when train() returns:
        at max_steps it completed; short of max_steps the training loop stopped itself (a callback
        such as EarlyStoppingCallback told it to)."""
        column = next((c for c in ("train/train_runtime", "train_runtime") if c in frame.columns), None)
        max_steps = args.get("max_steps")
        max_steps = max_steps if isinstance(max_steps, int) and not isinstance(max_steps, bool) and max_steps > 0 else None
        facts.max_steps = max_steps
        if column is None or not frame[column].notna().any():
            return
        row = frame.loc[frame[column].notna()].iloc[-1]
        step = int(row["step"])
        facts.evidence, facts.last_step = Evidence(rel, int(row["line"]) if pd.notna(row["line"]) else None), step
        if max_steps is None or step >= max_steps:
            of = f", max_steps {max_steps}" if max_steps else ""
            facts.status, facts.reason = "completed", f"the Trainer's final training summary ({column}) is at step {step}{of}"
        else:
            facts.status = STOPPED_BY_LOOP
            facts.reason = (f"the Trainer's final training summary ({column}) is at step {step} of max_steps {max_steps}: "
                            "the training loop stopped itself before max_steps (a callback such as "
                            "EarlyStoppingCallback told it to)")

    def _restarts(self, key: str, starts: list[tuple[int, str]]) -> None:
        """A later file of another writer process, starting at a later step, is a restart; one of the
        same process (a writer reopened for a final evaluation, say) is the same run going on."""
        first_step, first = starts[0]
        for step, rel in starts[1:]:
            same = tensorboard.writer_process(rel)
            if same is not None and same == tensorboard.writer_process(first):
                text = (f"{PurePosixPath(rel).name} was written by the same process (host {same[0]}, pid {same[1]}) "
                        f"as {PurePosixPath(first).name}: one run going on, not a restart")
                self.notes.append((key, Decision("merged", "same-process", text, (Evidence(first), Evidence(rel)))))
            elif step > first_step:
                message = f"a new TensorBoard file of another process starts at step {step}: the run was restarted and resumed"
                self.readings.append(Reading(events=[LogMessage(key, "resumed", message, Evidence(rel))]))

    def _lightning_reached(self, key: str, reached: int, rel: str) -> None:
        """TensorBoardLogger (Lightning's default) writes no metrics.csv: its events say how far the run got."""
        facts, limit = self.pl_limits[key]
        facts.last_step = max(facts.last_step or 0, reached)
        if limit is not None and reached >= limit and facts.status is None:
            facts.status, facts.reason = "completed", f"reached max_steps {limit} (hyperparameters; steps logged in {rel})"

    def text_logs(self) -> None:
        """In a run's folder (or the folder of one native run) a log belongs to that run; any other log is
        linked to a run, or left apart, by identity."""
        for rel in self.files("text"):
            with self.contained(rel, textlog.FORMAT):
                info, messages, sessions = textlog.read(self.found[rel][0], rel)
                folder = _parents(rel)[0]
                owner = self.owner(rel)
                natives = self.native_runs.get(folder, set())
                if owner is None and len(natives) == 1:
                    owner = next(iter(natives))
                for message in messages:
                    message.run = owner
                stem = PurePosixPath(rel).stem
                name = stem if stem.lower() not in GENERIC_STEMS else (_name(folder) or None)
                self.texts.append(TextLog(rel, folder, sessions, messages, owner, name))
                self.readings.append(Reading([info], [], list(messages)))
            self.done(rel)

    def pointers(self) -> None:
        """Git LFS pointers left where a large file should be: named as such, never read as the file."""
        for rel in self.files("lfs"):
            info = InputFile(rel, LFS_FORMAT)
            info.problem(None, lfs_pointer(self.found[rel][1]) or "a Git LFS pointer")
            self.readings.append(Reading([info]))
            self.done(rel)

    def the_rest(self) -> None:
        """Files of a run folder (weights, optimizer, tokenizer) are its output; others are not recognised."""
        for rel in sorted(set(self.kinds) - self.claimed):
            run_folder = next((f for f in _parents(rel) if f in self.run_dirs), None)
            fmt = None if run_folder is None else hf.FORMAT if run_folder in self.hf_dirs else lightning.FORMAT
            self.readings.append(Reading([InputFile(rel, fmt, records=0 if fmt is None else 1)]))
            self.done(rel)

    def _pointer(self, rel: str) -> str | None:
        return lfs_pointer(self.found[rel][1]) if self.kinds.get(rel) == "lfs" else None

    def _read_hf(self, folder: str, run: str) -> Reading:
        reading = Reading()
        found, kinds = self.found, self.kinds
        prefix = f"{folder}/" if folder else ""
        members = {rel for rel in found if rel.startswith(prefix)}
        checkpoints: dict[str, set[str]] = {}
        for rel in members:
            parts = rel[len(prefix):].split("/")
            if len(parts) == 2 and hf.CHECKPOINT_DIR.match(parts[0]):
                checkpoints.setdefault(parts[0], set()).add(parts[1])
        pointers = {rel for rel in members if kinds.get(rel) == "lfs"}
        found_checkpoints = []
        for name in sorted(checkpoints, key=lambda n: int(hf.CHECKPOINT_DIR.match(n).group(1))):
            held = {n for n in checkpoints[name] if f"{prefix}{name}/{n}" in pointers}
            found_checkpoints.append(hf.checkpoint(self.logs / prefix / name, prefix + name, run, checkpoints[name], held))
        reading.events += found_checkpoints
        by_path = {c.path: c for c in found_checkpoints}

        final = prefix + hf.STATE if prefix + hf.STATE in found and prefix + hf.STATE not in pointers else None
        latest = next((f"{c.path}/{hf.STATE}" for c in reversed(found_checkpoints)
                       if f"{c.path}/{hf.STATE}" in found and f"{c.path}/{hf.STATE}" not in pointers), None)
        main_state = final or latest
        final_step: int | None = None
        config: dict = {}
        for rel in sorted(members):
            kind = kinds.get(rel)
            if kind == "lfs":
                info = InputFile(rel, LFS_FORMAT)
                info.problem(None, self._pointer(rel) or "a Git LFS pointer")
                reading.inputs.append(info)
                self.done(rel)
            elif kind == "hf-state":
                info, rows, events, parsed = hf.read_state(found[rel][0], rel, run)
                reading.inputs.append(info)
                holder = by_path.get(_parents(rel)[0])
                if holder is not None:
                    holder.history = parsed.get("history")
                if rel == main_state:
                    reading.frames.append(rows.frame())
                    reading.events += events
                    facts, stop = hf.state_facts(run, rel, parsed, {PurePosixPath(c.path).name: c.path for c in found_checkpoints})
                    if final is None:
                        facts.reason = f"no trainer_state.json in the output folder; {facts.reason} (from {rel})"
                    else:
                        final_step = facts.last_step
                    reading.events.append(facts)
                    if stop is not None:
                        reading.events.append(stop)
                self.done(rel)
            elif kind == "hf-adapter" and rel == prefix + "adapter_config.json":
                info, adapter = hf.read_adapter(found[rel][0], rel)
                reading.inputs.append(info)
                config.update(adapter)
                self.done(rel)
        top = {rel[len(prefix):] for rel in members if "/" not in rel[len(prefix):]}
        saved = hf.final_model(folder, run, top, final_step, {n for n in top if prefix + n in pointers})
        if saved is not None:
            reading.events.append(saved)
        if main_state is None:
            reading.events.append(RunFacts(run=run, format=hf.FORMAT, evidence=self._shown_by(folder, ()),
                                           reason="checkpoint folders but no readable trainer_state.json anywhere"))
        if config:
            reading.events.append(RunFacts(run=run, format=hf.FORMAT, evidence=Evidence(prefix + "adapter_config.json"),
                                           config=config))
        return reading

    def _read_lightning(self, folder: str, run: str) -> tuple[Reading, int | None]:
        """A Lightning version folder, and the max_steps its hyperparameters name (None if none)."""
        reading = Reading()
        found, kinds = self.found, self.kinds
        prefix = f"{folder}/" if folder else ""
        hparams: dict = {}
        last_metric_step = None
        checkpoint_steps = []
        for rel in sorted(r for r in found if r.startswith(prefix)):
            kind = kinds.get(rel)
            if kind == "lightning-metrics":
                info, rows, evals = lightning.read_metrics(found[rel][0], rel, run)
                reading.inputs.append(info)
                frame = rows.frame()
                reading.frames.append(frame)
                if len(frame):
                    last_metric_step = int(frame["step"].max())
                reading.events += [Evaluation(run, step, None, ev, metrics) for step, ev, metrics in evals]
                self.done(rel)
            elif kind == "hparams" and rel == prefix + "hparams.yaml":
                info, hparams = lightning.read_hparams(found[rel][0], rel)
                reading.inputs.append(info)
                self.done(rel)
            elif kind == "ckpt":
                info, check, check_hparams = lightning.read_checkpoint(found[rel][0], rel, run)
                reading.inputs.append(info)
                if check is not None:
                    reading.events.append(check)
                    if check.step is not None:
                        checkpoint_steps.append((check.step, rel, check_hparams))
                self.done(rel)
            elif kind == "lfs" and rel.endswith(".ckpt"):
                pointer = self._pointer(rel) or "a Git LFS pointer"
                info = InputFile(rel, LFS_FORMAT)
                info.problem(None, pointer)
                reading.inputs.append(info)
                reading.events.append(lightning.pointer_checkpoint(rel, run, pointer))
                self.done(rel)
        limit = lightning.max_steps(hparams) or next((lightning.max_steps(h) for _s, _r, h in checkpoint_steps
                                                      if lightning.max_steps(h)), None)
        shown_by = next((prefix + name for name in ("metrics.csv", "hparams.yaml") if prefix + name in found), folder)
        logged = any(k in ("lightning-metrics", "hparams", "tensorboard") for r, k in kinds.items() if r.startswith(prefix))
        if checkpoint_steps and not logged:  # checkpoints alone: a ModelCheckpoint dirpath of its own
            self.sources[run].checkpoint_configs = {rel: h for _s, rel, h in checkpoint_steps if h}
            configs = [h for _s, _r, h in checkpoint_steps if h]
            if configs and all(h == configs[0] for h in configs):
                hparams = configs[0]
        facts = RunFacts(run=run, format=lightning.FORMAT, evidence=Evidence(shown_by or "."),
                         config={"hparams": hparams} if hparams else None, max_steps=limit)
        reached = max([s for s, _r, _h in checkpoint_steps] + ([last_metric_step + 1] if last_metric_step is not None else []),
                      default=None)
        if limit is not None and reached is not None and reached >= limit:
            facts.status = "completed"
            facts.reason = f"reached max_steps {limit} (hyperparameters)"
            best = max(checkpoint_steps, default=None)
            if best is not None and best[0] >= limit:
                facts.evidence = Evidence(best[1])
        facts.last_step = reached
        reading.events.append(facts)
        return reading, limit
