"""Recognise every file under LOGS by content and folder layout, and give each one its run.

Run ids come from the logs: the run ids inside native events, a Trainer output folder's name,
`<name>/version_N` for a Lightning logger folder, an MLflow run's name, the folder of a
TensorBoard file. A file inside a run's folder (TensorBoard events in a Trainer folder, a
train.log beside them) belongs to that run, so one run described by several formats is one run.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path, PurePosixPath

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
from reportgen.model import (
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


def _kind(rel: str, head: bytes) -> str | None:
    name = PurePosixPath(rel).name
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


def read_all(logs: Path, found: dict[str, tuple[Path, bytes]], progress: Callable[[str], None] | None) -> list[Reading]:
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
    scan.the_rest()
    return scan.readings


class _Scan:
    """One pass over LOGS: the run folders, then each format's files, then whatever is left."""

    def __init__(self, logs: Path, found: dict[str, tuple[Path, bytes]], progress: Callable[[str], None] | None):
        self.logs, self.found, self.progress = logs, found, progress
        self.kinds = {rel: _kind(rel, head) for rel, (_path, head) in found.items()}
        self.readings: list[Reading] = []
        self.claimed: set[str] = set()
        self.hf_dirs, self.pl_dirs = self._run_folders()
        self.run_dirs = {**self.pl_dirs, **self.hf_dirs}  # folder -> run id
        self.native_runs: dict[str, set[str]] = {}  # folder -> runs named in its native event logs
        self.entries: list[ManifestEntry] = []  # deliverables manifests' entries
        self.pl_limits: dict[str, tuple[RunFacts, int | None]] = {}  # Lightning run -> its facts and max_steps

    def done(self, rel: str) -> None:
        self.claimed.add(rel)
        if self.progress:
            self.progress(rel)

    def files(self, kind: str) -> list[str]:
        return sorted(rel for rel, k in self.kinds.items() if k == kind and rel not in self.claimed)

    def owner(self, rel: str) -> str | None:
        """The run whose folder holds rel."""
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
            if kind not in ("lightning-metrics", "hparams", "ckpt"):
                continue
            folder = _parents(rel)[0]
            if kind == "ckpt" and _name(folder) == "checkpoints":
                folder = _parent(folder)
            if folder in hf_dirs:
                continue
            if kind == "lightning-metrics" and PurePosixPath(rel).name != "metrics.csv" and not VERSION_DIR.match(_name(folder)):
                continue
            pl_dirs.setdefault(folder, "")
        _name_runs(hf_dirs, lambda f: _name(f) or "logs")
        _name_runs(pl_dirs, lambda f: f"{_name(_parent(f)) or 'logs'}/{_name(f)}" if VERSION_DIR.match(_name(f))
                   else (_name(f) or "logs"))
        return hf_dirs, pl_dirs

    def native(self) -> None:
        """Native event logs name their runs inside; their folders name the runs for text logs."""
        for rel in self.files("native"):
            log = native.read(self.found[rel][0], rel)
            self.readings.append(Reading([log.input], [log.metrics], log.events))
            runs = self.native_runs.setdefault(_parents(rel)[0], set())
            runs.update(e.run for e in log.events if getattr(e, "run", None))
            runs.update(str(r) for r in log.metrics["run"].unique())
            self.done(rel)

    def benchmarks(self) -> None:
        """Checkpoint benchmark records (JSONL or CSV): save, transfer, restore and reload-test timings."""
        for rel in self.files("bench"):
            self.readings.append(bench.read(self.found[rel][0], rel))
            self.done(rel)

    def manifests(self) -> None:
        """Deliverables manifests: what the campaign produced; their files are checked at build time."""
        for rel in self.files("manifest"):
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
                    self.readings.append(Reading([InputFile(other, kind, records=1)]))
                    self.done(other)

    def trainer_folders(self) -> None:
        for folder, run in sorted(self.hf_dirs.items()):
            self.readings.append(_read_hf(self.logs, folder, run, self.found, self.kinds, self.done))

    def lightning_folders(self) -> None:
        """Each version folder; a later version that starts past step 0 resumes the one before it."""
        previous: dict[str, tuple[str, RunFacts]] = {}
        for folder, run in sorted(self.pl_dirs.items(), key=lambda item: _version_order(item[0])):
            reading, limit = _read_lightning(self.logs, folder, run, self.found, self.kinds, self.done)
            self.readings.append(reading)
            facts = next(e for e in reading.events if isinstance(e, RunFacts))
            self.pl_limits[run] = (facts, limit)
            first = min((int(f["step"].min()) for f in reading.frames if len(f)), default=None)
            parent = _parent(folder)
            if parent in previous and VERSION_DIR.match(_name(folder)) and first is not None and first > 0:
                before_run, before = previous[parent]
                facts.resumes = before_run
                if before.status is None:
                    before.status, before.reason = "interrupted", f"resumed by {run}, which starts at step {first}"
            previous[parent] = (run, facts)

    def mlflow(self) -> None:
        taken: dict[str, dict] = {}  # MLflow run names and their parameters: two runs of one name stay apart
        for rel in self.files("sqlite"):
            reading = mlflow.read_sqlite(self.found[rel][0], rel, taken)
            if reading is not None:
                self.readings.append(reading)
                self.done(rel)
        for rel in self.files("mlflow-run-meta"):
            reading = mlflow.read_file_run(self.logs / _parents(rel)[0], self.logs, taken)
            self.readings.append(reading)
            for info in reading.inputs:
                self.done(info.path)
        for rel in self.files(None):
            if PurePosixPath(rel).name == "meta.yaml" and b"experiment_id:" in self.found[rel][1]:
                self.readings.append(Reading([InputFile(rel, mlflow.FILES_FORMAT, records=1)]))  # an experiment's
                self.done(rel)

    def tensorboard(self) -> None:
        """In a run's folder a file belongs to that run; elsewhere its folder is the run."""
        first_steps: dict[str, list[tuple[int, str]]] = {}
        for rel in self.files("tensorboard"):
            owner = self.owner(rel)
            run = owner or _name(_parents(rel)[0]) or "logs"
            info, frame = tensorboard.read(self.found[rel][0], rel, run)
            if len(frame):
                first_steps.setdefault(run, []).append((int(frame["step"].min()), rel))
            facts = RunFacts(run=run, format=tensorboard.FORMAT, evidence=Evidence(rel))
            if info.cut_off and owner is None:
                facts.status, facts.reason = "interrupted", f"{rel} ends mid-record: its writer was stopped"
            if owner in self.pl_limits and len(frame):
                self._lightning_reached(owner, int(frame["step"].max()) + 1, rel)
            self.readings.append(Reading([info], [frame], [facts]))
            self.done(rel)
        for run, starts in first_steps.items():
            starts.sort()
            for first, rel in starts[1:]:
                if first > starts[0][0]:
                    message = f"a new TensorBoard file starts at step {first}: the run was restarted and resumed"
                    self.readings.append(Reading(events=[LogMessage(run, "resumed", message, Evidence(rel))]))

    def _lightning_reached(self, run: str, reached: int, rel: str) -> None:
        """TensorBoardLogger (Lightning's default) writes no metrics.csv: its events say how far the run got."""
        facts, limit = self.pl_limits[run]
        facts.last_step = max(facts.last_step or 0, reached)
        if limit is not None and reached >= limit and facts.status is None:
            facts.status, facts.reason = "completed", f"reached max_steps {limit} (hyperparameters; steps logged in {rel})"

    def text_logs(self) -> None:
        """In a run's folder a log belongs to that run; beside several runs, by session; else by name."""
        for rel in self.files("text"):
            info, messages = textlog.read(self.found[rel][0], rel)
            runs = _text_runs(rel, self.run_dirs, self.native_runs)
            by_session = len(runs) > 1 and bool(messages) and max(m.session for m in messages) == len(runs) - 1
            if len(runs) == 1 or by_session:
                for message in messages:
                    message.run = runs[0] if len(runs) == 1 else runs[message.session]
                owners = set(runs)
            elif runs:
                owners = set()
                if messages:
                    info.problem(None, f"beside several runs ({', '.join(runs)}); its messages are not attributed to one run")
            else:  # a log of its own: named by its file (oom-1.log), or by its folder for train.log and the like
                stem = PurePosixPath(rel).stem
                named = stem if stem.lower() not in GENERIC_STEMS else _name(_parents(rel)[0])
                for message in messages:
                    message.run = named or None
                owners = {named} if named and messages else set()
            facts = [RunFacts(run=run, format=textlog.FORMAT, evidence=Evidence(rel)) for run in sorted(owners)]
            self.readings.append(Reading([info], [], [*messages, *facts]))
            self.done(rel)

    def the_rest(self) -> None:
        """Files of a run folder (weights, optimizer, tokenizer) are its output; others are not recognised."""
        for rel in sorted(set(self.kinds) - self.claimed):
            run_folder = next((f for f in _parents(rel) if f in self.run_dirs), None)
            fmt = None if run_folder is None else hf.FORMAT if run_folder in self.hf_dirs else lightning.FORMAT
            self.readings.append(Reading([InputFile(rel, fmt, records=0 if fmt is None else 1)]))
            self.done(rel)


def _name_runs(dirs: dict[str, str], name_of: Callable[[str], str]) -> None:
    """Name each run folder; two folders with the same name keep their paths to stay apart."""
    names: dict[str, list[str]] = {}
    for folder in dirs:
        names.setdefault(name_of(folder), []).append(folder)
    for name, folders in names.items():
        for folder in folders:
            dirs[folder] = name if len(folders) == 1 else (folder or name)


def _text_runs(rel: str, run_dirs: dict[str, str], native_runs: dict[str, set[str]]) -> list[str]:
    """The runs a text log is about: its folder's run, or the runs in the folders below its own."""
    for folder in _parents(rel):
        if folder in run_dirs:
            return [run_dirs[folder]]
        if len(native_runs.get(folder, ())) == 1:
            return sorted(native_runs[folder])
        if folder:
            below = [r for f, r in sorted(run_dirs.items(), key=lambda item: _version_order(item[0]))
                     if f.startswith(folder + "/")]
            if below:
                return below
    return []


def _version_order(folder: str) -> tuple:
    match = VERSION_DIR.match(_name(folder))
    return (_parent(folder), int(match.group(1)) if match else -1, folder)


def _read_hf(logs: Path, folder: str, run: str, found, kinds, done) -> Reading:
    reading = Reading()
    prefix = f"{folder}/" if folder else ""
    members = {rel for rel in found if rel.startswith(prefix)}
    checkpoints = {}
    for rel in members:
        parts = rel[len(prefix):].split("/")
        if len(parts) == 2 and hf.CHECKPOINT_DIR.match(parts[0]):
            checkpoints.setdefault(parts[0], set()).add(parts[1])
    found_checkpoints = []
    for name in sorted(checkpoints, key=lambda n: int(hf.CHECKPOINT_DIR.match(n).group(1))):
        found_checkpoints.append(hf.checkpoint(logs / prefix / name, prefix + name, run, checkpoints[name]))
    reading.events += found_checkpoints

    final = prefix + hf.STATE if prefix + hf.STATE in found else None
    latest = next((f"{c.path}/{hf.STATE}" for c in reversed(found_checkpoints) if hf.STATE in set(c.parts)), None)
    main_state = final or latest
    final_step: int | None = None
    config: dict = {}
    for rel in sorted(members):
        kind = kinds.get(rel)
        if kind == "hf-state":
            info, rows, events, parsed = hf.read_state(found[rel][0], rel, run)
            reading.inputs.append(info)
            if rel == main_state:
                reading.frames.append(rows.frame())
                reading.events += events
                facts = hf.state_facts(run, rel, parsed, {PurePosixPath(c.path).name: c.path for c in found_checkpoints})
                if final is None:
                    facts.reason = f"no trainer_state.json in the output folder; {facts.reason} (from {rel})"
                else:
                    final_step = facts.last_step
                reading.events.append(facts)
            done(rel)
        elif kind == "hf-adapter" and rel == prefix + "adapter_config.json":
            info, adapter = hf.read_adapter(found[rel][0], rel)
            reading.inputs.append(info)
            config.update(adapter)
            done(rel)
    top = {rel[len(prefix):] for rel in members if "/" not in rel[len(prefix):]}
    saved = hf.final_model(folder, run, top, final_step)
    if saved is not None:
        reading.events.append(saved)
    if main_state is None:
        reading.events.append(RunFacts(run=run, format=hf.FORMAT, evidence=Evidence(folder), status="interrupted",
                                       reason="checkpoint folders but no trainer_state.json anywhere"))
    if config:
        reading.events.append(RunFacts(run=run, format=hf.FORMAT, evidence=Evidence(prefix + "adapter_config.json"),
                                       config=config))
    return reading


def _read_lightning(logs: Path, folder: str, run: str, found, kinds, done) -> tuple[Reading, int | None]:
    """A Lightning version folder, and the max_steps its hyperparameters name (None if none)."""
    reading = Reading()
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
            done(rel)
        elif kind == "hparams" and rel == prefix + "hparams.yaml":
            info, hparams = lightning.read_hparams(found[rel][0], rel)
            reading.inputs.append(info)
            done(rel)
        elif kind == "ckpt":
            info, check, check_hparams = lightning.read_checkpoint(found[rel][0], rel, run)
            reading.inputs.append(info)
            if check is not None:
                reading.events.append(check)
                if check.step is not None:
                    checkpoint_steps.append((check.step, rel, check_hparams))
            done(rel)
    limit = lightning.max_steps(hparams) or next((lightning.max_steps(h) for _s, _r, h in checkpoint_steps if lightning.max_steps(h)), None)
    shown_by = next((prefix + name for name in ("metrics.csv", "hparams.yaml") if prefix + name in found), folder)
    facts = RunFacts(run=run, format=lightning.FORMAT, evidence=Evidence(shown_by), config={"hparams": hparams} if hparams else None)
    reached = max([s for s, _r, _h in checkpoint_steps] + ([last_metric_step + 1] if last_metric_step is not None else []), default=None)
    if limit is not None and reached is not None and reached >= limit:
        facts.status = "completed"
        facts.reason = f"reached max_steps {limit} (hyperparameters)"
        best = max(checkpoint_steps, default=None)
        if best is not None and best[0] >= limit:
            facts.evidence = Evidence(best[1])
    facts.last_step = reached
    reading.events.append(facts)
    return reading, limit
