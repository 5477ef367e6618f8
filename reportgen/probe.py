"""`reportgen probe`: read and validate a checkpoint in a fresh process, without torch and without unpickling.

R12 asks for a reload tested in a new process. The parent (`probe`) starts a child Python process
(`python -m reportgen.probe PATH`), which checks every file of the checkpoint at format level and
prints its findings as JSON; the parent times the child from start to end. Nothing is imported
from the checkpoint and no pickle is run:

- safetensors: the 8-byte header length, the JSON header, every tensor's dtype, shape and
  offsets (contiguous from 0, each the size its dtype and shape need), and the file size;
- zip archives (torch.save files, Lightning .ckpt): the central directory and every member's
  CRC, then the pickle inside walked opcode by opcode without running it;
- plain pickles (older torch files): walked the same way;
- JSON files: parsed.
A pickle that names a callable that runs commands or code (os.system, builtins.eval...) fails.
With `--torch`, when torch is installed, `.pt`/`.bin`/`.pth`/`.ckpt` files are also loaded with
`torch.load(weights_only=True)`, torch's loader that refuses arbitrary code.
"""

from __future__ import annotations

import io
import json
import math
import os
import pickletools
import socket
import subprocess
import sys
import time
import zipfile
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from reportgen.boundary import open_file, read_file
from reportgen.bounded import load_json
from reportgen.ingest.torchfile import MAX_PICKLE_BYTES, UnreadablePickle, scan
from reportgen.lfs import lfs_pointer
from reportgen.numbers import plural

MAX_HEADER = 100 << 20  # the safetensors format's own limit
# Bits per element of every safetensors dtype.
DTYPE_BITS = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "E8M0": 8,
    "I16": 16, "U16": 16, "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32,
    "F64": 64, "I64": 64, "U64": 64, "C64": 64, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
}
# Callables a pickle may name that run commands or code when loaded.
DANGEROUS = ("os ", "posix ", "nt ", "subprocess ", "builtins eval", "builtins exec", "builtins compile",
             "builtins __import__", "builtins getattr", "builtins open", "__builtin__ ", "runpy ", "shutil ", "sys ")
TORCH_SUFFIXES = (".pt", ".pth", ".bin", ".ckpt")
CHILD_TIMEOUT_S = 3600


@dataclass
class FileResult:
    path: str
    kind: str
    ok: bool
    reason: str
    bytes: int
    seconds: float
    notes: list[str] = field(default_factory=list)


class Invalid(ValueError):
    pass


# --- the checks (run in the child) ----------------------------------------------------------

def check_safetensors(path: Path) -> str:
    size = path.stat().st_size
    with open_file(path) as handle:
        head = handle.read(8)
        if len(head) < 8:
            raise Invalid(f"{size} bytes: too short for the 8-byte header length")
        length = int.from_bytes(head, "little")
        if length > MAX_HEADER or 8 + length > size:
            raise Invalid(f"the header says {length:,} bytes but the file has {size - 8:,} after the length: cut off or damaged")
        try:
            header = load_json(handle.read(length).decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise Invalid(f"the header is not JSON ({exc})") from None
    if not isinstance(header, dict):
        raise Invalid("the header is not a JSON object")
    metadata = header.pop("__metadata__", None)
    if metadata is not None and not (isinstance(metadata, dict) and all(isinstance(v, str) for v in metadata.values())):
        raise Invalid("__metadata__ is not a mapping of strings")
    spans = []
    for name, info in header.items():
        if not isinstance(info, dict):
            raise Invalid(f"tensor {name!r}: not an object")
        dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
        if dtype not in DTYPE_BITS:
            raise Invalid(f"tensor {name!r}: unknown dtype {dtype!r}")
        if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
            raise Invalid(f"tensor {name!r}: shape {shape!r} is not a list of sizes")
        if (not isinstance(offsets, list) or len(offsets) != 2 or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
                or not 0 <= offsets[0] <= offsets[1]):
            raise Invalid(f"tensor {name!r}: data_offsets {offsets!r} are not [begin, end]")
        needed = math.prod(shape) * DTYPE_BITS[dtype]
        if offsets[1] - offsets[0] != (needed + 7) // 8:
            raise Invalid(f"tensor {name!r}: {offsets[1] - offsets[0]:,} bytes for {dtype} {shape}, which needs {(needed + 7) // 8:,}")
        spans.append((offsets[0], offsets[1], name))
    spans.sort()
    position = 0
    for begin, end, name in spans:
        if begin != position:
            raise Invalid(f"tensor {name!r} starts at {begin:,} where {position:,} was expected: offsets are not contiguous")
        position = end
    data = size - 8 - length
    if position != data:
        raise Invalid(f"the tensors end at byte {position:,} of the data but the file holds {data:,}: "
                      + ("cut off" if data < position else "trailing bytes"))
    return f"{plural(len(spans), 'tensor')}, offsets contiguous, {data:,} data bytes as the header says"


def _globals(data: bytes) -> list[str]:
    """The callables a pickle names (GLOBAL and STACK_GLOBAL), read from its opcodes, never imported."""
    names, strings = [], []
    for op, arg, _pos in pickletools.genops(io.BytesIO(data)):
        if op.name == "GLOBAL":
            names.append(str(arg))
        elif op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE", "BINUNICODE8"):
            strings = (strings + [str(arg)])[-2:]
        elif op.name == "STACK_GLOBAL" and len(strings) == 2:
            names.append(f"{strings[0]} {strings[1]}")
    return sorted(set(names))


def check_pickle(data: bytes, where: str) -> tuple[str, list[str]]:
    try:
        scan(data)
        called = _globals(data)
    except (UnreadablePickle, ValueError, IndexError, EOFError) as exc:
        raise Invalid(f"{where}: a damaged pickle ({exc})") from None
    bad = [name for name in called if name.startswith(DANGEROUS)]
    if bad:
        raise Invalid(f"{where} would call {', '.join(n.replace(' ', '.') for n in bad)} when loaded: "
                      "a pickle that runs code (it was not run)")
    foreign = [n.replace(" ", ".") for n in called if not n.startswith(("torch", "collections OrderedDict"))]
    notes = [f"{where} also names {', '.join(foreign[:5])}" + (" and more" if len(foreign) > 5 else "")
             + ": torch.load(weights_only=True) refuses these unless allowed"] if foreign else []
    return f"{where}: pickle structure read without running it", notes


def check_zip(path: Path) -> tuple[str, list[str]]:
    try:
        with open_file(path) as handle, zipfile.ZipFile(handle) as archive:
            broken = archive.testzip()  # reads every member and checks its CRC
            if broken is not None:
                raise Invalid(f"member {broken} fails its CRC check: damaged")
            members = archive.infolist()
            pickles = [m for m in members if m.filename.endswith("data.pkl")]
            reason = f"zip of {len(members)} members, every CRC correct"
            notes: list[str] = []
            for member in pickles[:1]:
                if member.file_size > MAX_PICKLE_BYTES:
                    notes.append(f"{member.filename} is {member.file_size:,} bytes: its structure was not walked")
                    continue
                text, notes = check_pickle(archive.read(member), member.filename)
                reason += "; " + text
            return reason, notes
    except zipfile.BadZipFile as exc:
        raise Invalid(f"not a readable zip archive ({exc}): cut off or damaged") from None
    except (RuntimeError, NotImplementedError) as exc:  # zipfile: an encrypted member, a compression it lacks
        raise Invalid(f"a member cannot be read ({exc})") from None
    except (OSError, EOFError, ValueError, zipfile.LargeZipFile) as exc:
        raise Invalid(f"the archive cannot be read ({exc})") from None


def _torch_load(path: Path) -> str:
    import torch  # only with --torch, and only if installed

    torch.load(path, map_location="cpu", weights_only=True)
    return "torch.load(weights_only=True) loaded it"


def _refused(message: str) -> str:
    """The global torch's safe loader refused, from its long error message."""
    for line in message.splitlines():
        if "Unsupported global" in line:
            return line.strip().split(" was not an allowed global")[0].replace("WeightsUnpickler error: ", "")
    return message.strip().splitlines()[0][:200]


def check_file(path: Path, rel: str, with_torch: bool) -> FileResult:
    start = time.perf_counter()
    size = path.stat().st_size
    with open_file(path) as handle:
        head = handle.read(1024)
    kind, notes = "other", []
    try:
        pointer = lfs_pointer(head)
        if pointer is not None:
            kind = "git-lfs-pointer"
            raise Invalid(pointer)
        if path.suffix == ".safetensors":
            kind, reason = "safetensors", check_safetensors(path)
        elif head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
            kind = "zip"
            reason, notes = check_zip(path)
        elif head[:1] == b"\x80" and path.suffix in TORCH_SUFFIXES:
            kind = "pickle"
            if size > MAX_PICKLE_BYTES:
                raise Invalid(f"{size:,} bytes: larger than reportgen walks; not checked")
            reason, notes = check_pickle(read_file(path, MAX_PICKLE_BYTES).data, path.name)
        elif path.suffix == ".json":
            kind = "json"
            if size > MAX_HEADER:
                raise Invalid(f"{size:,} bytes: larger than reportgen parses as JSON; not checked")
            load_json(read_file(path, MAX_HEADER).data.decode("utf-8"))
            reason = "parses as JSON"
        else:
            reason = "no format-level check for this file; its size was read"
        if with_torch and path.suffix in TORCH_SUFFIXES:
            try:
                notes.append(_torch_load(path))
            except ImportError:
                notes.append("--torch: torch is not installed here; not loaded")
            except Exception as exc:  # noqa: BLE001 - whatever torch raises is the finding
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                if "weights only" in str(exc).lower() or "WeightsUnpickler" in str(exc):
                    # Not damage: the file names classes torch's safe loader will not build without being told to.
                    notes.append(f"torch.load(weights_only=True) refused it: {_refused(str(exc))}")
                else:
                    raise Invalid(f"torch.load(weights_only=True) failed: {type(exc).__name__}: {first[:300]}") from None
        ok = True
    except (Invalid, UnicodeDecodeError, ValueError) as exc:
        ok, reason = False, str(exc)
    return FileResult(rel, kind, ok, reason, size, round(time.perf_counter() - start, 6), notes)


def check_checkpoint(target: Path, with_torch: bool) -> list[FileResult]:
    if target.is_dir():
        files = sorted(p for p in target.rglob("*") if p.is_file())
        return [check_file(p, p.relative_to(target).as_posix(), with_torch) for p in files]
    return [check_file(target, target.name, with_torch)]


def child_main(argv: list[str]) -> int:
    """The child process: check the checkpoint, print the findings as one JSON object."""
    with_torch = "--torch" in argv
    target = Path(next(a for a in argv if a != "--torch"))
    results = check_checkpoint(target, with_torch)
    print(json.dumps({"pid": os.getpid(), "files": [asdict(r) for r in results]}))
    return 0


# --- the parent -----------------------------------------------------------------------------

@dataclass
class Probe:
    path: str
    ok: bool
    seconds: float  # the child process from start to end: a reload in a new process
    pid: int
    host: str
    files: list[FileResult]

    @property
    def summary(self) -> str:
        failed = [f for f in self.files if not f.ok]
        if not self.files:
            return "no file to check"
        if failed:
            return "; ".join(f"{f.path}: {f.reason}" for f in failed[:3]) + (f"; and {len(failed) - 3} more" if len(failed) > 3 else "")
        kinds = sorted({f.kind for f in self.files})
        return f"{len(self.files)} file{'s' if len(self.files) != 1 else ''} read in a new process ({', '.join(kinds)}), all valid"


def probe(target: Path, with_torch: bool = False) -> Probe:
    """Check `target` in a fresh Python process and time it."""
    command = [sys.executable, "-m", "reportgen.probe", str(target)] + (["--torch"] if with_torch else [])
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"the probe process failed (exit {done.returncode}): {done.stderr.strip()[-500:]}")
    data = json.loads(done.stdout)
    files = [FileResult(**f) for f in data["files"]]
    return Probe(str(target), bool(files) and all(f.ok for f in files), round(seconds, 3), data["pid"],
                 socket.gethostname(), files)


def record(result: Probe, logs: Path, name: str = "checkpoint-probes.jsonl") -> Path:
    """Append the probe as a reload_test benchmark record (checkpoint-bench JSONL) under LOGS."""
    target = Path(result.path).resolve()
    checkpoint = target.relative_to(logs.resolve()).as_posix() if target.is_relative_to(logs.resolve()) else result.path
    line = {
        "checkpoint": checkpoint,
        "operation": "reload_test",
        "time": datetime.now(UTC).isoformat(timespec="seconds"),
        "seconds": result.seconds,
        "ok": result.ok,
        "new_process": True,
        "host": result.host,
        "process": str(result.pid),
        "message": f"reportgen probe: {result.summary}",
    }
    out = logs / name
    with out.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(line, ensure_ascii=False) + "\n")
    return out


if __name__ == "__main__":
    sys.exit(child_main(sys.argv[1:]))
