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

from reportgen.ingest import hf, lightning, mlflow, native, tensorboard, textlog
from reportgen.ingest.common import Reading
from reportgen.model import Evaluation, Evidence, InputFile, LogMessage, RunFacts

VERSION_DIR = re.compile(r"^version_(\d+)$")
# Text-log names too generic to name a run on their own.
GENERIC_STEMS = {"train", "training", "stdout", "stderr", "log", "logs", "output", "out", "err", "nohup", "console", "run"}


def _kind(rel: str, head: bytes) -> str | None:
    name = PurePosixPath(rel).name
    if native.sniff(head):
        return "native"
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


def read_all(logs: Path, found: dict[str, tuple[Path, bytes]], progress: Callable[[str], None] | None) -> list[Reading]:
    kinds = {rel: _kind(rel, head) for rel, (_path, head) in found.items()}
    readings: list[Reading] = []
    claimed: set[str] = set()

    def done(rel: str) -> None:
        claimed.add(rel)
        if progress:
            progress(rel)

    # Run folders, by the files that make them.
    hf_dirs: dict[str, str] = {}  # folder -> run id
    for rel, kind in kinds.items():
        if kind == "hf-state":
            folder = _parents(rel)[0]
            run_dir = _parents(folder + "/x")[1] if hf.CHECKPOINT_DIR.match(_name(folder)) else folder
            hf_dirs.setdefault(run_dir, "")
    pl_dirs: dict[str, str] = {}
    for rel, kind in kinds.items():
        if kind in ("lightning-metrics", "hparams", "ckpt"):
            folder = _parents(rel)[0]
            if kind == "ckpt" and _name(folder) == "checkpoints":
                folder = _parents(folder + "/x")[1]
            if folder in hf_dirs:
                continue
            if kind == "lightning-metrics" and PurePosixPath(rel).name != "metrics.csv" and not VERSION_DIR.match(_name(folder)):
                continue
            pl_dirs.setdefault(folder, "")
    ml_dirs = [_parents(rel)[0] for rel, kind in kinds.items() if kind == "mlflow-run-meta"]
    _name_runs(hf_dirs, lambda f: _name(f) or "logs")
    _name_runs(pl_dirs, lambda f: f"{_name(_parents(f + '/x')[1]) or 'logs'}/{_name(f)}" if VERSION_DIR.match(_name(f)) else (_name(f) or "logs"))
    run_dirs = {**pl_dirs, **hf_dirs}

    def owner(rel: str) -> str | None:
        return next((run_dirs[f] for f in _parents(rel) if f in run_dirs), None)

    # Native event logs: their runs are named inside; their folders name the runs for text logs.
    native_runs: dict[str, set[str]] = {}
    for rel, kind in kinds.items():
        if kind == "native":
            log = native.read(found[rel][0], rel)
            readings.append(Reading([log.input], [log.metrics], log.events))
            runs = native_runs.setdefault(_parents(rel)[0], set())
            runs.update(e.run for e in log.events if getattr(e, "run", None))
            runs.update(str(r) for r in log.metrics["run"].unique())
            done(rel)

    for folder, run in sorted(hf_dirs.items()):
        readings.append(_read_hf(logs, folder, run, found, kinds, done))
    previous: dict[str, tuple[str, RunFacts]] = {}
    for folder, run in sorted(pl_dirs.items(), key=lambda item: _version_order(item[0])):
        reading = _read_lightning(logs, folder, run, found, kinds, done)
        readings.append(reading)
        facts = next(e for e in reading.events if isinstance(e, RunFacts))
        first = min((int(f["step"].min()) for f in reading.frames if len(f)), default=None)
        parent = _parents(folder + "/x")[1]
        if parent in previous and VERSION_DIR.match(_name(folder)) and first is not None and first > 0:
            # A later version that starts past step 0 was resumed from the one before it.
            before_run, before = previous[parent]
            facts.resumes = before_run
            if before.status is None:
                before.status, before.reason = "interrupted", f"resumed by {run}, which starts at step {first}"
        previous[parent] = (run, facts)

    taken: set[str] = set()  # MLflow run names, so two MLflow runs of one name stay apart
    for rel, kind in sorted(kinds.items()):
        if kind == "sqlite" and rel not in claimed:
            reading = mlflow.read_sqlite(found[rel][0], rel, taken)
            if reading is not None:
                readings.append(reading)
                done(rel)
    for folder in sorted(ml_dirs):
        reading = mlflow.read_file_run(logs / folder, logs, taken)
        readings.append(reading)
        for info in reading.inputs:
            done(info.path)
    for rel, kind in kinds.items():
        if kind is None and PurePosixPath(rel).name == "meta.yaml" and b"experiment_id:" in found[rel][1]:
            readings.append(Reading([InputFile(rel, mlflow.FILES_FORMAT, records=1)]))  # an experiment's meta.yaml
            done(rel)

    # TensorBoard files: in a run's folder they belong to it, elsewhere their folder is the run.
    tb_by_run: dict[str, list[tuple[str, int | None]]] = {}
    for rel, kind in sorted(kinds.items()):
        if kind != "tensorboard" or rel in claimed:
            continue
        run = owner(rel) or _name(_parents(rel)[0]) or "logs"
        info, frame = tensorboard.read(found[rel][0], rel, run)
        first = int(frame["step"].min()) if len(frame) else None
        tb_by_run.setdefault(run, []).append((rel, first))
        events: list = [RunFacts(run=run, format=tensorboard.FORMAT, evidence=Evidence(rel))]
        cut = [p for p in info.problems if "cut off" in p.message]
        if cut and owner(rel) is None:
            events[0].status, events[0].reason = "interrupted", f"{rel} ends mid-record: its writer was stopped"
        readings.append(Reading([info], [frame], events))
        done(rel)
    for run, files in tb_by_run.items():
        starts = sorted((first, rel) for rel, first in files if first is not None)
        for first, rel in starts[1:]:
            if first > starts[0][0]:
                readings.append(Reading(events=[LogMessage(run, "resumed", f"a new TensorBoard file starts at step {first}: "
                                                           "the run was restarted and resumed", Evidence(rel))]))

    # Text logs: in a run's folder they belong to it; beside several runs, by session.
    for rel, kind in sorted(kinds.items()):
        if kind != "text" or rel in claimed:
            continue
        info, messages = textlog.read(found[rel][0], rel)
        runs = _text_runs(rel, run_dirs, native_runs)
        by_session = len(runs) > 1 and bool(messages) and max(m.session for m in messages) == len(runs) - 1
        for message in messages:
            if len(runs) == 1:
                message.run = runs[0]
            elif by_session:
                message.run = runs[message.session]
        if not runs:
            stem = PurePosixPath(rel).stem
            folder = _name(_parents(rel)[0])
            named = stem if stem.lower() not in GENERIC_STEMS else folder
            if named:
                for message in messages:
                    message.run = named
        elif len(runs) > 1 and any(m.run is None for m in messages):
            info.problem(None, f"beside several runs ({', '.join(runs)}); its messages are not attributed to one run")
        owners = sorted({m.run for m in messages if m.run} | (set(runs) if len(runs) == 1 or by_session else set()))
        facts = [RunFacts(run=run, format=textlog.FORMAT, evidence=Evidence(rel)) for run in owners]
        readings.append(Reading([info], [], [*messages, *facts]))
        done(rel)

    for rel, kind in sorted(kinds.items()):
        if rel in claimed:
            continue
        run_folder = next((f for f in _parents(rel) if f in run_dirs), None)
        if run_folder is not None:
            # Weights, optimizer and tokenizer files of a run folder: part of that run's output.
            fmt = hf.FORMAT if run_folder in hf_dirs else lightning.FORMAT
            readings.append(Reading([InputFile(rel, fmt, records=1)]))
        else:
            readings.append(Reading([InputFile(rel, None)]))
        done(rel)
    return readings


def _name_runs(dirs: dict[str, str], name_of: Callable[[str], str]) -> None:
    """Name each run folder; two folders with the same name keep their paths to stay apart."""
    names: dict[str, list[str]] = {}
    for folder in dirs:
        names.setdefault(name_of(folder), []).append(folder)
    for name, folders in names.items():
        for folder in folders:
            dirs[folder] = name if len(folders) == 1 else (folder or name)


def _text_runs(rel: str, run_dirs: dict[str, str], native_runs: dict[str, set[str]]) -> list[str]:
    for folder in _parents(rel):
        if folder in run_dirs:
            return [run_dirs[folder]]
        if len(native_runs.get(folder, ())) == 1:
            return sorted(native_runs[folder])
        below = sorted(((f, r) for f, r in run_dirs.items() if f.startswith(folder + "/") or (folder == "" and f)),
                       key=lambda item: _version_order(item[0]))
        if below and folder != "":
            return [r for _f, r in below]
        if folder == "":
            break
    return []


def _version_order(folder: str) -> tuple:
    match = VERSION_DIR.match(_name(folder))
    return (_parents(folder + "/x")[1], int(match.group(1)) if match else -1, folder)


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
                reading.events.append(facts)
            done(rel)
        elif kind == "hf-adapter" and rel == prefix + "adapter_config.json":
            info, adapter = hf.read_adapter(found[rel][0], rel)
            reading.inputs.append(info)
            config.update(adapter)
            done(rel)
    if main_state is None:
        reading.events.append(RunFacts(run=run, format=hf.FORMAT, evidence=Evidence(folder), status="interrupted",
                                       reason="checkpoint folders but no trainer_state.json anywhere"))
    if config:
        reading.events.append(RunFacts(run=run, format=hf.FORMAT, evidence=Evidence(prefix + "adapter_config.json"),
                                       config=config))
    return reading


def _read_lightning(logs: Path, folder: str, run: str, found, kinds, done) -> Reading:
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
    facts = RunFacts(run=run, format=lightning.FORMAT, evidence=Evidence(prefix + "metrics.csv" if prefix + "metrics.csv" in found else folder),
                     config={"hparams": hparams} if hparams else None)
    reached = max([s for s, _r, _h in checkpoint_steps] + ([last_metric_step + 1] if last_metric_step is not None else []), default=None)
    if limit is not None and reached is not None and reached >= limit:
        facts.status = "completed"
        facts.reason = f"reached max_steps {limit} (hyperparameters)"
        best = max(checkpoint_steps, default=None)
        if best is not None and best[0] >= limit:
            facts.evidence = Evidence(best[1])
    facts.last_step = reached
    reading.events.append(facts)
    return reading
