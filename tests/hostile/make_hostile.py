"""Write the hostile corpus: campaign folders that each damage one thing, and what a build must do.

    python tests/hostile/make_hostile.py DEST          # writes DEST/<case-id>/ and DEST/cases.json
    HOSTILE_BIG=1 python tests/hostile/make_hostile.py DEST   # also the big cases (two 300 MB text logs...)

Each case is a folder `DEST/<case-id>/` holding `logs/` (the LOGS folder) and `plan.yaml` (the
PLAN), and, for the cases whose links lead out of LOGS, `outside/` beside them. Most cases start
from the bundled sample campaign (`sample_logs/` and its plan: the whole campaign, or its pilot run
alone for a quicker build) or from a folder of real files the libraries wrote
(`tests/fixtures/formats/`), then damage one thing; some damage the plan instead.
Every case has an id, a category, a one-line description and what `reportgen build` must do:

- `exit`: 0 or 1, never 70 (an internal error is a bug);
- `problem`: substrings that must each appear in one of report.json's problems, shown as
  `path: message` (report.json `problems` and every `inputs[].problems`): the damage is reported;
- `message`: substrings that must each appear in the command's output (the refusals, exit 1);
- `reason`: substrings that must each appear in a deliverable's reasons, shown as `id: reason`;
- `records`: input path -> records read (the rows after a damaged one are still read);
- `runs`: run ids that must be in report.json's runs (the rest of the campaign is read);
- `outside_secret`: a token written only into files outside LOGS that links point to; it must
  appear nowhere in the site the build writes, nor in its output.

Everything is generated from a fixed seed: two runs write the same bytes, links, pipes and
sockets (one link is absolute on purpose: it names DEST). SQLite's random WAL salts are replaced by
fixed ones, checksums recomputed. Binary damage is made by patching real files with code, never
written by hand. The mode-000 cases are marked `needs_non_root` (root reads such files anyway),
and the `big` cases are written only with HOSTILE_BIG=1: two 300 MB text logs and a metrics.csv of
10,000 columns, for benchmarks/hostile_memory.py, too slow for the tests.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
import socket
import sqlite3
import stat
import struct
import sys
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "sample_logs"
FORMATS = REPO / "tests" / "fixtures" / "formats"
CAMPAIGNS = REPO / "tests" / "fixtures" / "campaigns"
SEED = 20261102
BIG_BYTES = 300 * 1000 * 1000
DIGITS_400 = "9" * 400

# Files of the sample and the fixtures that cases damage.
PILOT = "runs/pilot-1/events.jsonl"
MLRUN = "mlruns/140191543709086989/dc1e1b85474347259be8c72b0d1bc4d4"
MLRUN_UUID = "dc1e1b85474347259be8c72b0d1bc4d4"
PL_VERSION = "pl-clean/version_0"
HF_RUN = "out/hf-clean"
# Runs of the sample that damage elsewhere must leave as they are: the rest of the campaign is read.
SAMPLE_RUNS = ["control-2", "lora-r16-2", "lora-r64-1"]


@dataclass
class Case:
    id: str
    category: str
    description: str
    exit: int = 0
    problem: list[str] = field(default_factory=list)
    message: list[str] = field(default_factory=list)
    reason: list[str] = field(default_factory=list)
    records: dict[str, int] = field(default_factory=dict)
    runs: list[str] = field(default_factory=list)
    outside_secret: str | None = None
    isolate: bool = False  # build in a process of its own: a crash or a hang must not end the test run
    big: bool = False
    needs_non_root: bool = False
    logs: str = "logs"
    plan: str = "plan.yaml"

    def to_json(self) -> dict:
        return asdict(self)


class Ctx:
    """The folder of one case being written, with what most cases need."""

    def __init__(self, root: Path, case: Case):
        self.root, self.case = root, case
        self.logs = root / "logs"
        self.plan = root / "plan.yaml"
        self.outside = root / "outside"
        self.rng = random.Random(f"{SEED}/{case.id}")
        self.logs.mkdir(parents=True)

    # --- bases -----------------------------------------------------------------------------
    def sample(self, runs: bool = True) -> None:
        """The sample campaign's logs (its plan beside them, not inside)."""
        shutil.rmtree(self.logs)
        shutil.copytree(SAMPLE, self.logs, symlinks=True)
        (self.logs / "plan.yaml").unlink()
        self.plan_text(sample_plan())
        if runs and self.case.exit == 0:
            self.case.runs += [r for r in SAMPLE_RUNS if r not in self.case.runs]

    def fixture(self, source: str, into: str | None = None) -> Path:
        """A folder of real files under tests/fixtures (formats/... or campaigns/...), into LOGS."""
        src = REPO / "tests" / "fixtures" / source
        target = self.logs / (into or Path(source).name)
        if src.is_dir():
            shutil.copytree(src, target, symlinks=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, target)
        if not self.plan.exists():
            self.plan_text(sample_plan())
        return target

    def mini(self) -> None:
        """The sample's pilot run alone (a real run with checkpoints and evaluations) and the sample's
        plan: for damage that needs a run beside it but not the whole campaign (a quicker build)."""
        shutil.copytree(SAMPLE / "runs" / "pilot-1", self.logs / "runs" / "pilot-1")
        self.plan_text(sample_plan())
        if self.case.exit == 0 and "pilot-1" not in self.case.runs:
            self.case.runs.append("pilot-1")

    def bare(self) -> None:
        """An empty LOGS and the sample's plan: for cases about one file alone."""
        self.plan_text(sample_plan())

    def plan_text(self, text: str) -> None:
        self.plan.write_text(text, encoding="utf-8")

    # --- helpers ---------------------------------------------------------------------------
    def secret(self) -> str:
        token = f"HOSTILE-SECRET-{self.rng.getrandbits(64):016x}"
        self.case.outside_secret = token
        return token

    def out(self, rel: str, data: bytes | str) -> Path:
        """A file outside LOGS."""
        return write(self.outside / rel, data)

    def put(self, rel: str, data: bytes | str) -> Path:
        return write(self.logs / rel, data)

    def link(self, rel: str, target: str | Path, relative: bool = True) -> Path:
        """A link at LOGS/rel to target (a Path: made relative to the link's folder unless told not to)."""
        path = self.logs / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.is_dir():
            shutil.rmtree(path)
        if isinstance(target, Path):
            target = os.path.relpath(target, path.parent) if relative else str(target)
        path.symlink_to(target)
        return path

    def random_bytes(self, n: int) -> bytes:
        return self.rng.randbytes(n)

    def insert_lines(self, rel: str, at: int, lines: list[str]) -> int:
        """Insert lines before line `at` (1-based) of a text file in LOGS; returns the first new line's number."""
        path = self.logs / rel
        old = path.read_text(encoding="utf-8").split("\n")
        path.write_text("\n".join(old[: at - 1] + lines + old[at - 1:]), encoding="utf-8")
        return at

    def replace(self, rel: str, old: str, new: str, where: Path | None = None) -> None:
        path = (where or self.logs) / rel
        text = path.read_text(encoding="utf-8")
        if old not in text:
            raise AssertionError(f"{self.case.id}: {old!r} not in {path}")
        path.write_text(text.replace(old, new, 1), encoding="utf-8")


def write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.write_bytes(data)
    return path


def sample_plan() -> str:
    return (SAMPLE / "plan.yaml").read_text(encoding="utf-8")


def jsonl(*records: dict) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def laughs(levels: int, width: int, prefix: str = "lol") -> str:
    """The "billion laughs": each level an anchored list of `width` aliases to the level below."""
    text = f"{prefix}0: &{prefix}0 [lol]\n"
    for level in range(1, levels + 1):
        aliases = ", ".join([f"*{prefix}{level - 1}"] * width)
        text += f"{prefix}{level}: &{prefix}{level} [{aliases}]\n"
    return text


def deep_json(levels: int, inner: str = "1") -> str:
    return "[" * levels + inner + "]" * levels


def deep_object(levels: int) -> str:
    return '{"a":' * levels + "1" + "}" * levels


def native(ts: str, kind: str, run: str | None = "pilot-1", **fields) -> dict:
    record = {"ts": ts, "type": kind}
    if run is not None:
        record["run"] = run
    record.update(fields)
    return record


def native_run(run: str, config: dict | None = None, steps: int = 5) -> list[dict]:
    """A small complete native run inside the sample's lot window."""
    events = [native("2026-11-03T10:00:00Z", "run_start", run, config=config or {"lr": 0.001})]
    events += [native(f"2026-11-03T10:{m:02d}:00Z", "metric", run, step=m, metrics={"loss": 2.0 - m / 10})
               for m in range(1, steps + 1)]
    events.append(native("2026-11-03T10:30:00Z", "run_end", run, status="completed", step=steps))
    return events


# --- binary formats: written by code from the records' definitions ------------------------------

def _masked_crc(data: bytes) -> int:
    import google_crc32c

    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64 values take ten bytes, as protobuf writes them
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def tf_event(wall_time: float, step: int | None = None, scalars: dict[str, float] | None = None,
             file_version: str | None = None) -> bytes:
    """One tensorflow Event protocol buffer: wall_time (1, double), step (2, int64),
    file_version (3, string), summary (5) of Values with tag (1) and simple_value (2, float)."""
    data = b"\x09" + struct.pack("<d", wall_time)
    if step is not None:
        data += b"\x10" + _varint(step)
    if file_version is not None:
        data += _field(3, file_version.encode())
    if scalars:
        values = b"".join(_field(1, _field(1, tag.encode()) + b"\x15" + struct.pack("<f", value))
                          for tag, value in scalars.items())
        data += _field(5, values)
    return data


def tf_records(*events: bytes) -> bytes:
    """TFRecord framing: length, masked CRC-32C of the length, data, masked CRC-32C of the data."""
    out = b""
    for data in events:
        length = struct.pack("<Q", len(data))
        out += length + struct.pack("<I", _masked_crc(length)) + data + struct.pack("<I", _masked_crc(data))
    return out


def tf_file(steps: int = 5, tag: str = "train/loss", **first) -> bytes:
    events = [tf_event(1796244580.0, file_version="brain.Event:2")]
    events += [tf_event(1796244580.0 + s, s, {tag: 2.0 - s / 10}) for s in range(1, steps + 1)]
    if first:
        events.insert(1, tf_event(first.get("wall_time", 1796244580.5), first.get("step", 0),
                                  {tag: first.get("value", 1.0)}))
    return tf_records(*events)


def _zip_entries(data: bytes) -> tuple[list[int], list[int], int]:
    """Offsets of the local headers, of the central directory entries, and of the end record."""
    end = data.rindex(b"PK\x05\x06")
    count, _size, start = struct.unpack_from("<HII", data, end + 10)
    central, pos = [], start
    for _ in range(count):
        central.append(pos)
        name, extra, comment = struct.unpack_from("<HHH", data, pos + 28)
        pos += 46 + name + extra + comment
    local = [struct.unpack_from("<I", data, c + 42)[0] for c in central]
    return local, central, end


def zip_patch(data: bytes, how: str, member: int = -1) -> bytes:
    """A real zip archive damaged: `encrypted` sets the encryption flag of one member, `method`
    gives it compression method 99 (AES, which zipfile cannot read), `size` makes it claim 4 GB,
    `truncated` cuts the central directory in half (the end record is lost with it), `offset`
    keeps the end record but points it past the central directory."""
    buf = bytearray(data)
    local, central, end = _zip_entries(data)
    lo, ce = local[member], central[member]
    if how == "encrypted":
        for at in (lo + 6, ce + 8):
            struct.pack_into("<H", buf, at, struct.unpack_from("<H", buf, at)[0] | 0x1)
    elif how == "method":
        for at in (lo + 8, ce + 10):
            struct.pack_into("<H", buf, at, 99)
    elif how == "size":
        struct.pack_into("<I", buf, ce + 24, 0xFFFFFFF0)
        struct.pack_into("<I", buf, lo + 22, 0xFFFFFFF0)
    elif how == "truncated":
        start = central[0]
        return bytes(buf[: start + (end - start) // 2])
    elif how == "offset":
        struct.pack_into("<I", buf, end + 16, len(data) + 1000)
    else:
        raise ValueError(how)
    return bytes(buf)


def small_zip(members: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    import io

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=method) as archive:
        for name, payload in members.items():
            info = zipfile.ZipInfo(name, date_time=(2026, 11, 2, 9, 0, 0))
            info.compress_type = method
            archive.writestr(info, payload)
    return out.getvalue()


def safetensors(header: str, data: bytes = b"") -> bytes:
    raw = header.encode()
    return struct.pack("<Q", len(raw)) + raw + data


# --- SQLite in WAL mode, made the same on every run ---------------------------------------------

def _wal_sum(data: bytes, s0: int, s1: int, order: str) -> tuple[int, int]:
    words = struct.unpack(f"{order}{len(data) // 4}I", data)
    for i in range(0, len(words), 2):
        s0 = (s0 + words[i] + s1) & 0xFFFFFFFF
        s1 = (s1 + words[i + 1] + s0) & 0xFFFFFFFF
    return s0, s1


def resalt_wal(wal: Path, shm: Path | None, salts: tuple[int, int] = (0x5EED0001, 0x5EED0002)) -> None:
    """SQLite draws a WAL file's salts at random: set them to fixed values and recompute every
    checksum (of the WAL header, of each frame, and of the -shm index header), so that the corpus
    is the same bytes on every run. The format is SQLite's (https://sqlite.org/fileformat2.html)."""
    data = bytearray(wal.read_bytes())
    magic, _version, page_size = struct.unpack_from(">III", data, 0)
    order = ">" if magic & 1 else "<"
    struct.pack_into(">II", data, 16, *salts)
    s0, s1 = _wal_sum(bytes(data[:24]), 0, 0, order)
    struct.pack_into(">II", data, 24, s0, s1)
    pos = 32
    while pos + 24 + page_size <= len(data):
        struct.pack_into(">II", data, pos + 8, *salts)
        s0, s1 = _wal_sum(bytes(data[pos:pos + 8]), s0, s1, order)
        s0, s1 = _wal_sum(bytes(data[pos + 24:pos + 24 + page_size]), s0, s1, order)
        struct.pack_into(">II", data, pos + 16, s0, s1)
        pos += 24 + page_size
    wal.write_bytes(bytes(data))
    if shm is None:
        return
    index = bytearray(shm.read_bytes())
    native_order = "<" if sys.byteorder == "little" else ">"
    for copy in (0, 48):  # the index header is kept twice
        struct.pack_into(f"{native_order}II", index, copy + 24, s0, s1)  # aFrameCksum: the last frame's
        index[copy + 32:copy + 40] = data[16:24]  # aSalt: the WAL header's bytes
        c0, c1 = _wal_sum(bytes(index[copy:copy + 40]), 0, 0, native_order)
        struct.pack_into(f"{native_order}II", index, copy + 40, c0, c1)
    shm.write_bytes(bytes(index))


def wal_store(target_dir: Path, work: Path, with_shm: bool) -> None:
    """The fixture MLflow store in WAL mode with a run that exists only in the -wal file: a
    connection stays open while the files are copied, as a tracking server leaves them."""
    work.mkdir(parents=True, exist_ok=True)
    db_path = work / "mlflow.db"
    shutil.copyfile(FORMATS / "mlflow" / "mlflow.db", db_path)
    db = sqlite3.connect(db_path)
    try:
        db.execute("pragma journal_mode=wal")
        db.execute("pragma wal_autocheckpoint=0")
        new = "00000000000000000000000000000a1f"
        (old,) = db.execute("select run_uuid from runs where name = 'ml-clean'").fetchone()
        for table in ("runs", "tags", "params", "metrics", "latest_metrics"):
            db.execute(f"create temp table t as select * from {table} where run_uuid = ?", (old,))
            db.execute("update t set run_uuid = ?", (new,))
            if table == "runs":
                db.execute("update t set name = 'wal-only-run'")
            if table == "tags":
                db.execute("update t set value = 'wal-only-run' where key = 'mlflow.runName'")
            db.execute(f"insert into {table} select * from t")
            db.execute("drop table t")
        db.commit()
        target_dir.mkdir(parents=True, exist_ok=True)
        for suffix in ("", "-wal") + (("-shm",) if with_shm else ()):
            shutil.copyfile(work / f"mlflow.db{suffix}", target_dir / f"mlflow.db{suffix}")
    finally:
        db.close()
    shutil.rmtree(work)
    resalt_wal(target_dir / "mlflow.db-wal", target_dir / "mlflow.db-shm" if with_shm else None)


# --- the cases ------------------------------------------------------------------------------

Maker = Callable[[Ctx], None]
REGISTRY: list[tuple[Case, Maker]] = []


def case(category: str, name: str, description: str, **expect) -> Callable[[Maker], Maker]:
    def register(make: Maker) -> Maker:
        REGISTRY.append((Case(id=f"{category}-{name}", category=category, description=description, **expect), make))
        return make
    return register


def variants(category: str, table: list[tuple], make: Callable) -> None:
    """Register one case per row: (name, description, expectations, *arguments for make)."""
    for name, description, expect, *args in table:
        def maker(ctx: Ctx, args=tuple(args)) -> None:
            make(ctx, *args)
        REGISTRY.append((Case(id=f"{category}-{name}", category=category, description=description, **expect), maker))


OUT_FILE = "a link to a file outside LOGS; not read"
OUT_FOLDER = "a link to a folder outside LOGS; not followed"
IN_FOLDER = "a link to a folder inside LOGS; not followed"
LOOP = "a link loop; not read"
NOT_REGULAR = "not a regular file; not read"
NOT_UTF8_NAME = "its name is not valid UTF-8; not read"
TOO_DEEP = "more than 64 folders below LOGS; not read"
ALIASES = "more than 100,000 values"
SELF_ALIAS = "refers to the value that holds it"
NESTED = "nested"
LINK_OUT = "is a link that leads out of LOGS"
OUTSIDE_LOGS = "outside LOGS"


# --- links: nothing outside LOGS is read, in every format's place ------------------------------

def _state_with(token: str) -> str:
    state = json.loads((FORMATS / "hf" / "hf-clean" / "trainer_state.json").read_text(encoding="utf-8"))
    state["log_history"][0][token] = 1.0
    return json.dumps(state, indent=2)


def _adapter_with(token: str) -> str:
    config = json.loads((FORMATS / "hf" / "hf-clean" / "adapter_config.json").read_text(encoding="utf-8"))
    config["base_model_name_or_path"] = token
    return json.dumps(config, indent=2)


def _freeze_record(folder: Path, plan: bytes) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "plan.frozen.yaml").write_bytes(plan)
    record = {"sha256": hashlib.sha256(plan).hexdigest(), "frozen_at": "2026-11-01T12:00:00+00:00", "source_name": "plan.yaml"}
    (folder / "freeze.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


def _plan_with_note(token: str) -> bytes:
    return sample_plan().replace("  notes: |\n", f"  notes: |\n    {token}\n", 1).encode()


def _link_out(ctx: Ctx, base: str, rel: str, outside: Callable[[Ctx, str], Path], relative: bool = True) -> None:
    """Replace LOGS/rel (or add it) with a link to a file or folder outside LOGS holding a secret."""
    _base(ctx, base)
    ctx.link(rel, outside(ctx, ctx.secret()), relative=relative)


def _base(ctx: Ctx, base: str) -> None:
    if base == "sample":
        ctx.sample()
    elif base == "mini":
        ctx.mini()
    elif base == "bare":
        ctx.bare()
    else:
        ctx.fixture(base, into=FIXTURE_PLACES.get(base))


FIXTURE_PLACES = {"formats/hf/hf-clean": HF_RUN, "formats/mlruns": "mlruns", "formats/lightning/pl-clean": "pl-clean",
                  "formats/tensorboard/tb-clean": "tb-clean"}


def _outside_copy(ctx: Ctx, rel: str, edit: Callable[[str], str]) -> Path:
    """An edited copy, outside LOGS, of the fixture file that lies at LOGS/rel (an mlruns/ file)."""
    text = (FORMATS / rel).read_text(encoding="utf-8")
    return ctx.out(rel.replace("/", "__"), edit(text))


variants("links", [
    ("native-file-absolute", "a native event log that is an absolute link to an event log outside LOGS",
     {"problem": [f"runs/linked-1/events.jsonl: {OUT_FILE}"]},
     "sample", "runs/linked-1/events.jsonl",
     lambda c, t: c.out("events.jsonl", jsonl(*native_run("outside-run", {"note": t}))), False),
    ("native-file-relative", "a native event log that is a relative link (../../..) to an event log outside LOGS",
     {"problem": [f"runs/pilot-1/more-events.jsonl: {OUT_FILE}"]},
     "mini", "runs/pilot-1/more-events.jsonl",
     lambda c, t: c.out("events.jsonl", jsonl(*native_run("pilot-1", {"note": t}))), True),
    ("trainer-state", "a Trainer folder's trainer_state.json linked to a copy outside LOGS",
     {"problem": [f"{HF_RUN}/trainer_state.json: {OUT_FILE}"]},
     "formats/hf/hf-clean", f"{HF_RUN}/trainer_state.json", lambda c, t: c.out("trainer_state.json", _state_with(t)), True),
    ("adapter-config", "a Trainer folder's adapter_config.json linked outside LOGS",
     {"problem": [f"{HF_RUN}/adapter_config.json: {OUT_FILE}"]},
     "formats/hf/hf-clean", f"{HF_RUN}/adapter_config.json", lambda c, t: c.out("adapter_config.json", _adapter_with(t)), True),
    ("mlruns-run-name-tag", "an MLflow file store's mlflow.runName tag linked to a file outside LOGS",
     {"problem": [f"{MLRUN}/tags/mlflow.runName: {OUT_FILE}"]},
     "formats/mlruns", f"{MLRUN}/tags/mlflow.runName", lambda c, t: c.out("runName", t), True),
    ("mlruns-param", "an MLflow file store's param file linked outside LOGS",
     {"problem": [f"{MLRUN}/params/lora_r: {OUT_FILE}"]},
     "formats/mlruns", f"{MLRUN}/params/lora_r", lambda c, t: c.out("lora_r", t), True),
    ("mlruns-metric", "an MLflow file store's metric file linked outside LOGS",
     {"problem": [f"{MLRUN}/metrics/eval_loss: {OUT_FILE}"]},
     "formats/mlruns", f"{MLRUN}/metrics/eval_loss", lambda c, t: c.out("eval_loss", f"1796244595720 1.5 1\n{t} 2 3\n"), True),
    ("mlruns-run-meta", "an MLflow run's meta.yaml linked outside LOGS",
     {"problem": [f"{MLRUN}/meta.yaml: {OUT_FILE}"]},
     "formats/mlruns", f"{MLRUN}/meta.yaml",
     lambda c, t: _outside_copy(c, f"{MLRUN}/meta.yaml", lambda s: re.sub(r"(?m)^run_name: .*$", f"run_name: {t}", s)), True),
    ("metrics-csv", "a Lightning metrics.csv linked to a copy outside LOGS with an extra column",
     {"problem": [f"{PL_VERSION}/metrics.csv: {OUT_FILE}"]},
     "formats/lightning/pl-clean", f"{PL_VERSION}/metrics.csv",
     lambda c, t: c.out("metrics.csv", (FORMATS / "lightning" / PL_VERSION / "metrics.csv").read_text().replace("\n", f",{t}\n", 1)), True),
    ("hparams", "a Lightning hparams.yaml linked outside LOGS",
     {"problem": [f"{PL_VERSION}/hparams.yaml: {OUT_FILE}"]},
     "formats/lightning/pl-clean", f"{PL_VERSION}/hparams.yaml", lambda c, t: c.out("hparams.yaml", f"lr: 0.05\nmax_steps: 40\nnote: {t}\n"), True),
    ("tensorboard", "a TensorBoard event file linked to one outside LOGS whose tag is the secret",
     {"problem": [f"tb-clean/events.out.tfevents.1796244580.vm.6800.0: {OUT_FILE}"]},
     "formats/tensorboard/tb-clean", "tb-clean/events.out.tfevents.1796244580.vm.6800.0",
     lambda c, t: c.out("events.out.tfevents.1796244580.vm.6800.0", tf_file(tag=t)), True),
    ("manifest", "the deliverables manifest linked to a copy outside LOGS",
     {"problem": [f"outputs/manifest.yaml: {OUT_FILE}"]},
     "sample", "outputs/manifest.yaml",
     lambda c, t: c.out("manifest.yaml", (SAMPLE / "outputs" / "manifest.yaml").read_text().replace(
         "  path: outputs/error-analysis.md\n", f"  path: outputs/error-analysis.md\n  description: {t}\n")), True),
    ("deliverable-file", "a deliverable the manifest names (error-analysis.md) linked to a file outside LOGS",
     {"problem": [f"outputs/error-analysis.md: {OUT_FILE}"], "reason": [f"error-analysis: outputs/error-analysis.md {LINK_OUT}"]},
     "sample", "outputs/error-analysis.md", lambda c, t: c.out("error-analysis.md", f"# Error analysis\n\n{t}\n"), True),
    ("deliverable-folder", "an adapter folder the manifest names linked to a folder outside LOGS",
     {"problem": [f"outputs/lora-r64/adapter: {OUT_FOLDER}"], "reason": [f"adapter-lora-r64: outputs/lora-r64/adapter {LINK_OUT}"]},
     "sample", "outputs/lora-r64/adapter",
     lambda c, t: (c.out("adapter/adapter_config.json", _adapter_with(t)),
                   c.out("adapter/adapter_model.safetensors", (SAMPLE / "outputs/lora-r64/adapter/adapter_model.safetensors").read_bytes()))[0].parent,
     True),
    ("deliverable-member", "a file inside a deliverable folder linked outside LOGS (the folder itself is real)",
     {"problem": [f"outputs/lora-r16/adapter/notes.json: {OUT_FILE}"]},
     "sample", "outputs/lora-r16/adapter/notes.json", lambda c, t: c.out("notes.json", json.dumps({"note": t})), True),
    ("expected-ids", "the corpus ids file the plan and manifest name linked to a copy outside LOGS",
     {"problem": [f"corpus/jsum-v3.ids: {OUT_FILE}"], "reason": ["corpus/jsum-v3.ids"]},
     "sample", "corpus/jsum-v3.ids", lambda c, t: c.out("jsum-v3.ids", (SAMPLE / "corpus/jsum-v3.ids").read_text() + t + "\n"), True),
    ("folder-run", "a run folder that is a link to a folder outside LOGS holding an event log",
     {"problem": [f"runs/outside-run: {OUT_FOLDER}"]},
     "mini", "runs/outside-run",
     lambda c, t: c.out("run/events.jsonl", jsonl(*native_run("outside-run", {"note": t}))).parent, True),
    ("folder-parent", "a folder link to the folder that holds LOGS (and the secret beside it)",
     {"problem": [f"runs/up: {OUT_FOLDER}"]},
     "mini", "runs/up", lambda c, t: c.out("secret.txt", t).parent.parent, True),
    ("mlflow-db", "an MLflow SQLite store linked to a copy outside LOGS whose run is named by the secret",
     {"problem": [f"mlflow.db: {OUT_FILE}"]},
     "mini", "mlflow.db", lambda c, t: _renamed_store(c, t), True),
    ("bench-csv", "the checkpoint benchmark CSV linked to a copy outside LOGS",
     {"problem": [f"campaign/checkpoint-bench.csv: {OUT_FILE}"]},
     "sample", "campaign/checkpoint-bench.csv",
     lambda c, t: c.out("checkpoint-bench.csv", (SAMPLE / "campaign/checkpoint-bench.csv").read_text().replace("loss matches", t)), True),
    ("text-log", "a captured stdout.log linked to a copy outside LOGS",
     {"problem": [f"runs/pilot-1/stdout.log: {OUT_FILE}"]},
     "mini", "runs/pilot-1/stdout.log",
     lambda c, t: c.out("stdout.log", (SAMPLE / "runs/control-1/stdout.log").read_text() + f"Traceback (most recent call last):\nRuntimeError: {t}\n"), True),
    ("chain", "a link to a link inside LOGS that leads outside",
     {"problem": [f"runs/pilot-1/chain.jsonl: {OUT_FILE}"]},
     "mini", "runs/pilot-1/chain.jsonl",
     lambda c, t: c.link("runs/pilot-1/hop.jsonl", c.out("events.jsonl", jsonl(*native_run("pilot-1", {"note": t})))), True),
], _link_out)


def _renamed_store(ctx: Ctx, token: str) -> Path:
    path = ctx.out("mlflow.db", (FORMATS / "mlflow" / "mlflow.db").read_bytes())
    with sqlite3.connect(path) as db:
        db.execute("update runs set name = ?", (token,))
        db.execute("update tags set value = ? where key = 'mlflow.runName'", (token,))
    db.close()
    return path


@case("links", "freeze-folder", "LOGS/.reportgen (the freeze record) is a link to a folder outside LOGS",
      exit=1, message=[OUTSIDE_LOGS])
def _(c: Ctx) -> None:
    c.sample()
    _freeze_record(c.outside / "record", _plan_with_note(c.secret()))
    c.link(".reportgen", c.outside / "record")


@case("links", "freeze-plan", "the frozen plan in LOGS/.reportgen is a link to a plan outside LOGS",
      exit=1, message=[OUTSIDE_LOGS])
def _(c: Ctx) -> None:
    c.sample()
    plan = _plan_with_note(c.secret())
    _freeze_record(c.logs / ".reportgen", plan)
    c.out("plan.frozen.yaml", plan)
    c.link(".reportgen/plan.frozen.yaml", c.outside / "plan.frozen.yaml")


@case("links", "freeze-record", "the freeze record freeze.json is a link to a file outside LOGS",
      exit=1, message=[OUTSIDE_LOGS])
def _(c: Ctx) -> None:
    c.sample()
    _freeze_record(c.logs / ".reportgen", sample_plan().encode())
    token = c.secret()
    record = json.loads((c.logs / ".reportgen" / "freeze.json").read_text())
    c.out("freeze.json", json.dumps({**record, "source_name": token}))
    c.link(".reportgen/freeze.json", c.outside / "freeze.json")


@case("links", "folder-root", "a folder link to / inside LOGS", problem=[f"rootfs: {OUT_FOLDER}"])
def _(c: Ctx) -> None:
    c.mini()
    c.link("rootfs", "/")


@case("links", "folder-inside", "a folder link to LOGS itself (a walk that followed it would never end)",
      problem=[f"runs/again: {IN_FOLDER}"])
def _(c: Ctx) -> None:
    c.mini()
    c.link("runs/again", "..")


@case("links", "loop-self", "a link to itself, named like a text log", problem=[f"runs/pilot-1/self.log: {LOOP}"])
def _(c: Ctx) -> None:
    c.mini()
    c.link("runs/pilot-1/self.log", "self.log")


@case("links", "loop-folders", "two folder links pointing at each other",
      problem=["runs/x: ", "runs/y: "])
def _(c: Ctx) -> None:
    c.mini()
    c.link("runs/x", "y")
    c.link("runs/y", "x")


@case("links", "dangling-outside", "a text log linked to a file outside LOGS that does not exist",
      problem=["runs/pilot-1/train.log: "])
def _(c: Ctx) -> None:
    c.mini()
    c.link("runs/pilot-1/train.log", c.outside / "missing.log")


@case("links", "dangling-trainer-state", "a Trainer folder whose trainer_state.json is a dangling link",
      problem=[f"{HF_RUN}/trainer_state.json: "])
def _(c: Ctx) -> None:
    c.fixture("formats/hf/hf-clean", HF_RUN)
    c.link(f"{HF_RUN}/trainer_state.json", "gone.json")


@case("links", "dev-zero", "a captured log that is a link to /dev/zero (endless if read)",
      problem=[f"runs/pilot-1/stdout.log: {OUT_FILE}"], isolate=True)
def _(c: Ctx) -> None:
    c.mini()
    c.link("runs/pilot-1/stdout.log", "/dev/zero")


@case("links", "dev-urandom", "a TensorBoard file name that is a link to /dev/urandom",
      problem=[f"tb/events.out.tfevents.1796244580.vm.1.0: {OUT_FILE}"], isolate=True)
def _(c: Ctx) -> None:
    c.mini()
    c.link("tb/events.out.tfevents.1796244580.vm.1.0", "/dev/urandom")


@case("links", "outside-pipe", "a train.log that is a link to a named pipe outside LOGS (nobody writes to it)",
      problem=[f"runs/pilot-1/train.log: {OUT_FILE}"], isolate=True)
def _(c: Ctx) -> None:
    c.mini()
    c.outside.mkdir(parents=True, exist_ok=True)
    os.mkfifo(c.outside / "pipe")
    c.link("runs/pilot-1/train.log", c.outside / "pipe")


# --- filesystem oddities ------------------------------------------------------------------

def _fifo(ctx: Ctx, rel: str) -> None:
    path = ctx.logs / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()
    os.mkfifo(path)


variants("fs", [
    ("fifo-events", "a named pipe called events.jsonl in a run folder", {"problem": [f"runs/pilot-1/more.jsonl: {NOT_REGULAR}"], "isolate": True},
     "mini", "runs/pilot-1/more.jsonl"),
    ("fifo-metrics-csv", "a Lightning metrics.csv that is a named pipe", {"problem": [f"{PL_VERSION}/metrics.csv: {NOT_REGULAR}"], "isolate": True},
     "formats/lightning/pl-clean", f"{PL_VERSION}/metrics.csv"),
    ("fifo-mlflow-db", "a named pipe called mlflow.db", {"problem": [f"mlflow.db: {NOT_REGULAR}"], "isolate": True},
     "mini", "mlflow.db"),
    ("fifo-deliverable", "a deliverable the manifest names replaced by a named pipe",
     {"problem": [f"outputs/error-analysis.md: {NOT_REGULAR}"], "reason": ["error-analysis: "], "isolate": True},
     "sample", "outputs/error-analysis.md"),
], lambda c, base, rel: (_base(c, base), _fifo(c, rel)))


@case("fs", "fifo-plan", "PLAN is a named pipe (nothing will ever be written to it)", exit=1,
      message=["not a regular file"], isolate=True)
def _(c: Ctx) -> None:
    c.sample(runs=False)
    c.plan.unlink()
    os.mkfifo(c.plan)


@case("fs", "socket", "a Unix socket in a run folder", problem=[f"runs/pilot-1/control.sock: {NOT_REGULAR}"])
def _(c: Ctx) -> None:
    c.mini()
    here = os.getcwd()
    os.chdir(c.logs / "runs" / "pilot-1")  # a socket's path is limited to about 100 bytes: bind it by name
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind("control.sock")
    finally:
        os.chdir(here)


@case("fs", "mode-000-file", "a native event log with mode 000", problem=[f"{PILOT}: cannot be read"], needs_non_root=True)
def _(c: Ctx) -> None:
    c.mini()
    os.chmod(c.logs / PILOT, 0)


@case("fs", "mode-000-folder", "a run folder with mode 000", problem=["runs/control-1: cannot be listed"], needs_non_root=True)
def _(c: Ctx) -> None:
    c.sample()
    os.chmod(c.logs / "runs" / "control-1", 0)


@case("fs", "mode-000-trainer-state", "a trainer_state.json with mode 000",
      problem=[f"{HF_RUN}/trainer_state.json: cannot be read"], needs_non_root=True)
def _(c: Ctx) -> None:
    c.fixture("formats/hf/hf-clean", HF_RUN)
    os.chmod(c.logs / HF_RUN / "trainer_state.json", 0)


def _bad_name(ctx: Ctx, folder: str, name: bytes, data: bytes, base: str = "mini") -> None:
    _base(ctx, base)
    where = os.path.join(os.fsencode(ctx.logs / folder), name)
    os.makedirs(os.path.dirname(where), exist_ok=True)
    with open(where, "wb") as handle:
        handle.write(data)


variants("fs", [
    ("non-utf8-file", "a captured log whose name is not UTF-8, holding a traceback",
     {"problem": [f"runs/pilot-1/stdout-\ufffd.log: {NOT_UTF8_NAME}"]},
     "runs/pilot-1", b"stdout-\xff.log", b"Traceback (most recent call last):\nRuntimeError: boom\n"),
    ("non-utf8-folder", "a run folder whose name is not UTF-8, holding an event log",
     {"problem": [f"runs/run-\ufffd\ufffd: {NOT_UTF8_NAME}"]},
     "runs", b"run-\xfe\xfd/events.jsonl", jsonl(*native_run("odd-1")).encode()),
    ("non-utf8-checkpoint", "a checkpoint folder of a Trainer run whose name is not UTF-8",
     {"problem": [f"{HF_RUN}/checkpoint-\ufffd: {NOT_UTF8_NAME}"]},
     HF_RUN, b"checkpoint-\xff/trainer_state.json", (FORMATS / "hf/hf-clean/checkpoint-10/trainer_state.json").read_bytes(),
     "formats/hf/hf-clean"),
    ("non-utf8-mlruns-metric", "an MLflow metric file whose name (the metric key) is not UTF-8",
     {"problem": [f"{MLRUN}/metrics/loss-\ufffd: {NOT_UTF8_NAME}"]},
     f"{MLRUN}/metrics", b"loss-\xff", b"1796244595720 1.5 1\n", "formats/mlruns"),
], _bad_name)


def _mkdirs_fd(root: Path, names: list[str]) -> int:
    """Folders one inside the next, made relative to open folders (a path longer than PATH_MAX
    cannot be named whole); returns an open descriptor of the deepest."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for name in names:
        os.mkdir(name, dir_fd=fd)
        child = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = child
    return fd


def _write_at(fd: int, name: str, data: bytes) -> None:
    out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=fd)
    try:
        os.write(out, data)
    finally:
        os.close(out)
        os.close(fd)


@case("fs", "deep-1100", "a tree 1,100 folders deep with a train.log at the bottom",
      problem=[TOO_DEEP])
def _(c: Ctx) -> None:
    c.mini()
    _write_at(_mkdirs_fd(c.logs, ["deep"] + ["d"] * 1099), "train.log", b"step 1 loss 2.0\n")


@case("fs", "path-10000", "a file whose path is over 10,000 characters (50 folders of 200-character names)",
      problem=["long/"])
def _(c: Ctx) -> None:
    c.mini()
    names = ["long"] + [f"{i:03d}" + "x" * 197 for i in range(50)]
    _write_at(_mkdirs_fd(c.logs, names), "train.log", b"step 1 loss 2.0\n")


@case("fs", "run-id-500-native", "a native run id of 500 characters beside a run of the sample", runs=["r" * 500])
def _(c: Ctx) -> None:
    c.mini()
    c.put("runs/long-run/events.jsonl", jsonl(*native_run("r" * 500)))


@case("fs", "run-id-255-trainer", "a Trainer output folder named with 255 characters (the longest name a folder has)",
      runs=["h" * 255])
def _(c: Ctx) -> None:
    c.fixture("formats/hf/hf-clean", "out/" + "h" * 255)


@case("fs", "run-id-500-mlflow", "an MLflow run name (mlflow.runName) of 500 characters", runs=["m" * 500])
def _(c: Ctx) -> None:
    c.fixture("formats/mlruns", "mlruns")
    c.put(f"{MLRUN}/tags/mlflow.runName", "m" * 500)


@case("fs", "run-id-250-lightning", "a Lightning logger folder named with 250 characters", runs=["p" * 250 + "/version_0"])
def _(c: Ctx) -> None:
    c.fixture("formats/lightning/pl-clean", "p" * 250)


@case("fs", "newline-name", "a captured log whose name holds a newline")
def _(c: Ctx) -> None:
    c.mini()
    c.put("runs/pilot-1/std\nout.log", "Traceback (most recent call last):\nRuntimeError: boom\n")


@case("fs", "escape-name", "a captured log whose name holds a terminal escape sequence")
def _(c: Ctx) -> None:
    c.mini()
    c.put("runs/pilot-1/\x1b[2J\x1b[31mred.log", "step 1 loss 2.0\n")


# --- YAML bombs -----------------------------------------------------------------------------

SIZES = {"111k": (5, 10), "387m": (9, 9), "1e26": (20, 20)}  # values with every alias expanded


def _plan_bomb(ctx: Ctx, prefix: str) -> None:
    ctx.sample(runs=False)
    ctx.plan_text(prefix + sample_plan())


for size, (levels, width) in SIZES.items():
    case("yaml", f"plan-laughs-{size}", f"a plan whose aliases expand to about {size} values ({levels} levels of {width})",
         exit=1, message=["plan.yaml:", ALIASES])(lambda c, lv=levels, w=width: _plan_bomb(c, laughs(lv, w)))

case("yaml", "plan-self-alias", "a plan with an alias inside the list it names", exit=1,
     message=["plan.yaml:", SELF_ALIAS])(lambda c: _plan_bomb(c, "loop: &loop [1, *loop]\n"))
case("yaml", "plan-merge-self", "a plan with a mapping that merges itself (<<: *self)", exit=1,
     message=["plan.yaml:"])(lambda c: _plan_bomb(c, "loop: &loop {a: 1, <<: *loop}\n"))


def _file_bomb(ctx: Ctx, base: str, rel: str, text: str, where: str = "prefix") -> None:
    _base(ctx, base)
    path = ctx.logs / rel
    if where == "prefix":
        path.write_text(text + path.read_text(encoding="utf-8"), encoding="utf-8")
    elif where == "suffix":
        path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")
    else:
        write(path, text)


HPARAMS = f"{PL_VERSION}/hparams.yaml"
RUN_META = f"{MLRUN}/meta.yaml"
EXPERIMENT_META = "mlruns/140191543709086989/meta.yaml"
variants("yaml", [
    ("hparams-laughs-387m", "a Lightning hparams.yaml of 9 levels of 9 aliases", {"problem": [f"{HPARAMS}: not read", ALIASES]},
     "formats/lightning/pl-clean", HPARAMS, laughs(9, 9), "whole"),
    ("hparams-self-alias", "hparams.yaml with an alias inside what it names", {"problem": [f"{HPARAMS}: not read", SELF_ALIAS]},
     "formats/lightning/pl-clean", HPARAMS, "loop: &loop [1, *loop]\n", "suffix"),
    ("manifest-laughs-387m", "the deliverables manifest with 9 levels of 9 aliases before its list",
     {"problem": ["outputs/manifest.yaml: not read", ALIASES]}, "sample", "outputs/manifest.yaml", laughs(9, 9), "prefix"),
    ("manifest-self-alias", "the deliverables manifest with a self-referencing alias",
     {"problem": ["outputs/manifest.yaml: not read", SELF_ALIAS]}, "sample", "outputs/manifest.yaml", "loop: &loop [1, *loop]\n", "prefix"),
    ("mlflow-run-meta-laughs", "an MLflow run's meta.yaml with 9 levels of 9 aliases after its keys",
     {"problem": [f"{RUN_META}: not read", ALIASES]}, "formats/mlruns", RUN_META, laughs(9, 9), "suffix"),
    ("mlflow-experiment-meta-laughs", "an MLflow experiment's meta.yaml with 9 levels of 9 aliases",
     {}, "formats/mlruns", EXPERIMENT_META, laughs(9, 9), "suffix"),
], _file_bomb)


def _add_deliverable(ctx: Ctx, rel: str, data: bytes | str, ident: str = "extra", kind: str = "error_analysis") -> None:
    """A file under LOGS and a manifest entry naming it."""
    ctx.put(rel, data)
    manifest = ctx.logs / "outputs" / "manifest.yaml"
    manifest.write_text(manifest.read_text(encoding="utf-8") + f"- id: {ident}\n  kind: {kind}\n  path: {rel}\n", encoding="utf-8")


@case("yaml", "deliverable-laughs", "a YAML deliverable the manifest names, of 9 levels of 9 aliases",
      reason=["extra: outputs/extra.yaml cannot be reloaded", ALIASES])
def _(c: Ctx) -> None:
    c.sample()
    _add_deliverable(c, "outputs/extra.yaml", laughs(9, 9))


@case("yaml", "frozen-plan-laughs", "a freeze record whose frozen plan is 9 levels of 9 aliases (its SHA-256 matches)",
      exit=1, message=[ALIASES])
def _(c: Ctx) -> None:
    c.sample(runs=False)
    _freeze_record(c.logs / ".reportgen", (laughs(9, 9) + sample_plan()).encode())


# --- deep nesting (each built in a process of its own: a parser may crash the process) ----------

def _deep(category_name: str, description: str, **expect):
    return case("deep", category_name, description, isolate=True, **expect)


@_deep("native-metric-5000", "a native metric value nested 5,000 lists deep, among the pilot run's lines",
       problem=[f"{PILOT}: nested too deeply"])
def _(c: Ctx) -> None:
    c.mini()
    line = ('{"ts":"2026-11-02T15:41:00.000+09:00","type":"metric","run":"pilot-1","step":11,"metrics":{"loss":'
            + deep_json(5000) + "}}")
    c.insert_lines(PILOT, 3, [line])


@_deep("native-config-2000", "a run_start whose config is 2,000 objects deep", problem=["runs/deep-1/events.jsonl: "])
def _(c: Ctx) -> None:
    c.mini()
    lines = jsonl(*native_run("deep-1")).splitlines()
    lines[0] = '{"ts":"2026-11-03T10:00:00Z","type":"run_start","run":"deep-1","config":' + deep_object(2000) + "}"
    c.put("runs/deep-1/events.jsonl", "\n".join(lines) + "\n")


@_deep("trainer-state-3000", "a log_history entry of trainer_state.json nested 3,000 deep",
       problem=[f"{HF_RUN}/trainer_state.json: not read: nested too deep"])
def _(c: Ctx) -> None:
    c.fixture("formats/hf/hf-clean", HF_RUN)
    c.replace(f"{HF_RUN}/trainer_state.json", '"log_history": [', '"log_history": [{"loss": ' + deep_json(3000) + ', "step": 1}, ')


@_deep("adapter-config-hf-3000", "a Trainer folder's adapter_config.json nested 3,000 deep",
       problem=[f"{HF_RUN}/adapter_config.json: not read: nested too deep"])
def _(c: Ctx) -> None:
    c.fixture("formats/hf/hf-clean", HF_RUN)
    c.replace(f"{HF_RUN}/adapter_config.json", '"alpha_pattern": {}', '"alpha_pattern": ' + deep_json(3000))


@_deep("adapter-config-deliverable-3000", "the adapter_config.json of a delivered adapter nested 3,000 deep",
       reason=["adapter-lora-r16: "])
def _(c: Ctx) -> None:
    c.sample()
    write(c.logs / "outputs/lora-r16/adapter/adapter_config.json", '{"r": ' + deep_json(3000) + "}")


@_deep("manifest-json-4000", "a JSON deliverables manifest with an entry nested 4,000 deep",
       problem=["outputs/manifest.json: not read", NESTED])
def _(c: Ctx) -> None:
    c.sample()
    (c.logs / "outputs" / "manifest.yaml").unlink()
    c.put("outputs/manifest.json", '{"deliverables": [{"id": "x", "kind": "predictions", "path": ' + deep_json(4000) + "}]}")


@_deep("safetensors-header-5000", "a delivered adapter whose safetensors header is JSON nested 5,000 deep",
       reason=["adapter-lora-r16: outputs/lora-r16/adapter/adapter_model.safetensors cannot be reloaded"])
def _(c: Ctx) -> None:
    c.sample()
    write(c.logs / "outputs/lora-r16/adapter/adapter_model.safetensors", safetensors('{"__metadata__": ' + deep_json(5000) + "}"))


@_deep("deliverable-jsonl-5000", "a predictions JSONL deliverable with one line nested 5,000 deep",
       reason=["predictions-control: outputs/control/predictions.jsonl cannot be reloaded"])
def _(c: Ctx) -> None:
    c.sample()
    path = c.logs / "outputs/control/predictions.jsonl"
    path.write_text(path.read_text(encoding="utf-8") + '{"id": ' + deep_json(5000) + "}\n", encoding="utf-8")


@_deep("predictions-json-5000", "a predictions JSON deliverable whose predictions list is nested 5,000 deep",
       reason=["predictions-control: outputs/control/predictions.json cannot be reloaded"])
def _(c: Ctx) -> None:
    c.sample()
    (c.logs / "outputs/control/predictions.jsonl").unlink()
    c.put("outputs/control/predictions.json", '{"predictions": ' + deep_json(5000) + "}")
    c.replace("outputs/manifest.yaml", "outputs/control/predictions.jsonl", "outputs/control/predictions.json")


@_deep("bench-jsonl-5000", "a checkpoint benchmark JSONL whose second record is nested 5,000 deep",
       problem=["bench.jsonl: "], records={"bench.jsonl": 2})
def _(c: Ctx) -> None:
    c.bare()
    good = {"checkpoint": "ckpt/a", "operation": "save", "time": "2026-11-03T10:00:00Z", "seconds": 30.0}
    c.put("bench.jsonl", json.dumps(good) + "\n" + '{"checkpoint": "ckpt/b", "operation": "save", "x": ' + deep_json(5000) + "}\n"
          + json.dumps({**good, "checkpoint": "ckpt/c"}) + "\n")


@_deep("plan-5000", "a plan with a value nested 5,000 lists deep", exit=1, message=["plan.yaml:", NESTED])
def _(c: Ctx) -> None:
    c.sample(runs=False)
    c.plan_text(sample_plan().replace("  notes: |\n", "  tags: " + deep_json(5000) + "\n  notes: |\n", 1))


@_deep("hparams-2000", "a Lightning hparams.yaml with a flow value nested 2,000 deep", problem=[f"{HPARAMS}: not read", NESTED])
def _(c: Ctx) -> None:
    c.fixture("formats/lightning/pl-clean", "pl-clean")
    path = c.logs / HPARAMS
    path.write_text(path.read_text() + "deep: " + deep_json(2000) + "\n")


@_deep("mlflow-meta-2000", "an MLflow run's meta.yaml with a value nested 2,000 deep", problem=[f"{RUN_META}: not read", NESTED])
def _(c: Ctx) -> None:
    c.fixture("formats/mlruns", "mlruns")
    path = c.logs / RUN_META
    path.write_text(path.read_text() + "deep: " + deep_json(2000) + "\n")


@_deep("freeze-record-5000", "a freeze record (freeze.json) nested 5,000 deep", exit=1, message=["freeze.json"])
def _(c: Ctx) -> None:
    c.sample(runs=False)
    _freeze_record(c.logs / ".reportgen", sample_plan().encode())
    write(c.logs / ".reportgen" / "freeze.json", deep_json(5000))


# --- huge numbers, non-finite and negative values ----------------------------------------------

METRIC = '{{"ts":"2026-11-02T15:48:00.000+09:00","type":"metric","run":"pilot-1","step":{step},"metrics":{{"loss":{loss},"grad_norm":1.1}}}}'
SAVE = ('{{"ts":"2026-11-02T15:49:00.000+09:00","type":"checkpoint_save","run":"pilot-1","step":15,"path":"ckpt/pilot-1/checkpoint-15",'
        '"seconds":{seconds},"bytes":{bytes},"state":["model","optimizer","scheduler","rng","progress"]}}')
EVAL = ('{{"ts":"2026-11-02T15:50:00.000+09:00","type":"eval","run":"pilot-1","step":15,"metrics":{{"eval_loss":1.9,"eval_rougeL":{value}}},'
        '"seconds":{seconds}}}')
PILOT_LINE = f"{PILOT}: "  # a problem of the pilot's event log (it has none in the sample)


def _native_line(ctx: Ctx, line: str) -> None:
    ctx.mini()
    ctx.insert_lines(PILOT, 3, [line])


variants("numbers", [
    ("native-loss-400-digits", "a native metric value that is an integer of 400 digits", {},
     METRIC.format(step=15, loss=DIGITS_400)),
    ("native-loss-1e400", "a native metric value 1e400 (past every float)", {},
     METRIC.format(step=15, loss="1e400")),
    ("native-loss-nonfinite", "native metric values Infinity, -Infinity and NaN (data, not damage)", {},
     METRIC.format(step=15, loss="Infinity").replace('"grad_norm":1.1', '"grad_norm":NaN,"lr":-Infinity')),
    ("native-step-400-digits", "a native metric step that is an integer of 400 digits", {"problem": [PILOT_LINE]},
     METRIC.format(step=DIGITS_400, loss=2.0)),
    ("native-step-negative", "a native metric at step -5", {}, METRIC.format(step=-5, loss=2.0)),
    ("native-step-int64-max", "a native metric at step 2**63 - 1", {"problem": [PILOT_LINE]}, METRIC.format(step=2 ** 63 - 1, loss=2.0)),
    ("native-seconds-negative", "a checkpoint_save that took -30 seconds", {"problem": [PILOT_LINE]},
     SAVE.format(seconds=-30, bytes=1000)),
    ("native-bytes-400-digits", "a checkpoint_save of 10**400 bytes", {},
     SAVE.format(seconds=30, bytes=DIGITS_400)),
    ("native-eval-quality-inf", "an evaluation whose quality metric is Infinity (data, not damage)", {},
     EVAL.format(value="Infinity", seconds=60)),
], _native_line)


def _raw_json(record: dict, raw: dict[str, str]) -> str:
    """A JSON object with some values written as raw text (1e400, NaN, 400 digits)."""
    parts = [f'"{k}": {raw[k] if k in raw else json.dumps(v)}' for k, v in record.items()]
    parts += [f'"{k}": {v}' for k, v in raw.items() if k not in record]
    return "{" + ", ".join(parts) + "}"


def _bench(ctx: Ctx, damaged: dict[str, str], csv: bool = False) -> None:
    """A benchmark file of three records (JSONL or CSV), the second one damaged."""
    ctx.bare()
    good = {"checkpoint": "ckpt/a", "operation": "save", "time": "2026-11-03T10:00:00Z", "seconds": 30.0, "bytes": 1000, "step": 100}
    if csv:
        header = list(good)
        row = ",".join(str(v) for v in good.values())
        bad = ",".join(str({**good, **damaged}[k]) for k in header)
        ctx.put("checkpoint-bench.csv", ",".join(header) + "\n" + row + "\n" + bad + "\n" + row.replace("ckpt/a", "ckpt/c") + "\n")
    else:
        ctx.put("bench.jsonl", json.dumps(good) + "\n" + _raw_json({**good, "checkpoint": "ckpt/b"}, damaged) + "\n"
                + json.dumps({**good, "checkpoint": "ckpt/c"}) + "\n")


BENCH_JSONL, BENCH_CSV = "bench.jsonl: ", "checkpoint-bench.csv: "
variants("numbers", [
    ("bench-jsonl-seconds-1e400", "a benchmark record that took 1e400 seconds", {"problem": [BENCH_JSONL]}, {"seconds": "1e400"}),
    ("bench-jsonl-seconds-negative", "a benchmark record that took -1 seconds", {"problem": [BENCH_JSONL]}, {"seconds": "-1"}),
    ("bench-csv-seconds-inf", "a benchmark CSV row that took inf seconds", {"problem": [BENCH_CSV]}, {"seconds": "inf"}, True),
    ("bench-csv-seconds-400-digits", "a benchmark CSV row that took 10**400 seconds", {"problem": [BENCH_CSV]}, {"seconds": DIGITS_400}, True),
], _bench)


def _trainer_state(ctx: Ctx, edit: Callable[[str], str]) -> None:
    ctx.fixture("formats/hf/hf-clean", HF_RUN)
    path = ctx.logs / HF_RUN / "trainer_state.json"
    path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")


STATE = f"{HF_RUN}/trainer_state.json: "
variants("numbers", [
    ("hf-global-step-400-digits", "trainer_state.json with a global_step of 400 digits", {},
     lambda s: s.replace('"global_step": 30', f'"global_step": {DIGITS_400}')),
    ("hf-loss-1e400", "a trainer_state.json log entry with loss 1e400", {},
     lambda s: s.replace('"loss": 3.906522750854492', '"loss": 1e400', 1)),
    ("hf-step-negative", "a trainer_state.json log entry at step -1", {},
     lambda s: s.replace('"step": 5\n', '"step": -1\n', 1)),
], _trainer_state)


def _metrics_csv(ctx: Ctx, row: str, where: int = 3) -> None:
    ctx.fixture("formats/lightning/pl-clean", "pl-clean")
    path = ctx.logs / PL_VERSION / "metrics.csv"
    lines = path.read_text(encoding="utf-8").split("\n")
    path.write_text("\n".join(lines[:where - 1] + [row] + lines[where - 1:]), encoding="utf-8")


METRICS_CSV = f"{PL_VERSION}/metrics.csv: "
variants("numbers", [
    ("csv-step-400-digits", "a Lightning metrics.csv row at a step of 400 digits", {"problem": [METRICS_CSV]}, f"0,{DIGITS_400},,0.5,"),
    ("csv-value-nonfinite", "Lightning metrics.csv values inf, -inf and nan (data)", {}, "0,5,inf,-inf,nan"),
], _metrics_csv)


def _text_log(ctx: Ctx, line: str) -> None:
    ctx.bare()
    lines = [f"step {s}/100 loss={2.0 - s / 10:.2f}" for s in range(1, 6)]
    ctx.put("runs/txt-1/oom-1.log", "\n".join(lines[:2] + [line] + lines[2:]) + "\n")


variants("numbers", [
    ("text-loss-1e400", "a text log line `step 3/100 loss=1e400`", {}, "step 3/100 loss=1e400"),
    ("text-step-400-digits", "a text log line at a step of 400 digits", {}, f"step {DIGITS_400}/100 loss=1.5"),
], _text_log)


def _mlruns_metric(ctx: Ctx, line: str, key: str = "loss") -> None:
    ctx.fixture("formats/mlruns", "mlruns")
    path = ctx.logs / MLRUN / "metrics" / key
    lines = path.read_text(encoding="utf-8").split("\n")
    path.write_text("\n".join(lines[:1] + [line] + lines[1:]), encoding="utf-8")


MLRUNS_LOSS = f"{MLRUN}/metrics/loss: "
variants("numbers", [
    ("mlruns-timestamp-400-digits", "an MLflow metric line whose timestamp has 400 digits", {"problem": [MLRUNS_LOSS], "runs": ["mlf-clean"]},
     f"{DIGITS_400} 1.5 4"),
    ("mlruns-step-400-digits", "an MLflow metric line at a step of 400 digits", {"problem": [MLRUNS_LOSS], "runs": ["mlf-clean"]},
     f"1796244595722 1.5 {DIGITS_400}"),
], _mlruns_metric)


def _hparams(ctx: Ctx, text: str) -> None:
    ctx.fixture("formats/lightning/pl-clean", "pl-clean")
    write(ctx.logs / HPARAMS, text)


variants("numbers", [
    ("hparams-max-steps-400-digits", "hparams.yaml with max_steps of 400 digits", {}, f"lr: 0.05\nmax_steps: {DIGITS_400}\n"),
], _hparams)


TB = "tb/events.out.tfevents.1796244580.vm.1.0"


def _tensorboard(ctx: Ctx, **first) -> None:
    ctx.bare()
    ctx.put(TB, tf_file(**first))


variants("numbers", [
    ("tb-wall-time-inf", "a TensorBoard event whose wall_time is inf", {"problem": [f"{TB}: "]}, {"wall_time": float("inf")}),
    ("tb-step-int64-max", "a TensorBoard event at step 2**63 - 1", {"problem": [f"{TB}: "]}, {"step": 2 ** 63 - 1}),
], lambda c, first: _tensorboard(c, **first))


def _sqlite_edit(ctx: Ctx, *statements: str) -> None:
    ctx.bare()
    path = ctx.put("mlflow.db", (FORMATS / "mlflow" / "mlflow.db").read_bytes())
    db = sqlite3.connect(path)
    db.execute("pragma ignore_check_constraints = 1")  # values MLflow's schema would refuse, as another writer leaves them
    with db:
        for statement in statements:
            db.execute(statement)
    db.close()


FIRST_METRIC = "where rowid = (select min(rowid) from metrics)"
variants("numbers", [
    ("sqlite-step-400-digits", "an MLflow SQLite metric whose step is text of 400 digits", {"problem": ["mlflow.db: "]},
     f"update metrics set step = '{DIGITS_400}' {FIRST_METRIC}"),
], _sqlite_edit)


# --- dates at the ends of the calendar ----------------------------------------------------------

def _native_times(ctx: Ctx, rel: str, line: str, at: int = 3) -> None:
    ctx.sample() if rel.startswith("campaign/") else ctx.mini()
    ctx.insert_lines(rel, at, [line])


def _dated_run(ctx: Ctx, where: int, ts: str) -> None:
    """A new native run beside the pilot run whose line `where` (0: run_start, -1: run_end) has the time ts (raw JSON)."""
    ctx.mini()
    lines = [json.dumps(e) for e in native_run("dated-1")]
    lines[where] = re.sub(r'"ts": "[^"]*"', f'"ts": {ts}', lines[where], count=1)
    ctx.put("runs/dated-1/events.jsonl", "\n".join(lines) + "\n")


DATED = "runs/dated-1/events.jsonl: "
variants("dates", [
    ("native-run-start-0001", "a run_start at 0001-01-01T00:00:00Z", {"problem": [DATED]}, 0, '"0001-01-01T00:00:00Z"'),
    ("native-run-end-9999", "a run_end at 9999-12-31T23:59:59Z", {"problem": [DATED]}, -1, '"9999-12-31T23:59:59Z"'),
    ("native-metric-year-10000", "a metric at 10000-01-01T00:00:00Z (a year of five digits)", {"problem": [DATED]}, 2,
     '"10000-01-01T00:00:00Z"'),
    ("native-ts-unix-1e12", "a run_start whose ts is the number 1e12, not a string", {"problem": [DATED]}, 0, "1e12"),
    ("native-ts-minus-1", "a run_end whose ts is -1", {"problem": [DATED]}, -1, "-1"),
], _dated_run)

variants("dates", [
    ("native-step-start-9999", "a schedule step_start at 9999-12-31", {"problem": ["campaign/events.jsonl: "]}, "campaign/events.jsonl",
     '{"ts":"9999-12-31T23:59:59Z","type":"step_start","step_id":"pilot"}'),
], _native_times)


def _bench_time(ctx: Ctx, time: str) -> None:
    _bench(ctx, {"time": time})


variants("dates", [
    ("bench-0001", "a benchmark record at 0001-01-01", {"problem": [BENCH_JSONL]}, '"0001-01-01T00:00:00Z"'),
    ("bench-9999", "a benchmark record at 9999-12-31T23:59:59Z", {"problem": [BENCH_JSONL]}, '"9999-12-31T23:59:59Z"'),
    ("bench-10000", "a benchmark record in the year 10000", {"problem": [BENCH_JSONL]}, '"10000-01-01T00:00:00Z"'),
    ("bench-unix-1e12", "a benchmark record whose time is the number 1e12", {"problem": [BENCH_JSONL]}, "1e12"),
    ("bench-minus-1", "a benchmark record whose time is -1", {"problem": [BENCH_JSONL]}, "-1"),
], _bench_time)


def _run_meta(ctx: Ctx, key: str, value: str) -> None:
    ctx.fixture("formats/mlruns", "mlruns")
    path = ctx.logs / RUN_META
    path.write_text(re.sub(rf"(?m)^{key}: .*$", f"{key}: {value}", path.read_text(encoding="utf-8")), encoding="utf-8")


variants("dates", [
    ("mlruns-start-1e15", "an MLflow run that started at 1e15 ms (the year 33658)", {"problem": [f"{RUN_META}: "]}, "start_time", "1000000000000000"),
    ("mlruns-end-year-10000", "an MLflow run that ended at 253402300800000 ms (10000-01-01)", {"problem": [f"{RUN_META}: "]},
     "end_time", "253402300800000"),
], _run_meta)

variants("dates", [
    ("mlruns-metric-time-minus-1", "an MLflow metric line at timestamp -1", {"problem": [MLRUNS_LOSS]}, "-1 1.5 4"),
], _mlruns_metric)

variants("dates", [
    ("sqlite-start-1e18", "an MLflow SQLite run that started at 1e18 ms", {"problem": ["mlflow.db: "]},
     "update runs set start_time = 1000000000000000000 where name = 'ml-clean'"),
    ("sqlite-metric-year-10000", "an MLflow SQLite metric at 253402300800000 ms (10000-01-01)", {"problem": ["mlflow.db: "]},
     f"update metrics set timestamp = 253402300800000 {FIRST_METRIC}"),
], _sqlite_edit)

variants("dates", [
    ("tb-wall-time-1e12", "a TensorBoard event at wall_time 1e12 s (the year 33658)", {"problem": [f"{TB}: "]}, {"wall_time": 1e12}),
], lambda c, first: _tensorboard(c, **first))


# --- plan values no campaign has ------------------------------------------------------------

def _plan_edit(ctx: Ctx, old: str, new: str) -> None:
    ctx.sample(runs=False)
    text = sample_plan()
    if old not in text:
        raise AssertionError(f"{ctx.case.id}: {old!r} not in the sample plan")
    ctx.plan_text(text.replace(old, new, 1))


def _line_of(text: str) -> str:
    return f"plan.yaml:{sample_plan()[: sample_plan().index(text)].count(chr(10)) + 1}:"


PLAN_VALUES = [
    ("price-inf", "price: 47.14", "price: .inf"),
    ("price-1e400", "price: 47.14", "price: 1.0e+400"),
    ("price-negative", "price: 47.14", "price: -1"),
    ("amount-inf", "amount: 120.00", "amount: .inf"),
    ("threshold-nan", "threshold: 0.32", "threshold: .nan"),
    ("hours-inf", "hours: 3\n", "hours: .inf\n"),
    ("hours-1e300", "hours: 3\n", "hours: 1e300\n"),
    ("hours-negative", "hours: 3\n", "hours: -1\n"),
    ("days-5000000", "days: 3", "days: 5000000"),
    ("days-zero", "days: 3", "days: 0"),
    ("gpus-100000000", "gpus: 1", "gpus: 100000000"),
    ("start-9999", "start: 2026-11-02T09:00:00+09:00", "start: 9999-12-30T09:00:00+09:00"),
    ("start-0001", "start: 2026-11-02T09:00:00+09:00", "start: 0001-01-01T09:00:00+09:00"),
    ("start-10000", "start: 2026-11-02T09:00:00+09:00", "start: 10000-01-01T09:00:00+09:00"),
    ("corpus-size-400-digits", "size: 2000", f"size: {DIGITS_400}"),
    ("interval-1e400", "interval_minutes: 30", "interval_minutes: 1.0e+400"),
    ("interruptions-inf", "mean_hours_between_interruptions: 24", "mean_hours_between_interruptions: .inf"),
    ("steps-per-second-nan", "steps_per_second: 0.1   # 3,000 steps", "steps_per_second: .nan   # 3,000 steps"),
    ("catalogue-price-inf", "days: 7, price: 110}", "days: 7, price: .inf}"),
    ("after-step-400-digits", "after_step: 1500", f"after_step: {DIGITS_400}"),
]
for name, old, new in PLAN_VALUES:
    case("plan", name, f"the sample plan with `{new.strip()}` for `{old.strip()}`", exit=1,
         message=[_line_of(old)])(lambda c, o=old, n=new: _plan_edit(c, o, n))

case("plan", "settings-inf", "a variant setting lr: .inf (settings are free values shown as written)",
     runs=list(SAMPLE_RUNS))(lambda c: _plan_edit(c, "    runs: [\"lora-r64-*\"]\n", "    runs: [\"lora-r64-*\"]\n    settings: {lr: .inf, rank: "
                                                  + DIGITS_400 + "}\n"))


def _plan_bytes(ctx: Ctx, data: bytes) -> None:
    ctx.sample(runs=False)
    ctx.plan.write_bytes(data)


variants("plan", [
    ("empty", "an empty plan file", {"exit": 1, "message": ["plan.yaml"]}, b""),
    ("a-list", "a plan that is a YAML list", {"exit": 1, "message": ["plan.yaml"]}, b"- campaign\n- schedule\n"),
    ("not-utf8", "a plan of the sample with a byte that is not UTF-8", {"exit": 1, "message": ["plan.yaml"]},
     sample_plan().encode().replace(b"Japanese", b"Japan\xffese")),
    ("nul-bytes", "a plan with NUL bytes", {"exit": 1, "message": ["plan.yaml"]}, sample_plan().encode().replace(b"\n", b"\x00\n", 3)),
    ("tabs", "a plan indented with tabs", {"exit": 1, "message": ["plan.yaml"]}, sample_plan().replace("  ", "\t").encode()),
], _plan_bytes)


@case("plan", "random-bytes", "a plan of 4,096 random bytes", exit=1, message=["plan.yaml"])
def _(c: Ctx) -> None:
    _plan_bytes(c, c.random_bytes(4096))


@case("plan", "a-folder", "PLAN is a folder", exit=1, message=["plan.yaml"])
def _(c: Ctx) -> None:
    c.sample(runs=False)
    c.plan.unlink()
    c.plan.mkdir()


# --- CSV damage -----------------------------------------------------------------------------

def _csv_rows(path: Path) -> int:
    return sum(1 for line in path.read_text(encoding="utf-8").split("\n")[1:] if line.strip())


@case("csv", "metrics-stray-quote-mid", "a quote opened and never closed halfway down a Lightning metrics.csv",
      problem=[f"{PL_VERSION}/metrics.csv: not a CSV row"])
def _(c: Ctx) -> None:
    c.fixture("formats/lightning/pl-clean", "pl-clean")
    path = c.logs / PL_VERSION / "metrics.csv"
    lines = path.read_text(encoding="utf-8").split("\n")
    middle = len(lines) // 2
    lines[middle] = lines[middle].replace(",", ',"', 1)
    path.write_text("\n".join(lines), encoding="utf-8")
    c.case.records[f"{PL_VERSION}/metrics.csv"] = _csv_rows(FORMATS / "lightning" / PL_VERSION / "metrics.csv") - 1


@case("csv", "bench-stray-quote-mid", "a quote opened and never closed in the fourth of eight benchmark CSV rows",
      problem=["checkpoint-bench.csv: not a CSV row"], records={"checkpoint-bench.csv": 7})
def _(c: Ctx) -> None:
    c.bare()
    source = (SAMPLE / "campaign" / "checkpoint-bench.csv").read_text(encoding="utf-8").rstrip("\n").split("\n")
    header, row = source
    rows = [row.replace("7311", str(7311 + i)) for i in range(8)]
    rows[3] = rows[3].replace(",reload_test,", ',"reload_test,', 1)
    c.put("checkpoint-bench.csv", "\n".join([header] + rows) + "\n")


@case("csv", "metrics-200kb-cell", "a Lightning metrics.csv cell of 200,000 characters", problem=[METRICS_CSV])
def _(c: Ctx) -> None:
    _metrics_csv(c, "0,5,," + "7" * 200_000 + ",")


@case("csv", "bench-200kb-cell", "a benchmark CSV message of 200,000 characters (a long message is still a record)",
      records={"checkpoint-bench.csv": 2})
def _(c: Ctx) -> None:
    c.bare()
    header, row = (SAMPLE / "campaign" / "checkpoint-bench.csv").read_text(encoding="utf-8").rstrip("\n").split("\n")
    long = row.rsplit(",", 1)[0] + "," + "m" * 200_000
    c.put("checkpoint-bench.csv", "\n".join([header, row, long]) + "\n")


@case("csv", "metrics-nul-bytes", "a Lightning metrics.csv with NUL bytes in a row", problem=[METRICS_CSV])
def _(c: Ctx) -> None:
    _metrics_csv(c, "0,5,\x00\x00,0.5,")


@case("csv", "metrics-cr-only", "a Lightning metrics.csv whose lines end with carriage returns only")
def _(c: Ctx) -> None:
    c.fixture("formats/lightning/pl-clean", "pl-clean")
    path = c.logs / PL_VERSION / "metrics.csv"
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r"))


def _columns(ctx: Ctx, count: int) -> None:
    ctx.fixture("formats/lightning/pl-clean", "pl-clean")
    names = [f"m{i}" for i in range(count)]
    rows = [",".join(["0", str(s)] + [f"{(i * s) % 97 / 97:.3f}" for i in range(count)]) for s in range(1, 4)]
    write(ctx.logs / PL_VERSION / "metrics.csv", ",".join(["epoch", "step"] + names) + "\n" + "\n".join(rows) + "\n")


case("csv", "metrics-1000-columns", "a Lightning metrics.csv of three rows and 1,000 metric columns", isolate=True)(
    lambda c: _columns(c, 1000))
case("big", "metrics-10000-columns", "a Lightning metrics.csv of three rows and 10,000 metric columns", big=True, isolate=True)(
    lambda c: _columns(c, 10_000))


@case("csv", "metrics-ragged", "a Lightning metrics.csv row with more cells than the header", problem=[METRICS_CSV])
def _(c: Ctx) -> None:
    _metrics_csv(c, "0,5,,0.5,,1,2,3,4")


# --- zip oddities ---------------------------------------------------------------------------

CKPT = f"{PL_VERSION}/checkpoints/last.ckpt"
ZIP_DAMAGE = {
    "encrypted": "whose data.pkl member is marked encrypted",
    "method": "whose data.pkl member uses compression method 99 (AES)",
    "truncated": "whose central directory is cut in half",
    "offset": "whose end record points past the central directory (zipfile finds it all the same)",
    "size": "whose data.pkl member claims to be 4 GB",
}


def _ckpt(ctx: Ctx, how: str) -> None:
    ctx.fixture("formats/lightning/pl-clean", "pl-clean")
    path = ctx.logs / CKPT
    path.write_bytes(zip_patch(path.read_bytes(), how, member=0))


PL_CLEAN_ROWS = _csv_rows(FORMATS / "lightning" / PL_VERSION / "metrics.csv")  # 13


for how, words in ZIP_DAMAGE.items():
    case("zip", f"ckpt-{how}", f"a Lightning last.ckpt {words}", problem=[] if how == "offset" else [f"{CKPT}: "],
         records={f"{PL_VERSION}/metrics.csv": PL_CLEAN_ROWS})(lambda c, h=how: _ckpt(c, h))


def _bundle(ctx: Ctx, how: str | None) -> None:
    ctx.sample()
    members = {"predictions.jsonl": (SAMPLE / "outputs/control/predictions.jsonl").read_bytes(), "README.md": b"# Bundle\n"}
    data = small_zip(members)
    _add_deliverable(ctx, "outputs/bundle.zip", zip_patch(data, how, member=0) if how else data, ident="bundle")


for how, words in ZIP_DAMAGE.items():
    if how in ("size", "offset"):  # zipfile reads a deliverable's sizes from the member it opens; the end record it finds
        continue
    case("zip", f"deliverable-{how}", f"a zip deliverable the manifest names {words.replace('data.pkl', 'first')}",
         reason=["bundle: outputs/bundle.zip cannot be reloaded"])(lambda c, h=how: _bundle(c, h))


@case("zip", "deliverable-bomb", "a zip deliverable holding 300 MB of zeros in 300 KB", isolate=True)
def _(c: Ctx) -> None:
    import io

    c.sample()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        info = zipfile.ZipInfo("zeros.bin", date_time=(2026, 11, 2, 9, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        with archive.open(info, "w", force_zip64=True) as member:
            block = bytes(1 << 20)
            for _ in range(300):
                member.write(block)
    _add_deliverable(c, "outputs/bomb.zip", out.getvalue(), ident="bomb")


@case("zip", "deliverable-ckpt-encrypted", "a delivered Lightning checkpoint whose data.pkl is marked encrypted",
      reason=["ckpt: outputs/last.ckpt cannot be reloaded"])
def _(c: Ctx) -> None:
    c.sample()
    data = (FORMATS / "lightning" / CKPT).read_bytes()
    _add_deliverable(c, "outputs/last.ckpt", zip_patch(data, "encrypted", member=0), ident="ckpt")


# --- MLflow ---------------------------------------------------------------------------------

@case("mlflow", "wal-three-files", "an MLflow store in WAL mode (db, -wal, -shm) whose newest run is only in the -wal file",
      runs=["wal-only-run"])
def _(c: Ctx) -> None:
    c.bare()
    wal_store(c.logs, c.root / "work", with_shm=True)


@case("mlflow", "wal-no-shm", "an MLflow store in WAL mode copied without its -shm file (a reader must not create it)",
      runs=["wal-only-run"])
def _(c: Ctx) -> None:
    c.bare()
    wal_store(c.logs, c.root / "work", with_shm=False)


variants("mlflow", [
    ("sqlite-wrong-types", "an MLflow SQLite metric value 'abc' and start_time 'yesterday'", {"problem": ["mlflow.db: ", "not a number"]},
     f"update metrics set value = 'abc' {FIRST_METRIC}", "update runs set start_time = 'yesterday'"),
    ("sqlite-more-wrong-types", "an MLflow SQLite status 42, end_time 'tomorrow', a step 'x' and is_nan 'maybe'",
     {"problem": ["mlflow.db: "]},
     "update runs set status = 42 where name = 'ml-clean'", "update runs set end_time = 'tomorrow' where name = 'ml-killed'",
     f"update metrics set step = 'x' {FIRST_METRIC}", "update metrics set is_nan = 'maybe' where rowid = (select max(rowid) from metrics)"),
], _sqlite_edit)


@case("mlflow", "param-mode-000", "an MLflow file store's param file with mode 000",
      problem=[f"{MLRUN}/params/lr: cannot be read"], needs_non_root=True)
def _(c: Ctx) -> None:
    c.fixture("formats/mlruns", "mlruns")
    os.chmod(c.logs / MLRUN / "params" / "lr", 0)


@case("mlflow", "sqlite-truncated", "an MLflow SQLite store cut to half its size", problem=["mlflow.db: "])
def _(c: Ctx) -> None:
    c.bare()
    data = (FORMATS / "mlflow" / "mlflow.db").read_bytes()
    c.put("mlflow.db", data[: len(data) // 2])


@case("mlflow", "sqlite-corrupt-pages", "an MLflow SQLite store with 64 KB of random bytes over its pages", problem=["mlflow.db: "])
def _(c: Ctx) -> None:
    c.bare()
    data = bytearray((FORMATS / "mlflow" / "mlflow.db").read_bytes())
    data[4096:4096 + 65536] = c.random_bytes(65536)
    c.put("mlflow.db", bytes(data))


@case("mlflow", "sqlite-not-mlflow", "a SQLite database named mlflow.db that holds other tables")
def _(c: Ctx) -> None:
    c.bare()
    db = sqlite3.connect(c.logs / "mlflow.db")
    with db:
        db.execute("create table runs (id integer)")
        db.execute("insert into runs values (1)")
    db.close()


@case("mlflow", "files-meta-wrong-types", "an MLflow run's meta.yaml with start_time [1], end_time 'later' and status 'done'",
      problem=[f"{RUN_META}: "])
def _(c: Ctx) -> None:
    c.fixture("formats/mlruns", "mlruns")
    path = c.logs / RUN_META
    text = path.read_text(encoding="utf-8")
    for key, value in (("start_time", "[1]"), ("end_time", "later"), ("status", "done")):
        text = re.sub(rf"(?m)^{key}: .*$", f"{key}: {value}", text)
    path.write_text(text, encoding="utf-8")


@case("mlflow", "files-metric-garbage", "an MLflow metric file with lines that are not `timestamp value step`",
      problem=[MLRUNS_LOSS])
def _(c: Ctx) -> None:
    _mlruns_metric(c, "abc def ghi\n1 2\n\x00\x01\x02 3 4\n1796244595722 1.5 4 extra")


# --- big text (only with HOSTILE_BIG=1: for the memory benchmark) ------------------------------

def _big_text(ctx: Ctx, rel: str, newlines: bool) -> None:
    """BIG_BYTES of random printable ASCII, in lines of about 85 characters or in one line."""
    ctx.sample()
    printable = bytes(range(32, 127))
    table = bytes((10 if newlines and b < 3 else printable[b % len(printable)]) for b in range(256))
    path = ctx.logs / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        left = BIG_BYTES
        while left:
            block = ctx.rng.randbytes(min(left, 1 << 22)).translate(table)
            handle.write(block)
            left -= len(block)


case("big", "text-lines-300mb", "a 300 MB captured log of random ASCII lines", big=True, isolate=True)(
    lambda c: _big_text(c, "runs/pilot-1/stdout.log", True))
case("big", "text-one-line-300mb", "a 300 MB captured log that is one line without a newline", big=True, isolate=True)(
    lambda c: _big_text(c, "runs/pilot-1/stdout.log", False))


# --- JSON of the wrong shape ------------------------------------------------------------------

def _predictions_json(ctx: Ctx, text: str) -> None:
    ctx.sample()
    (ctx.logs / "outputs/control/predictions.jsonl").unlink()
    ctx.put("outputs/control/predictions.json", text)
    ctx.replace("outputs/manifest.yaml", "outputs/control/predictions.jsonl", "outputs/control/predictions.json")


variants("shapes", [
    ("predictions-number", 'a predictions deliverable {"predictions": 5}', {"reason": ["predictions-control: 2000 ids missing"]},
     '{"predictions": 5}'),
    ("predictions-numbers", "a predictions deliverable that is a list of numbers", {"reason": ["predictions-control: 3 predictions"]},
     "[1, 2, 3]"),
], _predictions_json)


@case("shapes", "predictions-jsonl-scalars", "a predictions JSONL deliverable of lines that are not objects",
      reason=["predictions-control: "])
def _(c: Ctx) -> None:
    c.sample()
    write(c.logs / "outputs/control/predictions.jsonl", '1\n"x"\nnull\n[1, 2]\n')


def _adapter_config(ctx: Ctx, where: str, text: str) -> None:
    if where == "hf":
        ctx.fixture("formats/hf/hf-clean", HF_RUN)
        write(ctx.logs / HF_RUN / "adapter_config.json", text)
    else:
        ctx.sample()
        write(ctx.logs / "outputs/lora-r16/adapter/adapter_config.json", text)


variants("shapes", [
    ("adapter-config-list-hf", "a Trainer folder's adapter_config.json that is a list", {"problem": [f"{HF_RUN}/adapter_config.json: "]},
     "hf", '[{"peft_type": "LORA"}]'),
    ("adapter-config-list", "a delivered adapter's adapter_config.json that is a list", {"reason": ["adapter-lora-r16: "]}, "deliverable",
     '[{"peft_type": "LORA", "base_model_name_or_path": "x"}]'),
    ("adapter-config-null", "a delivered adapter's adapter_config.json that is null", {"reason": ["adapter-lora-r16: "]}, "deliverable", "null"),
], _adapter_config)


@case("shapes", "trainer-state-log-history-mapping", "a trainer_state.json whose log_history is a mapping",
      problem=[f"{HF_RUN}/trainer_state.json: "])
def _(c: Ctx) -> None:
    c.fixture("formats/hf/hf-clean", HF_RUN)
    write(c.logs / HF_RUN / "trainer_state.json", '{"global_step": 30, "log_history": {"loss": 1.0}, "max_steps": 30}')


variants("shapes", [
    ("manifest-deliverables-mapping", "a manifest whose deliverables is a mapping", {"problem": ["outputs/manifest.yaml: "]},
     "deliverables: {a: 1}\n"),
    ("manifest-entries-scalars", "a manifest whose entries are scalars", {"problem": ["outputs/manifest.yaml: "]},
     "deliverables:\n- 1\n- x\n- null\n- [1, 2]\n"),
], lambda c, text: (c.sample(), write(c.logs / "outputs/manifest.yaml", text)))


@case("shapes", "native-lines-arrays", "an event log whose lines after the first are arrays, strings and numbers",
      problem=[PILOT_LINE])
def _(c: Ctx) -> None:
    c.sample()
    c.insert_lines(PILOT, 3, ["[1, 2]", '"metric"', "42", "null", "{}"])


# --- empty files and random bytes, named like every format ----------------------------------------

FORMAT_FILES = [  # name, base, file in LOGS
    ("native-events", "mini", PILOT),
    ("manifest", "sample", "outputs/manifest.yaml"),
    ("predictions", "sample", "outputs/control/predictions.jsonl"),
    ("safetensors", "sample", "outputs/lora-r16/adapter/adapter_model.safetensors"),
    ("expected-ids", "sample", "corpus/jsum-v3.ids"),
    ("trainer-state", "formats/hf/hf-clean", f"{HF_RUN}/trainer_state.json"),
    ("adapter-config", "formats/hf/hf-clean", f"{HF_RUN}/adapter_config.json"),
    ("train-log", "formats/hf/hf-clean", f"{HF_RUN}/train.log"),
    ("metrics-csv", "formats/lightning/pl-clean", f"{PL_VERSION}/metrics.csv"),
    ("hparams", "formats/lightning/pl-clean", HPARAMS),
    ("ckpt", "formats/lightning/pl-clean", CKPT),
    ("tfevents", "formats/tensorboard/tb-clean", "tb-clean/events.out.tfevents.1796244580.vm.6800.0"),
    ("mlflow-db", "bare", "mlflow.db"),
    ("mlruns-run-meta", "formats/mlruns", RUN_META),
]


RANDOM_FILES = {"native-events", "manifest", "safetensors", "trainer-state", "metrics-csv", "ckpt", "tfevents", "mlflow-db"}


def _replaced(ctx: Ctx, base: str, rel: str, data: Callable[[Ctx], bytes]) -> None:
    _base(ctx, base)
    write(ctx.logs / rel, data(ctx))
    if rel == PILOT:
        ctx.case.runs.remove("pilot-1")  # its only source is gone


for name, base, rel in FORMAT_FILES:
    case("empty", name, f"{rel.split('/')[-1]} is an empty file")(lambda c, b=base, r=rel: _replaced(c, b, r, lambda _c: b""))
    if name in RANDOM_FILES:
        case("random", name, f"{rel.split('/')[-1]} is 4,096 random bytes")(
            lambda c, b=base, r=rel: _replaced(c, b, r, lambda cc: cc.random_bytes(4096)))


def _freeze_files(ctx: Ctx, name: str, data: bytes) -> None:
    ctx.sample(runs=False)
    _freeze_record(ctx.logs / ".reportgen", sample_plan().encode())
    write(ctx.logs / ".reportgen" / name, data)


for kind, make in (("empty", lambda c: b""), ("random", lambda c: c.random_bytes(4096))):
    case(kind, "freeze-record", f"the freeze record freeze.json is {'empty' if kind == 'empty' else 'random bytes'}",
         exit=1, message=["freeze.json"])(lambda c, m=make: _freeze_files(c, "freeze.json", m(c)))
    case(kind, "frozen-plan", f"the frozen plan is {'empty' if kind == 'empty' else 'random bytes'} (its recorded SHA-256 no longer matches)",
         exit=1, message=["plan.frozen.yaml"])(lambda c, m=make: _freeze_files(c, "plan.frozen.yaml", m(c)))


# --- writing the corpus, and reading it back ---------------------------------------------------

def big_enabled() -> bool:
    return os.environ.get("HOSTILE_BIG") == "1"


def build_corpus(dest: Path, big: bool | None = None, only: Callable[[Case], bool] | None = None) -> list[Case]:
    """Write every case into dest/<case-id>/ and the index dest/cases.json; returns the cases.

    The 300 MB cases are written only when `big` (default: HOSTILE_BIG=1 in the environment)."""
    big = big_enabled() if big is None else big
    dest.mkdir(parents=True, exist_ok=True)
    cases = []
    for template, make in REGISTRY:
        if (template.big and not big) or (only and not only(template)):
            continue
        one = Case(**json.loads(json.dumps(template.to_json())))  # a fresh copy: makers may add expectations
        root = dest / one.id
        if root.exists() or root.is_symlink():
            remove_tree(root)
        make(Ctx(root, one))
        cases.append(one)
    ids = [c.id for c in cases]
    if len(set(ids)) != len(ids):
        raise AssertionError(f"case ids used twice: {sorted({i for i in ids if ids.count(i) > 1})}")
    index = {"seed": SEED, "cases": [c.to_json() for c in cases]}
    (dest / "cases.json").write_text(json.dumps(index, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return cases


def load_cases(dest: Path) -> list[Case]:
    return [Case(**c) for c in json.loads((dest / "cases.json").read_text(encoding="utf-8"))["cases"]]


def _walk_fd(root: Path) -> Iterator[tuple[bytes, int, int, str]]:
    """Every entry under root as (relative path, parent folder descriptor, lstat mode, name),
    walked with folder descriptors and no recursion: trees 1,100 deep and paths longer than
    PATH_MAX are walked like any other. Links are never followed."""
    top = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    pending = [(top, b"")]
    while pending:
        fd, prefix = pending.pop()
        try:
            names = sorted(os.listdir(fd))
            for name in (os.fsencode(n) for n in names):
                mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
                rel = prefix + name
                yield rel, fd, mode, os.fsdecode(name)
                if stat.S_ISDIR(mode):
                    try:
                        child = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                    except PermissionError:
                        continue
                    pending.append((child, rel + b"/"))
        except PermissionError:
            pass
        finally:
            os.close(fd)


def snapshot(root: Path) -> dict[str, tuple]:
    """What every entry under root is: a file's SHA-256 and mode, a link's target, a folder's mode;
    pipes and sockets by their kind alone (they are never opened). For checking that a build
    changed nothing, added nothing and removed nothing."""
    if not root.is_dir() or root.is_symlink():
        return {"": _entry(root)}
    found = {}
    for rel, fd, mode, name in _walk_fd(root):
        key = os.fsdecode(rel)
        if stat.S_ISLNK(mode):
            found[key] = ("link", os.readlink(name, dir_fd=fd))
        elif stat.S_ISREG(mode):
            found[key] = ("file", stat.S_IMODE(mode), _hash_at(fd, name))
        elif stat.S_ISDIR(mode):
            found[key] = ("folder", stat.S_IMODE(mode))
        else:
            found[key] = ("special", stat.S_IFMT(mode), stat.S_IMODE(mode))
    return found


def _hash_at(fd: int, name: str) -> str:
    try:
        handle = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
    except PermissionError:
        return "unreadable"
    digest = hashlib.sha256()
    try:
        while block := os.read(handle, 1 << 20):
            digest.update(block)
    finally:
        os.close(handle)
    return digest.hexdigest()


def _entry(path: Path) -> tuple:
    mode = os.lstat(path).st_mode
    if stat.S_ISLNK(mode):
        return ("link", os.readlink(path))
    if stat.S_ISREG(mode):
        return ("file", stat.S_IMODE(mode), _hash_at(os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY), path.name))
    return ("special", stat.S_IFMT(mode), stat.S_IMODE(mode))


def files_holding(root: Path, token: str) -> list[str]:
    """The regular files under root whose bytes hold token."""
    needle = token.encode()
    hits = []
    for rel, fd, mode, name in _walk_fd(root):
        if stat.S_ISREG(mode):
            handle = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=fd)
            try:
                data = b""
                while block := os.read(handle, 1 << 20):
                    data = data[-len(needle):] + block
                    if needle in data:
                        hits.append(os.fsdecode(rel))
                        break
            finally:
                os.close(handle)
    return hits


def remove_tree(root: Path) -> None:
    """Remove a tree of any depth and path length (shutil.rmtree recurses once per level, and its
    paths may outgrow PATH_MAX); folders of mode 000 are opened up first."""
    if root.is_symlink() or not root.is_dir():
        root.unlink(missing_ok=True)
        return
    os.chmod(root, 0o700)
    stack = [(os.open(root, os.O_RDONLY | os.O_DIRECTORY), None, None)]
    while stack:
        fd, parent, name = stack[-1]
        child = None
        for entry in os.listdir(fd):
            mode = os.stat(entry, dir_fd=fd, follow_symlinks=False).st_mode
            if stat.S_ISDIR(mode):
                os.chmod(entry, 0o700, dir_fd=fd)
                child = entry
                break
            os.unlink(entry, dir_fd=fd)
        if child is not None:
            stack.append((os.open(child, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd), fd, child))
            continue
        stack.pop()
        if parent is not None:
            os.rmdir(name, dir_fd=parent)
        os.close(fd)
    os.rmdir(root)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.split("\n\n")[0].strip(), file=sys.stderr)
        return 2
    dest = Path(argv[0])
    cases = build_corpus(dest)
    counts: dict[str, int] = {}
    for one in cases:
        counts[one.category] = counts.get(one.category, 0) + 1
    print(f"{dest}: {len(cases)} cases (" + ", ".join(f"{k} {v}" for k, v in counts.items()) + ")")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
