"""Hugging Face Trainer output folders: trainer_state.json, checkpoint-N/ folders, PEFT adapters.

`trainer_state.json` is JSON with bare NaN and Infinity (Python's json writes them); its
`log_history` holds train entries (loss, grad_norm, learning_rate), eval entries (eval_*) and a
final summary (train_runtime, train_loss...) written when training ends. It has no wall-clock
times: a run's times come from its other sources (TensorBoard, MLflow, text logs) or stay unknown.

With the default `logging_nan_inf_filter`, non-finite losses are left out of the logged mean, so a
logging window where every step was non-finite is logged as `"loss": 0.0` while `grad_norm` is
NaN. Such a loss is kept as NaN here, with the reason, because the run did have non-finite values.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path, PurePosixPath

import pandas as pd

from reportgen.boundary import read_file
from reportgen.bounded import TooComplex, load_json
from reportgen.ingest.common import (
    TEXT_BUDGET,
    LineIndex,
    MetricRows,
    Reading,
    decode_text,
    dig,
    duration_problem,
    is_number,
    json_entries,
    read_mapping,
)
from reportgen.ingest.scan import (
    LFS,
    Kept,
    Reader,
    Scan,
    Source,
    folder_name,
    parent,
    parents,
    path_ends_with,
)
from reportgen.model import (
    STOPPED_BY_LOOP,
    Checkpoint,
    Evaluation,
    Evidence,
    InputFile,
    LoggedStop,
    LogMessage,
    MessageKind,
    RunFacts,
)

FORMAT = "hf-trainer"
STATE = "trainer_state.json"
CHECKPOINT_DIR = re.compile(r"^checkpoint-(\d+)$")
NOT_METRICS = {"step", "epoch"}
WEIGHTS = ("adapter_model.safetensors", "adapter_model.bin", "model.safetensors", "pytorch_model.bin",
           "model.safetensors.index.json", "pytorch_model.bin.index.json")
# Files a Trainer checkpoint holds, and the part of the training state each one is.
PARTS = {
    "optimizer": ("optimizer.pt", "optimizer.bin"),
    "scheduler": ("scheduler.pt",),
    "scaler": ("scaler.pt",),
}
RNG = re.compile(r"^rng_state(_\d+)?\.pth$")


def sniff_state(head: bytes) -> bool:
    return head.lstrip().startswith(b"{") and b'"log_history"' in head and b'"global_step"' in head


def sniff_adapter(head: bytes) -> bool:
    return head.lstrip().startswith(b"{") and b'"peft_type"' in head


def read_state(path: Path, rel: str, run: str) -> tuple[InputFile, MetricRows, list, dict]:
    """One trainer_state.json: metric rows, evaluations, facts; the dict holds the top-level fields."""
    info = InputFile(path=rel, format=FORMAT)
    rows = MetricRows(rel)
    events: list = []
    read = read_file(path, TEXT_BUDGET)
    if not read.whole:
        info.problem(None, read.budget_note("log_history entries"))
    text = decode_text(read.data)
    if text is None:
        info.problem(None, "not UTF-8 text; a trainer_state.json is JSON")
        return info, rows, events, {}
    try:
        state, error = load_json(text), None
    except TooComplex as exc:
        info.problem(None, f"not read: {exc.message}")
        return info, rows, events, {}
    except json.JSONDecodeError as exc:
        state, error = None, exc
    if error is None and not isinstance(state, dict):
        info.problem(1, "a trainer_state.json holds one JSON object; this is not one")
        return info, rows, events, {}
    lines = LineIndex(text)
    start = text.find('"log_history"')
    history_at = text.find("[", start) if start >= 0 else -1
    if error is None and not isinstance(state.get("log_history", []), list):
        info.skip(lines.line(start) if start >= 0 else None, "log_history is not a list of entries; no entry is read")
        history_at = -1
    # Entry by entry, with their offsets: line numbers for evidence, and every complete entry of a cut file.
    entries = json_entries(text, history_at)[0] if history_at >= 0 else []
    if error is not None:
        # The file ends mid-value (a string that never closes ends it too): its writer was stopped, or is still
        # writing it (unless reportgen's budget stopped the read).
        info.cut_off = read.whole and (error.pos >= len(text.rstrip()) - 1
                                       or (error.msg.startswith("Unterminated string") and '"' not in text[error.pos + 1:]))
        info.skip(error.lineno, f"unreadable JSON ({error.msg})" + ("; the file is cut off there" if info.cut_off else "") + (
            f"; the {len(entries)} complete log_history entries before it are read" if history_at >= 0 else ""))
        if history_at < 0:
            return info, rows, events, {}
    summary = None
    runtime: float | None = None
    # Each entry's digest: a run resumed into a new folder starts its log_history with its checkpoint's.
    history = tuple(hashlib.blake2b(json.dumps(entry, sort_keys=True).encode(), digest_size=8).digest()
                    for _offset, entry in entries)
    for offset, entry in entries:
        line = lines.line(offset)
        if not isinstance(entry, dict):
            info.skip(line, "log_history entry is not an object; skipped")
            continue
        step = entry.get("step")
        if not isinstance(step, int) or isinstance(step, bool):
            info.skip(line, "log_history entry has no integer 'step'; skipped")
            continue
        is_summary = "train_runtime" in entry  # written once, when training ends
        if is_summary:
            summary = line
            stated = float(entry["train_runtime"]) if is_number(entry["train_runtime"]) else None
            runtime = stated if stated is not None and duration_problem(stated, "train_runtime") is None else None
        values = {k: float(v) for k, v in entry.items() if k not in NOT_METRICS and is_number(v)}
        if "epoch" in entry and is_number(entry["epoch"]):
            values["epoch"] = float(entry["epoch"])
        kind = "eval" if any(k.startswith("eval_") for k in values) else ("summary" if is_summary else "train")
        if kind == "train" and values.get("loss") == 0.0 and _non_finite(values.get("grad_norm")):
            values["loss"] = math.nan
            events.append(LogMessage(run, MessageKind.NON_FINITE, "loss logged as 0.0 while grad_norm is non-finite: "
                                     "the Trainer's NaN filter (logging_nan_inf_filter) left every non-finite loss "
                                     "of this logging window out", Evidence(rel, line), step, target="loss"))
        rows.add(run, kind, step, line, None, values)
        info.records += 1
        if kind == "eval":
            metrics = {k: v for k, v in values.items() if k.startswith("eval_")}
            seconds = metrics.get("eval_runtime")
            if seconds is not None and duration_problem(seconds, "eval_runtime") is not None:
                seconds = None
            events.append(Evaluation(run, step, None, Evidence(rel, line), metrics, seconds=seconds))
    early = text.find('"EarlyStoppingCallback"')
    return info, rows, events, {"state": state or {}, "summary_line": summary, "runtime": runtime, "history": history,
                                "early_line": lines.line(early) if early >= 0 else None}


def _non_finite(value: float | None) -> bool:
    return value is not None and not math.isfinite(value)



def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def state_facts(run: str, rel: str, parsed: dict, checkpoint_paths: dict[str, str]) -> tuple[RunFacts, LoggedStop | None]:
    """How a run ended by its final trainer_state.json (or its last checkpoint's), and its best model.

    Only evidence sets a status: the final training summary or global_step reaching max_steps
    (completed), EarlyStoppingCallback's state (stopped, by the training loop). Otherwise the
    status stays unknown and the reason says what the state shows.
    `checkpoint_paths` maps checkpoint folder names (checkpoint-N) to their paths under LOGS, so
    `best_model_checkpoint`, written as a path on the training machine, points into the logs.
    """
    state = parsed.get("state") or {}
    summary_line = parsed.get("summary_line")
    global_step = _int(state.get("global_step"))
    max_steps = _int(state.get("max_steps"))
    should_stop = dig(state, "stateful_callbacks", "TrainerControl", "args", "should_training_stop")
    facts = RunFacts(run=run, format=FORMAT, evidence=Evidence(rel, summary_line), last_step=global_step,
                     seconds=parsed.get("runtime"), max_steps=max_steps if max_steps and max_steps > 0 else None,
                     history=parsed.get("history"))
    stop = _early_stop(run, rel, parsed, state, global_step, max_steps, should_stop)
    of = f" of {max_steps}" if max_steps else ""
    at = f"at step {global_step}{of}" if global_step is not None else "with no global_step"
    if stop is not None:
        facts.status, facts.reason = "stopped", stop.reason
        facts.evidence = stop.evidence
    elif summary_line is not None:
        facts.status, facts.reason = "completed", "trainer_state.json has the final training summary (train_runtime)"
    elif max_steps and global_step is not None and global_step >= max_steps:
        facts.status, facts.reason = "completed", f"global_step {global_step} reached max_steps {max_steps}"
    else:
        facts.reason = f"no final training summary; the last state is {at}"
    best_metric = state.get("best_metric")
    best_path = state.get("best_model_checkpoint")
    if is_number(best_metric) or isinstance(best_path, str):
        # The last part of the path, written on Linux or Windows.
        name = re.split(r"[\\/]", best_path.rstrip("/\\"))[-1] if isinstance(best_path, str) else None
        match = CHECKPOINT_DIR.match(name or "")
        facts.best = {
            "metric": float(best_metric) if is_number(best_metric) else None,
            "step": _int(state.get("best_global_step")) or (int(match.group(1)) if match else None),
            "checkpoint": checkpoint_paths.get(name or ""),
            "checkpoint_as_written": best_path if isinstance(best_path, str) else None,
        }
    return facts, stop


def _early_stop(run: str, rel: str, parsed: dict, state: dict, global_step: int | None, max_steps: int | None,
                should_stop: object) -> LoggedStop | None:
    """EarlyStoppingCallback's own stop: the Trainer stopped before max_steps with the callback in charge.

    Either the callback's saved state shows its patience used up and the Trainer told to stop, or
    training ended with its final summary short of max_steps while the callback was configured:
    the state in the folder is refreshed only at checkpoint saves, so a stop between two saves
    leaves the counter of the last save behind."""
    callback = dig(state, "stateful_callbacks", "EarlyStoppingCallback")
    if not isinstance(callback, dict) or global_step is None or (max_steps and global_step >= max_steps):
        return None
    patience = _int(dig(callback, "args", "early_stopping_patience"))
    counter = _int(dig(callback, "attributes", "early_stopping_patience_counter"))
    used_up = patience is not None and counter is not None and counter >= patience and should_stop is True
    ended_short = parsed.get("summary_line") is not None and max_steps is not None
    if not (used_up or ended_short):
        return None
    threshold = dig(callback, "args", "early_stopping_threshold")
    by = f" by more than {threshold:g}" if is_number(threshold) and threshold else ""
    best = state.get("best_metric")
    best_text = (f"; best {best:.4g} at step {state.get('best_global_step')}" if is_number(best) and
                 state.get("best_global_step") is not None else "")
    of = f" of {max_steps}" if max_steps else ""
    if used_up:
        why = f"the evaluation metric did not improve{by} in {counter} evaluations (patience {patience})"
    else:
        why = (f"training ended with its final summary short of max_steps, with the callback configured (patience "
               f"{patience}; its state as last saved at a checkpoint: {counter} evaluations without improvement{by})")
    reason = f"EarlyStoppingCallback stopped training at step {global_step}{of}: {why}{best_text}"
    return LoggedStop(run, None, reason, None, Evidence(rel, parsed.get("early_line")), step=global_step, by=STOPPED_BY_LOOP)


def _resume_state(names: set[str], pointers: set[str] = frozenset()) -> tuple[dict[str, bool | None], dict[str, str]]:
    """The parts of the training state a Trainer folder holds, judged by its files, and what decided each.

    A Git LFS pointer in place of a file holds none of it: the part is missing, and says why."""
    names = names - pointers
    has_state = STATE in names
    files = {
        "model": [n for n in sorted(names) if n in WEIGHTS],
        "optimizer": [n for n in sorted(names) if n in PARTS["optimizer"]],
        "scheduler": [n for n in sorted(names) if n in PARTS["scheduler"]],
        "scaler": [n for n in sorted(names) if n in PARTS["scaler"]],
        "rng": [n for n in sorted(names) if RNG.match(n)],
    }
    expected = {"model": "adapter_model.* or model.* weights", "optimizer": "optimizer.pt", "scheduler": "scheduler.pt",
                "scaler": "scaler.pt (written only with fp16 AMP)", "rng": "rng_state*.pth"}
    state: dict[str, bool | None] = {part: bool(found) for part, found in files.items()}
    basis = {part: (", ".join(found) + " present") if found else f"no {expected[part]}" for part, found in files.items()}
    for part, pattern in (("model", None), ("optimizer", PARTS["optimizer"]), ("scheduler", PARTS["scheduler"]),
                          ("scaler", PARTS["scaler"]), ("rng", None)):
        named = sorted(n for n in pointers if (n in WEIGHTS if part == "model" else RNG.match(n) if part == "rng"
                                                else n in (pattern or ())))
        if named and not files[part]:
            basis[part] = f"{', '.join(named)}: a Git LFS pointer, not the file"
    # The Trainer finds its place in the data from global_step and epoch in trainer_state.json.
    for part in ("data_position", "progress"):
        state[part] = has_state
        basis[part] = (f"{STATE} present: the Trainer skips to its global_step on resume" if has_state
                       else f"{STATE}: a Git LFS pointer, not the file" if STATE in pointers else f"no {STATE}")
    return state, basis


def checkpoint(folder: Path, rel_folder: str, run: str, names: set[str], pointers: set[str] = frozenset()) -> Checkpoint:
    """What a checkpoint-N/ folder holds, judged by the files present (nothing is loaded)."""
    step = int(CHECKPOINT_DIR.match(folder.name).group(1))
    state, basis = _resume_state(names, pointers)
    evidence = Evidence(f"{rel_folder}/{STATE}" if STATE in names and STATE not in pointers else rel_folder)
    return Checkpoint(run=run, path=rel_folder, format=FORMAT, evidence=evidence, step=step,
                      resume_state=state, parts=sorted(names), resume_basis=basis)


def final_model(rel_folder: str, run: str, names: set[str], step: int | None,
                pointers: set[str] = frozenset()) -> Checkpoint | None:
    """The model saved in the output folder at the end of training (save_model), if its weights are there.

    It is listed with the checkpoints because it is what a user would reload; without the
    optimizer and scheduler it usually cannot resume training (R11).
    """
    if not any(n in WEIGHTS for n in names - pointers):
        return None
    state, basis = _resume_state(names, pointers)
    weights = next(n for n in sorted(names - pointers) if n in WEIGHTS)
    return Checkpoint(run=run, path=rel_folder or ".", format=FORMAT, evidence=Evidence(f"{rel_folder}/{weights}".lstrip("/")),
                      step=step, resume_state=state, parts=sorted(names), resume_basis=basis, final=True)


def read_adapter(path: Path, rel: str) -> tuple[InputFile, dict]:
    """A PEFT adapter_config.json: the base model and revision the adapter was trained on."""
    info = InputFile(path=rel, format=FORMAT)
    data = read_mapping(path, info, "an adapter_config.json holds one JSON object") or {}
    keep = ("peft_type", "base_model_name_or_path", "revision", "r", "lora_alpha", "target_modules", "task_type")
    return info, {f"adapter.{k}": data[k] for k in keep if data.get(k) is not None}


def recognise(rel: str, head: bytes) -> str | None:
    name = PurePosixPath(rel).name
    if name == STATE or sniff_state(head):
        return "hf-state"
    if name == "adapter_config.json" or sniff_adapter(head):
        return "hf-adapter"
    return None


def claim_folders(scan: Scan) -> None:
    """A Trainer output folder is the folder of a trainer_state.json, or the folder holding checkpoint-N/ ones."""
    folders = set()
    for rel, kind in scan.kinds.items():
        if kind == "hf-state":
            folder = parents(rel)[0]
            folders.add(parent(folder) if CHECKPOINT_DIR.match(folder_name(folder)) else folder)
    for folder in sorted(folders):
        key = f"{FORMAT}:{folder or '.'}"
        scan.run_folder(folder, Source(key, FORMAT, scan.name_of(folder), scan.shown_by(folder, (STATE,)), folder=folder))


def read_files(scan: Scan) -> None:
    for folder, key in scan.run_folders(FORMAT):
        with scan.contained(f"{folder}/{STATE}" if folder else STATE, FORMAT):
            scan.add(_read_folder(scan, folder, key))


def _read_folder(scan: Scan, folder: str, run: str) -> Reading:
    """A Trainer output folder: its checkpoints, the state of the last of them (or the folder's own, written
    when training ended), the final model saved beside them, and the adapter's configuration."""
    reading = Reading()
    found, kinds = scan.found, scan.kinds
    prefix = f"{folder}/" if folder else ""
    members = set(scan.members(folder))
    checkpoints: dict[str, set[str]] = {}
    for rel in members:
        parts = rel[len(prefix):].split("/")
        if len(parts) == 2 and CHECKPOINT_DIR.match(parts[0]):
            checkpoints.setdefault(parts[0], set()).add(parts[1])
    pointers = {rel for rel in members if kinds.get(rel) == LFS}
    found_checkpoints = []
    for name in sorted(checkpoints, key=lambda n: int(CHECKPOINT_DIR.match(n).group(1))):
        held = {n for n in checkpoints[name] if f"{prefix}{name}/{n}" in pointers}
        found_checkpoints.append(checkpoint(scan.logs / prefix / name, prefix + name, run, checkpoints[name], held))
    reading.events += found_checkpoints
    by_path = {c.path: c for c in found_checkpoints}

    final = prefix + STATE if prefix + STATE in found and prefix + STATE not in pointers else None
    latest = next((f"{c.path}/{STATE}" for c in reversed(found_checkpoints)
                   if f"{c.path}/{STATE}" in found and f"{c.path}/{STATE}" not in pointers), None)
    main_state = final or latest
    final_step: int | None = None
    config: dict = {}
    for rel in sorted(members):
        kind = kinds.get(rel)
        if kind == LFS:
            reading.inputs.append(scan.pointer_file(rel))
            scan.done(rel)
        elif kind == "hf-state":
            info, rows, events, parsed = scan.read_one(rel, lambda rel: read_state(found[rel][0], rel, run),
                                                       Kept(f"{FORMAT}-state", context=lambda _rel: run))
            reading.inputs.append(info)
            holder = by_path.get(parents(rel)[0])
            if holder is not None:
                holder.history = parsed.get("history")
            if rel == main_state:
                reading.frames.append(rows.frame())
                reading.events += events
                facts, stop = state_facts(run, rel, parsed, {PurePosixPath(c.path).name: c.path for c in found_checkpoints})
                if final is None:
                    facts.reason = f"no trainer_state.json in the output folder; {facts.reason} (from {rel})"
                else:
                    final_step = facts.last_step
                reading.events.append(facts)
                if stop is not None:
                    reading.events.append(stop)
            scan.done(rel)
        elif kind == "hf-adapter" and rel == prefix + "adapter_config.json":
            info, adapter = scan.read_one(rel, lambda rel: read_adapter(found[rel][0], rel), Kept(f"{FORMAT}-adapter"))
            reading.inputs.append(info)
            config.update(adapter)
            scan.done(rel)
    top = {rel[len(prefix):] for rel in members if "/" not in rel[len(prefix):]}
    saved = final_model(folder, run, top, final_step, {n for n in top if prefix + n in pointers})
    if saved is not None:
        reading.events.append(saved)
    if main_state is None:
        reading.events.append(RunFacts(run=run, format=FORMAT, evidence=scan.shown_by(folder, ()),
                                       reason="checkpoint folders but no readable trainer_state.json anywhere"))
    if config:
        reading.events.append(RunFacts(run=run, format=FORMAT, evidence=Evidence(prefix + "adapter_config.json"),
                                       config=config))
    return reading


def tensorboard_arguments(source: Source, texts: dict[str, str]) -> dict | None:
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
    if source.params is None:
        source.params = {k: str(v) for k, v in args.items() if k in ("output_dir", "logging_dir", "run_name")}
    output_dir = args.get("output_dir")
    if isinstance(output_dir, str) and source.folder:
        above = [f for f in parents(source.folder + "/x")[1:] if f and path_ends_with(output_dir, f)]
        if above:
            source.folder, source.name = above[0], folder_name(above[0])
    return args


def tensorboard_summary(rel: str, frame: pd.DataFrame, args: dict, facts: RunFacts) -> None:
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


READER = Reader(FORMAT, recognise, read_files, claim_folders)
