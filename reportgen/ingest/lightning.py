"""PyTorch Lightning CSVLogger folders: `<name>/version_N/` with metrics.csv, hparams.yaml, checkpoints/*.ckpt.

metrics.csv is sparse: one row per `log` flush, with `step` and `epoch` columns and an empty
cell for every metric not logged in that row. Lightning writes no end marker, so a version's
status comes from its checkpoints (global_step against max_steps, when the hyperparameters name
it), from a later version that resumed it, or from its text log.
A .ckpt is read without unpickling it (see torchfile): its top-level keys tell which parts of
the training state it holds.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

from reportgen.ingest.common import (
    LineRead,
    MetricRows,
    Reading,
    csv_lines,
    quoted,
    read_lines,
    read_mapping,
    row_kind,
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
)
from reportgen.ingest.torchfile import Opaque, UnreadablePickle, read_torch_file
from reportgen.model import Checkpoint, Evaluation, Evidence, InputFile, RunFacts
from reportgen.plan.schema import RESUME_PARTS

FORMAT = "lightning-csv"


def sniff_metrics(head: bytes, name: str) -> bool:
    first = head.split(b"\n", 1)[0].strip().decode("utf-8", errors="replace")
    columns = first.split(",")
    return name.endswith(".csv") and "step" in columns and len(columns) >= 2


def read_metrics(path: Path, rel: str, run: str) -> tuple[InputFile, MetricRows, list[Evaluation]]:
    return read_metrics_on(path, rel, run, keep=False)[0]


def read_metrics_on(path: Path, rel: str, run: str, since: MetricsCsv | None = None, keep: bool = True
                    ) -> tuple[tuple[InputFile, MetricRows, list[Evaluation]], MetricsCsv | None]:
    """metrics.csv read on from `since` when CSVLogger has only appended rows to it since, else whole (CSVLogger
    writes the file again, header and all, when a metric it had not logged appears: that file is read whole);
    with what to keep to read on from next time (common.read_lines). Either way the file reads as it does whole."""
    fresh = MetricsCsv(rel, run)
    read, kept = read_lines(path, fresh, since, "not UTF-8 text; metrics.csv is a CSV file", what="rows", keep=keep)
    if read is None:
        return (fresh.info, fresh.rows, fresh.evals), None
    return read.result(), kept


class MetricsCsv(LineRead):
    """metrics.csv read line by line: its rows, evaluations and counts so far, and its header once read."""

    def __init__(self, rel: str, run: str) -> None:
        super().__init__(InputFile(path=rel, format=FORMAT))
        self.run = run
        self.rows = MetricRows(rel)
        self.evals: list = []
        self.header: list[str] | None = None
        self.step_at = 0
        self.no_header: tuple[int, str] | None = None  # the first line that is not blank, and why it is no header

    def result(self) -> tuple[InputFile, MetricRows, list[Evaluation]]:
        info = self.info
        info.lines = self.lines
        if self.no_header is not None:
            line, why = self.no_header
            info.problem(line, why + (f"; the {info.skipped} rows below it are not read" if info.skipped else ""))
        return info, self.rows, self.evals

    def feed(self, text: str, first: int, unterminated: bool = False) -> None:
        """Read the lines of `text`, the first numbered `first`; `unterminated`: it is the file's last line, and
        has no newline (a writer stopped mid-line, or one still writing it)."""
        info, rows, evals, run = self.info, self.rows, self.evals, self.run
        header, step_at = self.header, self.step_at
        for line, cells in csv_lines(text, first=first):
            self.lines = line
            if _blank(cells):
                info.blank += 1
                continue
            if self.no_header is not None:  # nothing below a header that is no header is read
                info.skipped += 1
                continue
            if header is None:  # the first line that is not blank
                info.header = 1
                if isinstance(cells, str) or "step" not in cells:
                    self.no_header = (line, f"the header is not a CSV row ({cells})" if isinstance(cells, str)
                                      else "no 'step' column in the header")
                    continue
                header, step_at = cells, cells.index("step")
                self.header, self.step_at = header, step_at
                continue
            if isinstance(cells, str):
                info.skip(line, f"not a CSV row ({cells}); row skipped")
                continue
            if len(cells) != len(header):
                info.skip(line, f"{len(cells)} cells where the header has {len(header)}"
                          + ("; the last line is cut off (a writer stopped mid-line)" if unterminated else "") + "; row skipped")
                continue
            step = _step(cells[step_at])
            if step is None:
                info.skip(line, f"step: {cells[step_at]!r} is not a step count; row skipped")
                continue
            values = {}
            bad = None
            for name, cell in zip(header, cells):
                if name == "step" or cell == "":
                    continue
                try:
                    value = float(cell)
                except ValueError:
                    bad = name
                    continue
                if math.isinf(value) and not cell.strip().lstrip("+-").lower().startswith("inf"):
                    bad = name  # digits past any float ("7" * 400): no value that was logged, unlike a logged inf
                    continue
                values[name] = value
            if bad is not None:
                info.problem(line, f"{bad}: {quoted(cells[header.index(bad)])} is not a number; that cell is left out")
            logged = [k for k in values if k != "epoch"]
            kind = row_kind(list(values))
            rows.add(run, kind, step, line, None, values)
            info.records += 1
            if kind == "eval":
                evals.append((step, Evidence(info.path, line), {k: values[k] for k in logged}))


def _blank(cells: list[str] | str) -> bool:
    """An empty line, or spaces only (a row of empty cells is no blank line: it is a row without a step)."""
    return isinstance(cells, list) and len(cells) <= 1 and not "".join(cells).strip()


def _step(cell: str) -> int | None:
    """A step as CSVLogger writes it ("40"); None for what is no step ("x", "nan", "inf", or past the
    64-bit integers the metrics frame keeps steps in)."""
    try:
        step = int(float(cell))
    except (ValueError, OverflowError):
        return None
    return step if abs(step) < 1 << 63 else None


def read_hparams(path: Path, rel: str) -> tuple[InputFile, dict]:
    info = InputFile(path=rel, format=FORMAT)
    return info, read_mapping(path, info, "hparams.yaml holds a mapping of hyperparameters") or {}


def read_checkpoint(path: Path, rel: str, run: str) -> tuple[InputFile, Checkpoint | None, dict]:
    """A .ckpt's resume state from its top-level keys, and its plain hyperparameters; the pickle is walked, never run."""
    info = InputFile(path=rel, format=FORMAT)
    try:
        data = read_torch_file(path)
    except UnreadablePickle as exc:
        info.problem(None, f"checkpoint cannot be inspected: {exc}")
        info.skipped = 1
        return info, None, {}
    if not isinstance(data, dict):
        info.problem(None, "not a Lightning checkpoint (its top level is not a dictionary)")
        return info, None, {}
    info.records = 1
    loops = data.get("loops") if isinstance(data.get("loops"), dict) else {}
    fit = loops.get("fit_loop") if isinstance(loops.get("fit_loop"), dict) else {}
    batch = fit.get("epoch_loop.batch_progress") if isinstance(fit.get("epoch_loop.batch_progress"), dict) else {}
    loader_state = isinstance(fit.get("state_dict"), dict) and "combined_loader" in fit["state_dict"]
    step = data.get("global_step") if isinstance(data.get("global_step"), int) else None
    scaler_keys = [k for k in ("native_amp_scaling_state", "amp_scaling_state", "MixedPrecision") if k in data]
    rng_keys = sorted(str(k) for k in data if "rng" in str(k).lower())
    state: dict[str, bool | None] = {
        "model": isinstance(data.get("state_dict"), (dict, Opaque)),
        "optimizer": bool(data.get("optimizer_states")),
        "scheduler": bool(data.get("lr_schedulers")),
        "scaler": bool(scaler_keys),
        # Lightning restores RNG state only when a callback or the user saves it.
        "rng": bool(rng_keys),
        # Mid-epoch, the data position comes back only with a stateful data loader.
        "data_position": bool(batch) and (batch.get("is_last_batch") is True or loader_state),
        "progress": bool(fit) and step is not None,
    }
    basis = {
        "model": "key state_dict" if state["model"] else "no state_dict key",
        "optimizer": "key optimizer_states" if state["optimizer"] else "optimizer_states absent or empty",
        "scheduler": "key lr_schedulers" if state["scheduler"] else "lr_schedulers absent or empty",
        "scaler": f"key {scaler_keys[0]}" if scaler_keys else "no AMP scaler state (none is written without AMP)",
        "rng": f"key {rng_keys[0]}" if rng_keys else "no RNG key: Lightning saves RNG state only through a callback",
        "data_position": ("saved at the end of an epoch" if batch.get("is_last_batch") is True else
                          "the data loader's state is saved" if loader_state else
                          "saved mid-epoch without the data loader's state" if batch else "no loop progress"),
        "progress": f"global_step {step} and the fit loop's state" if state["progress"] else "no fit loop state or global_step",
    }
    parts = sorted(str(k) for k in data)
    hparams = data.get("hyper_parameters") if isinstance(data.get("hyper_parameters"), dict) else {}
    check = Checkpoint(run=run, path=rel, format=FORMAT, evidence=Evidence(rel), step=step,
                       resume_state=state, parts=parts, resume_basis=basis)
    plain = {k: v for k, v in hparams.items() if isinstance(v, (int, float, str, bool)) or v is None}
    return info, check, plain


_STEP_IN_NAME = re.compile(r"(?:^|[-_])step=(\d+)")


def pointer_checkpoint(rel: str, run: str, pointer: str) -> Checkpoint:
    """A .ckpt that is a Git LFS pointer: a checkpoint was saved here, but none of its parts is at hand.

    Its step comes from the name Lightning's ModelCheckpoint gives it (`epoch=2-step=100.ckpt`), if any."""
    match = _STEP_IN_NAME.search(rel.rsplit("/", 1)[-1])
    state: dict[str, bool | None] = {part: None for part in RESUME_PARTS}
    return Checkpoint(run=run, path=rel, format=FORMAT, evidence=Evidence(rel), step=int(match.group(1)) if match else None,
                      resume_state=state, resume_basis={part: pointer for part in RESUME_PARTS})


def max_steps(hparams: dict) -> int | None:
    value = hparams.get("max_steps")
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None



VERSION_DIR = re.compile(r"^version_(\d+)$")


def recognise(rel: str, head: bytes) -> str | None:
    name = PurePosixPath(rel).name
    if head.startswith(b"PK\x03\x04") and name.endswith(".ckpt"):
        return "ckpt"
    if sniff_metrics(head, name):
        return "lightning-metrics"
    if name == "hparams.yaml":
        return "hparams"
    return None


def claim_folders(scan: Scan) -> None:
    """A Lightning version folder is the folder of a metrics.csv or hparams.yaml (a version_N folder for other
    CSV names), or the folder above the checkpoints/ of .ckpt files; a Trainer output folder is never one."""
    folders = set()
    for rel, kind in scan.kinds.items():
        name = PurePosixPath(rel).name
        if kind not in ("lightning-metrics", "hparams", "ckpt") and not (kind == LFS and name.endswith(".ckpt")):
            continue
        folder = parents(rel)[0]
        if kind in ("ckpt", LFS) and folder_name(folder) == "checkpoints":
            folder = parent(folder)
        if folder in scan.run_dirs:
            continue
        if kind == "lightning-metrics" and name != "metrics.csv" and not VERSION_DIR.match(folder_name(folder)):
            continue
        folders.add(folder)
    for folder in sorted(folders):
        key = f"{FORMAT}:{folder or '.'}"
        version = VERSION_DIR.match(folder_name(folder))
        name = f"{scan.name_of(parent(folder))}/{folder_name(folder)}" if version else scan.name_of(folder)
        scan.run_folder(folder, Source(key, FORMAT, name, scan.shown_by(folder, ("metrics.csv", "hparams.yaml")),
                                       folder=folder, version_name=name if version else None))


def read_files(scan: Scan) -> None:
    """Each version folder on its own: which version continues which is decided from evidence, later."""
    for folder, key in scan.run_folders(FORMAT):
        with scan.contained(scan.sources[key].evidence.path or folder, FORMAT):
            reading, limit = _read_folder(scan, folder, key)
            scan.add(reading)
            facts = next(e for e in reading.events if isinstance(e, RunFacts))
            scan.limits[key] = (facts, limit)


def kept(part: str, run: str = "", resume: Callable[[str, Any], tuple[Any, Any]] | None = None) -> Kept:
    """How a Lightning file's result is kept between builds (ingest/cache.py): by what it is and the run it is read
    for; `resume`: how a file that has only grown is read on (Kept.resume)."""
    return Kept(f"{FORMAT}-{part}", context=lambda _rel: run, resume=resume)


def _read_folder(scan: Scan, folder: str, run: str) -> tuple[Reading, int | None]:
    """A Lightning version folder, and the max_steps its hyperparameters name (None if none)."""
    reading = Reading()
    found, kinds = scan.found, scan.kinds
    prefix = f"{folder}/" if folder else ""
    hparams: dict = {}
    last_metric_step = None
    checkpoint_steps = []
    for rel in scan.members(folder):
        kind = kinds.get(rel)
        if kind == "lightning-metrics":
            info, rows, evals = scan.read_one(rel, lambda rel: read_metrics(found[rel][0], rel, run),
                                              kept("metrics", run, lambda rel, since: read_metrics_on(found[rel][0], rel, run, since)))
            reading.inputs.append(info)
            frame = rows.frame()
            reading.frames.append(frame)
            if len(frame):
                last_metric_step = int(frame["step"].max())
            reading.events += [Evaluation(run, step, None, ev, metrics) for step, ev, metrics in evals]
            scan.done(rel)
        elif kind == "hparams" and rel == prefix + "hparams.yaml":
            info, hparams = scan.read_one(rel, lambda rel: read_hparams(found[rel][0], rel), kept("hparams"))
            reading.inputs.append(info)
            scan.done(rel)
        elif kind == "ckpt":
            info, check, check_hparams = scan.read_one(rel, lambda rel: read_checkpoint(found[rel][0], rel, run),
                                                       kept("checkpoint", run))
            reading.inputs.append(info)
            if check is not None:
                reading.events.append(check)
                if check.step is not None:
                    checkpoint_steps.append((check.step, rel, check_hparams))
            scan.done(rel)
        elif kind == LFS and rel.endswith(".ckpt"):
            pointer = scan.pointer(rel) or "a Git LFS pointer"
            reading.inputs.append(scan.pointer_file(rel))
            reading.events.append(pointer_checkpoint(rel, run, pointer))
            scan.done(rel)
    limit = max_steps(hparams) or next((max_steps(h) for _s, _r, h in checkpoint_steps if max_steps(h)), None)
    shown_by = next((prefix + name for name in ("metrics.csv", "hparams.yaml") if prefix + name in found), folder)
    logged = any(k in ("lightning-metrics", "hparams", "tensorboard") for r, k in kinds.items() if r.startswith(prefix))
    if checkpoint_steps and not logged:  # checkpoints alone: a ModelCheckpoint dirpath of its own
        scan.sources[run].checkpoint_configs = {rel: h for _s, rel, h in checkpoint_steps if h}
        configs = [h for _s, _r, h in checkpoint_steps if h]
        if configs and all(h == configs[0] for h in configs):
            hparams = configs[0]
    facts = RunFacts(run=run, format=FORMAT, evidence=Evidence(shown_by or "."),
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


READER = Reader(FORMAT, recognise, read_files, claim_folders)
