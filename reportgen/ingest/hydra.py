"""Hydra run folders: `.hydra/config.yaml`, `.hydra/hydra.yaml`, `.hydra/overrides.yaml`.

Hydra writes these three files into the output folder of every job it runs (`hydra.run.dir`,
by default `outputs/${now:%Y-%m-%d}/${now:%H-%M-%S}`; a sweep's job in `hydra.sweep.dir` /
`hydra.sweep.subdir`, by default `multirun/${now:%Y-%m-%d}/${now:%H-%M-%S}/${hydra.job.num}`):

- `config.yaml`: the job's composed configuration, interpolations left as written;
- `overrides.yaml`: the command-line overrides of the job, a YAML list of `key=value` strings;
- `hydra.yaml`: Hydra's own configuration for the job (`hydra.run.dir`, `hydra.sweep`, `hydra.mode`,
  `hydra.job.name`, `hydra.runtime.output_dir`...).

They are the configuration of the run whose files lie beside `.hydra/` (its parent folder).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from reportgen.ingest.common import (
    EARLIEST,
    LATEST,
    Reading,
    decode_text,
    dig,
    read_mapping,
    read_parsed,
)
from reportgen.ingest.scan import Kept, Reader, Scan, Source, parent, parents
from reportgen.model import Evidence, InputFile, RunFacts

FORMAT = "hydra"
HYDRA_DIR = ".hydra"
CONFIG, HYDRA, OVERRIDES = "config.yaml", "hydra.yaml", "overrides.yaml"
# Hydra's defaults (hydra/conf/hydra/config.yaml); a folder named by the time is read as one only under them.
RUN_DIR = "outputs/${now:%Y-%m-%d}/${now:%H-%M-%S}"
SWEEP_DIR = "multirun/${now:%Y-%m-%d}/${now:%H-%M-%S}"
SWEEP_SUBDIR = "${hydra.job.num}"
_DATE, _TIME = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$"), re.compile(r"^(\d{2})-(\d{2})-(\d{2})$")
_KEY_LINE = re.compile(r"^[A-Za-z_][\w.\-]*:(\s|$)")


def recognise(rel: str, head: bytes) -> str | None:
    """"hydra-config" for config.yaml, hydra.yaml or overrides.yaml inside a `.hydra` folder whose first
    line has the file's shape (hydra.yaml starts `hydra:`, overrides.yaml is a list, config.yaml a
    mapping); None for anything else, a config.yaml elsewhere included."""
    path = PurePosixPath(rel)
    if path.parent.name != HYDRA_DIR or path.name not in (CONFIG, HYDRA, OVERRIDES):
        return None
    text = decode_text(head[: head.rfind(b"\n") + 1] or head)
    if text is None:
        return None
    first = next((line.rstrip() for line in text.split("\n") if line.strip() and not line.lstrip().startswith("#")), "")
    if path.name == HYDRA:
        return "hydra-config" if first == "hydra:" else None
    if path.name == OVERRIDES:
        return "hydra-config" if first.startswith("- ") or first == "[]" else None
    return "hydra-config" if _KEY_LINE.match(first) or first == "{}" else None


@dataclass
class HydraConfig:
    """One Hydra job's configuration: config.yaml with its `overrides`, the run folder it describes (the
    parent of `.hydra`), and when the job started, with what tells it (`reason`)."""

    folder: str
    inputs: list[InputFile] = field(default_factory=list)
    config: dict = field(default_factory=dict)
    started_at: datetime | None = None
    reason: str | None = None
    job: str | None = None  # hydra.job.name
    output_dir: str | None = None  # hydra.runtime.output_dir: the run folder's path on the machine that ran it


def read_config(logs: Path, folder: str, members: list[str]) -> HydraConfig:
    """The `.hydra` files among `members` (paths under LOGS) of `folder` (a `.hydra` folder, or the run
    folder holding one)."""
    hydra_dir = folder if PurePosixPath(folder).name == HYDRA_DIR else (f"{folder}/{HYDRA_DIR}" if folder else HYDRA_DIR)
    run_folder = PurePosixPath(hydra_dir).parent.as_posix()
    run_folder = "" if run_folder == "." else run_folder
    out = HydraConfig(folder=run_folder)
    present = {PurePosixPath(rel).name: rel for rel in members if PurePosixPath(rel).parent.as_posix() == hydra_dir}
    hydra: dict = {}
    if CONFIG in present:
        info = InputFile(present[CONFIG], FORMAT)
        out.config = read_mapping(logs / present[CONFIG], info, "Hydra's config.yaml holds one YAML mapping") or {}
        out.inputs.append(info)
    if OVERRIDES in present:
        info = InputFile(present[OVERRIDES], FORMAT)
        overrides = _overrides(logs / present[OVERRIDES], info)
        out.inputs.append(info)
        if overrides is not None:
            out.config = {**out.config, "overrides": overrides}
    if HYDRA in present:
        info = InputFile(present[HYDRA], FORMAT)
        data = read_mapping(logs / present[HYDRA], info, "Hydra's hydra.yaml holds one YAML mapping") or {}
        out.inputs.append(info)
        hydra = section if isinstance(section := data.get("hydra"), dict) else {}
        if not hydra and data:
            info.problem(1, "no 'hydra' mapping at the top: not Hydra's own configuration")
    job = dig(hydra, "job", "name")
    out.job = job if isinstance(job, str) else None
    output_dir = dig(hydra, "runtime", "output_dir")
    out.output_dir = output_dir if isinstance(output_dir, str) else None
    out.started_at, out.reason = _started(run_folder, hydra, present.get(HYDRA))
    return out


def _overrides(path: Path, info: InputFile) -> list[str] | None:
    """overrides.yaml: a YAML list of override strings; None, with a problem, when it is not one."""
    read, data = read_parsed(path, info, "overrides.yaml is a YAML list")
    if not read:
        return None
    if data is None:
        data = []
    if not isinstance(data, list):
        info.problem(1, "overrides.yaml holds a YAML list of overrides; this is not one")
        return None
    info.records = 1
    return [item if isinstance(item, str) else json.dumps(item, default=str) for item in data]


def _started(run_folder: str, hydra: dict, hydra_rel: str | None) -> tuple[datetime | None, str | None]:
    """When the job started, from its folder's name: only under Hydra's default run.dir (or sweep.dir and
    sweep.subdir for a sweep's job), as hydra.yaml states it, are the folder names the start's date and
    time (the machine's clock without a zone, read as UTC as reportgen reads every such time)."""
    if hydra_rel is None:
        return None, "no hydra.yaml: the folder's name is not known to be Hydra's start time"
    parts = PurePosixPath(run_folder).parts
    mode = hydra.get("mode")
    run_dir, sweep_dir, subdir = dig(hydra, "run", "dir"), dig(hydra, "sweep", "dir"), dig(hydra, "sweep", "subdir")
    if mode == "MULTIRUN" or (mode is None and len(parts) >= 4 and parts[-4] == "multirun"):
        if sweep_dir != SWEEP_DIR or subdir != SWEEP_SUBDIR or len(parts) < 4 or parts[-4] != "multirun":
            return None, (f"hydra.sweep.dir {sweep_dir!r} / subdir {subdir!r} (in {hydra_rel}) with the folder {run_folder}: "
                          f"not Hydra's default {SWEEP_DIR}/{SWEEP_SUBDIR}, so its name is no start time")
        date, time, what = parts[-3], parts[-2], f"Hydra's default sweep folder {SWEEP_DIR}/{SWEEP_SUBDIR}"
    else:
        if run_dir != RUN_DIR or len(parts) < 3 or parts[-3] != "outputs":
            return None, (f"hydra.run.dir {run_dir!r} (in {hydra_rel}) with the folder {run_folder or '.'}: "
                          f"not Hydra's default {RUN_DIR}, so its name is no start time")
        date, time, what = parts[-2], parts[-1], f"Hydra's default run folder {RUN_DIR}"
    day, clock = _DATE.match(date), _TIME.match(time)
    if not day or not clock:
        return None, f"the folder {run_folder} does not name a date and a time as {what} does"
    try:
        year, month, date_day = (int(g) for g in day.groups())
        hour, minute, second = (int(g) for g in clock.groups())
        at = datetime(year, month, date_day, hour, minute, second, tzinfo=UTC)
    except ValueError:
        return None, f"{date}/{time} in {run_folder} is no date and time"
    if not EARLIEST <= at < LATEST:
        return None, f"{date}/{time} in {run_folder} is outside {EARLIEST.year}-{LATEST.year - 1}"
    return at, (f"the folder {run_folder} is {what} (as {hydra_rel} states): the job started at {date} {time.replace('-', ':')} "
                "(the machine's clock, read as UTC)")


# --- the reader's scan steps -----------------------------------------------------------------

def _run_folders(scan: Scan) -> dict[str, list[str]]:
    """Each run folder a `.hydra` folder describes (its parent), with the `.hydra` files in it."""
    out: dict[str, list[str]] = {}
    for rel in scan.files("hydra-config"):
        out.setdefault(parent(parents(rel)[0]), []).append(rel)
    return out


def _runs_within(scan: Scan, folder: str) -> list[str]:
    """The source keys of the run folders at or below `folder` that another reader claimed."""
    prefix = f"{folder}/" if folder else ""
    return sorted({key for f, key in scan.run_dirs.items() if f == folder or f.startswith(prefix)})


def _job_name(scan: Scan, folder: str) -> str:
    """A job folder's run name: its own name, with the sweep folder above a job number, and the date
    folder above a time-named folder (`2026-12-04/21-08-06/0`)."""
    if not folder:
        return scan.name_of(folder)
    parts = PurePosixPath(folder).parts
    keep = 2 if parts[-1].isdigit() and len(parts) >= 2 else 1
    if len(parts) > keep and _TIME.match(parts[-keep]) and _DATE.match(parts[-keep - 1]):
        keep += 1
    return "/".join(parts[-keep:])


def claim_folders(scan: Scan) -> None:
    """A Hydra job's folder is a run folder (its train.log is that run's), unless run folders of other
    formats lie in it (a Lightning or Trainer folder the job wrote under Hydra's working directory): then
    the configuration is theirs. A sweep's job folder (`multirun/<date>/<time>/0`) is named
    `<time>/<job number>`, and a folder under a date folder (Hydra's default `outputs/<date>/<time>`)
    keeps its date: two days' runs started at one time of day are two names."""
    for folder in sorted(_run_folders(scan)):
        if _runs_within(scan, folder):
            continue
        name = _job_name(scan, folder)
        evidence = Evidence(f"{folder}/{HYDRA_DIR}/{CONFIG}" if folder else f"{HYDRA_DIR}/{CONFIG}")
        scan.run_folder(folder, Source(f"{FORMAT}:{folder or '.'}", FORMAT, name, evidence, folder=folder))


def read_files(scan: Scan) -> None:
    for folder, members in sorted(_run_folders(scan).items()):
        with scan.contained(members[0], FORMAT):
            # Kept between builds while the job's .hydra files are unchanged (ingest/cache.py).
            read = scan.read_one(folder, lambda folder, members=members: read_config(scan.logs, folder, members),
                                 Kept(FORMAT, members=lambda _folder, members=members: members))
            hydra_yaml = next((i for i in read.inputs if PurePosixPath(i.path).name == HYDRA), None)
            if hydra_yaml is not None and read.reason:
                hydra_yaml.notes.append(read.reason)
            events = []
            for key in _runs_within(scan, folder):
                evidence = Evidence(read.inputs[0].path) if read.inputs else Evidence(members[0])
                events.append(RunFacts(run=key, format=FORMAT, evidence=evidence, config=read.config or None,
                                       started_at=read.started_at if scan.sources[key].format == FORMAT else None))
            if not events:
                for info in read.inputs:
                    info.notes.append("no run of this Hydra job is in LOGS: its configuration is no run's")
            scan.add(Reading(list(read.inputs), [], events))
            for rel in members:
                scan.done(rel)


READER = Reader(FORMAT, recognise, read_files, claim_folders)
