"""The deliverables manifest (`manifest`): what the campaign produced, one entry per deliverable (R15).

A YAML or JSON file anywhere under LOGS whose top level has a `deliverables` list:

    deliverables:
      - id: predictions-lora-r16          # required, unique
        kind: predictions                 # required: a plan deliverable kind
        variant: lora-r16                 # the plan variant it belongs to
        corpus: jsum-v3                   # the corpus it covers
        run: lora-r16-2                   # the run that produced it
        paths: [outputs/lora-r16/predictions.jsonl]   # or `path:`; relative to LOGS
        sha256: 3f2a...                   # optional: of the single file
        expected_ids: corpus/jsum-v3.ids  # optional: the ids predictions must cover (else the plan's corpus.expected_ids)
        id_field: id                      # optional: the field holding each prediction's id (default `id`)

Reading the manifest checks only its shape; the deliverables' files are checked at build time
against the plan (reportgen.verify). Each entry keeps the line it starts on, for evidence.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

import yaml

from reportgen.bounded import TooComplex, compose_yaml
from reportgen.ingest.common import Reading, read_document, read_mapping
from reportgen.ingest.scan import Reader, Scan
from reportgen.model import Evidence, InputFile, ManifestEntry

FORMAT = "manifest"
DELIVERABLE = "deliverable"  # a file a manifest entry names
EXPECTED_IDS = "expected-ids"  # the ids a predictions deliverable must cover
FIELDS = ("id", "kind", "variant", "corpus", "run", "path", "paths", "sha256", "expected_ids", "id_field", "description")
SHA256 = re.compile(r"^[0-9a-fA-F]{64}$")


def sniff(head: bytes, name: str) -> bool:
    """A YAML or JSON file whose top level starts a `deliverables` list (and is not a plan, which has one too)."""
    if not name.endswith((".yaml", ".yml", ".json")):
        return False
    text = head.decode("utf-8", errors="replace")
    if re.search(r'^("?)(campaign|schedule|stop_rules)\1\s*:', text, re.MULTILINE):
        return False
    return bool(re.search(r'^(deliverables:|\{\s*"deliverables"\s*:)', text.lstrip(), re.MULTILINE))


def _entry_lines(text: str) -> list[int]:
    """The line each item of the deliverables list starts on, from the document's node graph (a JSON
    manifest composes as YAML too), so that a list inside an entry (`paths:` as a block list) moves no
    entry's line; failing that, each `- ` item of a YAML list (JSON: each `{` after the list)."""
    try:
        node = compose_yaml(text)
    except (yaml.YAMLError, TooComplex):
        node = None
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value == "deliverables" and isinstance(value, yaml.SequenceNode):
                return [item.start_mark.line + 1 for item in value.value]
    lines = text.splitlines()
    starts = [i + 1 for i, line in enumerate(lines) if re.match(r"^\s*-\s+\S", line)]
    if not starts:
        starts = [i + 1 for i, line in enumerate(lines) if re.match(r"^\s*\{", line)][1:]
    return starts


def read(path: Path, rel: str) -> tuple[InputFile, list[ManifestEntry]]:
    info = InputFile(path=rel, format=FORMAT)
    data = read_mapping(path, info, "a deliverables manifest holds a mapping with a `deliverables` list")
    if data is None:
        return info, []
    info.records = 0  # a manifest's records are its entries, not the mapping that holds them
    items = data.get("deliverables")
    if not isinstance(items, list):
        info.problem(1, "`deliverables` must be a list of entries")
        return info, []
    text = (read_document(path, info) or b"").decode("utf-8", errors="replace")
    starts = _entry_lines(text)
    entries: list[ManifestEntry] = []
    seen: set[str] = set()
    for index, item in enumerate(items):
        line = starts[index] if index < len(starts) else None
        where = f"deliverables[{index}]"
        if not isinstance(item, dict):
            info.skip(line, f"{where}: not a mapping; skipped")
            continue
        unknown = sorted(str(k) for k in item if k not in FIELDS)
        if unknown:
            info.problem(line, f"{where}: unknown key{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} ignored")
        ident, kind = item.get("id"), item.get("kind")
        if not isinstance(ident, str) or not ident or not isinstance(kind, str) or not kind:
            info.skip(line, f"{where}: `id` and `kind` are required strings; skipped")
            continue
        if ident in seen:
            info.skip(line, f"{where}: id '{ident}' is listed twice; the second entry is skipped")
            continue
        raw = item.get("paths", item.get("path"))
        paths = [raw] if isinstance(raw, str) else raw
        if not isinstance(paths, list) or not paths or not all(isinstance(p, str) and p for p in paths):
            info.skip(line, f"{where} ({ident}): `path` or `paths` must name at least one file or folder; skipped")
            continue
        sha = item.get("sha256")
        entry = ManifestEntry(
            id=ident, kind=kind, paths=list(paths), evidence=Evidence(rel, line),
            variant=_str(item, "variant"), corpus=_str(item, "corpus"), run=_str(item, "run"),
            sha256=sha.lower() if isinstance(sha, str) else None, expected_ids=_str(item, "expected_ids"),
            id_field=_str(item, "id_field") or "id", description=_str(item, "description"),
        )
        if sha is not None and not (isinstance(sha, str) and SHA256.match(sha)):
            entry.notes.append(f"sha256 {sha!r} is not 64 hexadecimal digits")
        seen.add(ident)
        entries.append(entry)
        info.records += 1
    return info, entries


def _str(item: dict, key: str) -> str | None:
    value = item.get(key)
    return None if value is None else str(value)


def recognise(rel: str, head: bytes) -> str | None:
    return "manifest" if sniff(head, PurePosixPath(rel).name) else None


def read_files(scan: Scan) -> None:
    """Deliverables manifests: what the campaign produced; their files are checked at build time."""
    for rel in scan.files("manifest"):
        with scan.contained(rel, FORMAT):
            info, entries = read(scan.found[rel][0], rel)
            scan.add(Reading([info], [], list(entries)))
            scan.entries += entries
        scan.done(rel)


READER = Reader(FORMAT, recognise, read_files)
