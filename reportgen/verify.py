"""Check every deliverable the manifest lists, file by file (R15): a file that exists but cannot be
reloaded is not a verified output.

This stage reads the deliverables' files, so it runs at build time with LOGS at hand, after
ingest and before the analysis. Paths never reach outside LOGS: an absolute path, a `..` and a
link that leads out are refused with the reason, and nothing there is read.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import re
from pathlib import Path, PurePosixPath, PureWindowsPath

import yaml

from reportgen.boundary import MB, inside, open_file, read_file
from reportgen.bounded import TooComplex, load_json, load_yaml
from reportgen.errors import during
from reportgen.lfs import lfs_pointer
from reportgen.model import Campaign, DeliverableCheck, FileReport, ManifestEntry
from reportgen.plan.schema import Plan
from reportgen.probe import Invalid, check_safetensors, check_zip

TEMP_ROOTS = ("/tmp", "/var/tmp", "/dev/shm", "/private/tmp", "/private/var/folders")
# A pinned revision is a commit hash: 7 to 64 hexadecimal digits (a branch or tag name can move).
COMMIT = re.compile(r"^[0-9a-f]{7,64}$")
ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = ("adapter_model.safetensors", "adapter_model.bin")
MAX_READ = 512 << 20  # files larger than this are hashed but not parsed


def temp_root(path: str) -> str | None:
    """The temporary folder an absolute path lies under (/tmp, /var/tmp, /dev/shm, $TMPDIR), if any."""
    roots = list(TEMP_ROOTS)
    tmpdir = os.environ.get("TMPDIR")
    if tmpdir and tmpdir.startswith("/"):
        roots.append(tmpdir.rstrip("/"))
    posix = path.replace("\\", "/")
    return next((root for root in roots if posix == root or posix.startswith(root + "/")), None)


def resolve(logs: Path, path: str) -> tuple[Path | None, list[str]]:
    """The file or folder a manifest path names inside LOGS, or None with the reasons it is refused."""
    reasons = []
    root = temp_root(path)
    if root:
        reasons.append(f"{path} is under a temporary folder ({root}): it does not survive the machine")
    if PurePosixPath(path).is_absolute() or PureWindowsPath(path).is_absolute() or PureWindowsPath(path).drive:
        reasons.append(f"{path} is an absolute path: deliverables are named relative to LOGS, and nothing outside is read")
        return None, reasons
    parts = PurePosixPath(path.replace("\\", "/")).parts
    if ".." in parts:
        reasons.append(f"{path} uses '..' to leave its folder: refused, not followed")
        return None, reasons
    target = logs / Path(*parts)
    if not inside(logs, target):  # a link out of LOGS, or a link loop
        reasons.append(f"{path} is a link that leads out of LOGS: refused, not followed")
        return None, reasons
    return target, reasons


def read_all(path: Path) -> bytes:
    """A deliverable's bytes, through the reading boundary; Invalid when it is larger than reportgen parses."""
    read = read_file(path, MAX_READ)
    if not read.whole:
        raise Invalid(f"{read.size / MB:,.0f} MB: larger than reportgen parses ({MAX_READ // MB} MB)")
    return read.data


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open_file(path) as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def reload_check(path: Path) -> str:
    """Read a file at format level; raise Invalid with the reason when it cannot be reloaded."""
    with open_file(path) as handle:
        head = handle.read(1024)
    pointer = lfs_pointer(head)
    if pointer is not None:  # before any format check: a pointer is never the file it stands for
        raise Invalid(pointer)
    suffix = path.suffix.lower()
    if suffix == ".safetensors":
        return check_safetensors(path)
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        reason, _notes = check_zip(path)
        return reason
    if path.stat().st_size > MAX_READ:
        return "too large to parse here; hashed only"
    if suffix in (".json", ".jsonl", ".csv", ".yaml", ".yml", ".txt", ".ids", ".md", ".tsv"):
        try:
            text = read_all(path).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise Invalid(f"not UTF-8 text (byte {exc.start})") from None
        if suffix == ".json":
            try:
                load_json(text)
            except ValueError as exc:
                raise Invalid(f"not JSON ({exc})") from None
            return "parses as JSON"
        if suffix == ".jsonl":
            for number, line in enumerate(text.split("\n"), start=1):
                if line.strip():
                    try:
                        load_json(line)
                    except ValueError as exc:
                        raise Invalid(f"line {number} is not JSON ({exc})") from None
            return "every line parses as JSON"
        if suffix in (".csv", ".tsv"):
            rows = list(csv.reader(io.StringIO(text, newline=""), delimiter="\t" if suffix == ".tsv" else ","))
            widths = {len(r) for r in rows if r}
            if len(widths) > 1:
                bad = next(i for i, r in enumerate(rows, start=1) if r and len(r) != len(rows[0]))
                raise Invalid(f"row {bad} has {len(rows[bad - 1])} cells where the header has {len(rows[0])}")
            return f"{len([r for r in rows if r])} rows of {widths.pop() if widths else 0} cells"
        if suffix in (".yaml", ".yml"):
            try:
                load_yaml(text)
            except TooComplex as exc:
                raise Invalid(f"refused: {exc.message}") from None
            except yaml.YAMLError as exc:
                raise Invalid(f"not YAML ({exc})") from None
            return "parses as YAML"
        return "UTF-8 text"
    return "no format-level check for this file type; its size and hash were read"


def _files(target: Path) -> list[Path]:
    """A file, or every file in a folder; links to folders are not entered, links to files only when
    they stay in the folder (nothing outside is read)."""
    if target.is_file():
        return [target]
    root = target.resolve()
    found = []
    for folder, _dirs, names in os.walk(target, followlinks=False):
        for name in names:
            path = Path(folder) / name
            if path.is_file() and inside(root, path):
                found.append(path)
    return sorted(found)


def check_paths(logs: Path, entry: ManifestEntry) -> list[FileReport]:
    reports = []
    for path in entry.paths:
        with during(f"checking the deliverable file {path}"):
            reports.append(_check_path(logs, path))
    return reports


def _check_path(logs: Path, path: str) -> FileReport:
    """One path of a manifest entry: inside LOGS, present, not empty, reloadable, hashed."""
    report = FileReport(path)
    target, report.reasons = resolve(logs, path)
    if target is None:
        return report
    if not target.exists():
        report.reasons.append(f"{path} does not exist under LOGS")
        return report
    report.exists = True
    files = _files(target)
    report.bytes = sum(f.stat().st_size for f in files)
    if not files:
        report.reasons.append(f"{path} is an empty folder")
    for file in files:
        name = file.relative_to(logs).as_posix()
        if file.stat().st_size == 0:
            report.reasons.append(f"{name} is empty")
            continue
        try:
            read = reload_check(file)
        except (Invalid, OSError) as exc:
            report.reasons.append(f"{name} cannot be reloaded: {exc}")
            continue
        report.reloadable = read if target.is_file() else f"{len(files)} files read at format level"
    if target.is_file():
        report.sha256 = _sha256(target)
    return report


def _adapter(logs: Path, entry: ManifestEntry, files: list[FileReport]) -> list[str]:
    """An adapter needs its config and weights, and must pin the exact base-model revision (R15)."""
    folders = [logs / Path(*PurePosixPath(f.path).parts) for f in files if f.exists]
    folders = [f if f.is_dir() else f.parent for f in folders]
    configs = [d / ADAPTER_CONFIG for d in folders if (d / ADAPTER_CONFIG).is_file()]
    reasons = []
    if not configs:
        reasons.append(f"no {ADAPTER_CONFIG}: the adapter cannot be loaded onto its base model")
    weights = [d / w for d in folders for w in ADAPTER_WEIGHTS if (d / w).is_file()]
    if not weights:
        reasons.append(f"no adapter weights ({' or '.join(ADAPTER_WEIGHTS)})")
    elif all(_is_pointer(w) for w in weights):
        reasons.append(f"the adapter weights ({', '.join(w.name for w in weights)}) are Git LFS pointers, not the files")
    for config in configs[:1]:
        try:
            data = load_json(read_all(config).decode("utf-8"))
        except (ValueError, UnicodeDecodeError, OSError) as exc:
            reasons.append(f"{ADAPTER_CONFIG} is not JSON ({exc})")
            continue
        if not isinstance(data, dict):
            reasons.append(f"{ADAPTER_CONFIG} holds no JSON object: the adapter cannot be loaded")
            continue
        base, revision = data.get("base_model_name_or_path"), data.get("revision")
        if not base:
            reasons.append(f"{ADAPTER_CONFIG} names no base model (base_model_name_or_path)")
        if revision is None:
            reasons.append(f"{ADAPTER_CONFIG} pins no base-model revision (revision is null): the base can change under it")
        elif not (isinstance(revision, str) and COMMIT.match(revision)):
            reasons.append(f"{ADAPTER_CONFIG} revision {revision!r} is a branch or tag, not a commit hash: it can move")
    return reasons


def _is_pointer(path: Path) -> bool:
    with open_file(path) as handle:
        return lfs_pointer(handle.read(1024)) is not None


def _id_file(logs: Path, path: str) -> tuple[list[str] | None, str | None]:
    target, reasons = resolve(logs, path)
    if target is None:
        return None, "; ".join(reasons)
    if not target.is_file():
        return None, f"the expected-ids file {path} does not exist under LOGS"
    try:
        text = read_all(target).decode("utf-8", errors="replace")
    except (Invalid, OSError) as exc:
        return None, f"the expected-ids file {path} cannot be read: {exc}"
    return [line.strip() for line in text.splitlines() if line.strip()], None


def _prediction_ids(logs: Path, files: list[FileReport], field_name: str) -> tuple[list[str], list[str]]:
    """Every prediction's id (JSONL/JSON list/CSV), and the reasons ids could not be read."""
    ids, reasons = [], []
    for report in files:
        if not report.exists or report.reasons:
            continue
        target = logs / Path(*PurePosixPath(report.path).parts)
        for file in _files(target):
            suffix = file.suffix.lower()
            try:
                text = read_all(file).decode("utf-8", errors="replace")
            except (Invalid, OSError) as exc:
                reasons.append(f"{file.relative_to(logs).as_posix()}: its ids cannot be read ({exc})")
                continue
            rows: list = []
            if suffix == ".jsonl":
                rows = [load_json(line) for line in text.split("\n") if line.strip()]
            elif suffix == ".json":
                data = load_json(text)
                rows = data if isinstance(data, list) else data.get("predictions", []) if isinstance(data, dict) else []
                rows = rows if isinstance(rows, list) else []
            elif suffix in (".csv", ".tsv"):
                rows = list(csv.DictReader(io.StringIO(text, newline=""), delimiter="\t" if suffix == ".tsv" else ","))
            else:
                continue
            missing_field = sum(1 for r in rows if not isinstance(r, dict) or field_name not in r)
            if missing_field:
                reasons.append(f"{missing_field} prediction{'s' if missing_field != 1 else ''} in {file.relative_to(logs).as_posix()} "
                               f"have no '{field_name}'")
            ids += [str(r[field_name]) for r in rows if isinstance(r, dict) and field_name in r]
    return ids, reasons


def _coverage(expected: list[str], found: list[str]) -> dict:
    counts: dict[str, int] = {}
    for ident in found:
        counts[ident] = counts.get(ident, 0) + 1
    wanted = set(expected)
    return {
        "expected": len(wanted),
        "found": len(counts),
        "missing": sorted(wanted - counts.keys()),
        "extra": sorted(counts.keys() - wanted),
        "duplicates": sorted(i for i, n in counts.items() if n > 1),
    }


def _listed(items: list[str], limit: int = 5) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def check_deliverables(plan: Plan, logs: Path, campaign: Campaign) -> list[DeliverableCheck]:
    """The file-level checks of every manifest entry; the analysis adds run status and quality."""
    checks = []
    for entry in campaign.manifest:
        files = check_paths(logs, entry)
        check = DeliverableCheck(entry, files)
        check.reasons += entry.notes
        if entry.sha256 and len(files) == 1 and files[0].sha256 and files[0].sha256 != entry.sha256:
            check.reasons.append(f"SHA-256 does not match: the manifest says {entry.sha256[:12]}…, the file is {files[0].sha256[:12]}…")
        if entry.sha256 and len(files) > 1:
            check.reasons.append("a sha256 is given for several paths; it can only be checked for one file")
        if entry.kind == "adapter":
            check.reasons += _adapter(logs, entry, files)
        if entry.kind == "predictions":
            source = entry.expected_ids or plan.corpus.expected_ids
            if source is None:
                check.reasons.append("no expected ids (manifest expected_ids or the plan's corpus.expected_ids): coverage unchecked")
            elif all(f.exists and not f.reasons for f in files):
                expected, problem = _id_file(logs, source)
                found, reasons = _prediction_ids(logs, files, entry.id_field)
                check.reasons += reasons
                if problem:
                    check.reasons.append(problem)
                elif expected is not None:
                    check.ids = _coverage(expected, found)
                    for key, words in (("missing", "missing"), ("extra", "not in the corpus"), ("duplicates", "predicted twice")):
                        if check.ids[key]:
                            check.reasons.append(f"{len(check.ids[key])} id{'s' if len(check.ids[key]) != 1 else ''} "
                                                 f"{words}: {_listed(check.ids[key])}")
        checks.append(check)
    return checks

