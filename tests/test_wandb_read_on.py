"""A W&B transaction log (run-<id>.wandb) its run appends to is decoded on from where the last read stopped
(ingest/wandb.py read_log_file_on, kept by the parse cache): the logs wandb wrote for the fixtures
(tests/fixtures/make_fixtures.py: offline runs, a Trainer's, a killed run's preallocated blocks) read on from any
point between records read as they do whole; a read that ended inside a record keeps nothing, and a log that did
more than grow is read whole."""

from __future__ import annotations

import math
import shutil
import struct
from pathlib import Path

import pytest
from conftest import ingest_warm, noting

from reportgen.ingest import ingest, wandb
from reportgen.ingest.cache import open_cache

FIXTURES = Path(__file__).parent / "fixtures"
LOGS = sorted(p for p in [*(FIXTURES / "wandb").rglob("*.wandb"), *(FIXTURES / "trainer-wandb").rglob("*.wandb")]
              if p.stat().st_size > 1000 and "latest-run" not in p.parts)


def plain(value) -> object:
    """A read as plain data, comparable (NaN as 'nan')."""
    if isinstance(value, float):
        return repr(value) if math.isnan(value) else value
    if isinstance(value, dict):
        return {repr(key): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if hasattr(value, "__dict__"):
        return {"type": type(value).__name__, **{key: plain(item) for key, item in vars(value).items()}}
    return value


def seen(read: tuple) -> object:
    info, log = read
    return info, plain({**vars(log), "rows": None}), plain(vars(log.rows))


def record_ends(data: bytes) -> list[int]:
    """Where each record's last chunk ends (FULL or LAST), walking the chunks as W&B lays them out."""
    ends, pos = [], len(wandb.HEADER)
    while pos + 7 <= len(data):
        left = wandb.BLOCK - pos % wandb.BLOCK
        if left < 7:
            pos += left
            continue
        _crc, length, kind = struct.unpack_from("<IHB", data, pos)
        if kind == 0:
            pos += left
            continue
        pos += 7 + length
        if kind in (wandb.FULL, wandb.LAST) and pos <= len(data):
            ends.append(pos)
    return ends


@pytest.mark.parametrize("source", LOGS, ids=lambda p: f"{p.parts[-4]}/{p.parent.name[-8:]}")
def test_a_log_decoded_on_from_where_it_stopped_reads_as_the_whole_log_wherever_it_was_cut(tmp_path, source):
    data = source.read_bytes()
    path = tmp_path / source.name
    path.write_bytes(data)
    expected = seen(wandb.read_log_file(path, path.name, "r"))
    ends = record_ends(data)
    assert ends
    kept = 0
    for cut in sorted({*ends, *(e - 3 for e in ends[::3]), *range(len(wandb.HEADER), len(data), 499)}):
        path.write_bytes(data[:cut])
        first, since = wandb.read_log_file_on(path, path.name, "r")
        assert seen(first) == seen(wandb.read_log_file(path, path.name, "r"))
        if since is None:  # the read ended inside a record: nothing kept to decode on from
            assert cut not in ends
            continue
        kept += 1
        path.write_bytes(data)
        again, after = wandb.read_log_file_on(path, path.name, "r", since)
        assert seen(again) == expected
        assert after is None or after.at.end == len(data)
    assert kept >= len(ends) // 2


def test_a_log_that_grew_is_decoded_from_where_it_stopped_not_from_its_start(tmp_path, monkeypatch):
    source = next(p for p in LOGS if p.parts[-4] == "clean")
    data = source.read_bytes()
    ends = record_ends(data)
    cut = ends[len(ends) // 2]
    path = tmp_path / source.name
    path.write_bytes(data[:cut])
    _first, since = wandb.read_log_file_on(path, path.name, "r")
    path.write_bytes(data)
    scanned = noting(monkeypatch, wandb.Transactions, "scan", lambda self, buf, base, whole: (self.pos, base, len(buf)))
    got, _ = wandb.read_log_file_on(path, path.name, "r", since)
    monkeypatch.undo()
    base = cut - cut % wandb.BLOCK
    assert scanned == [(cut, base, len(data) - base)]  # from the record after the cut, in the bytes from its block's start
    assert seen(got) == seen(wandb.read_log_file(path, path.name, "r"))


@pytest.mark.parametrize("change", ["truncated", "rewritten", "replaced by another file"])
def test_a_log_that_did_not_only_grow_is_decoded_whole(tmp_path, monkeypatch, change):
    source = next(p for p in LOGS if p.parts[-4] == "clean")
    data = source.read_bytes()
    ends = record_ends(data)
    path = tmp_path / source.name
    path.write_bytes(data[: ends[len(ends) // 2]])
    _first, since = wandb.read_log_file_on(path, path.name, "r")
    if change == "truncated":
        path.write_bytes(data[: ends[len(ends) // 4]])
    elif change == "rewritten":
        path.write_bytes(data[:100] + bytes([data[100] ^ 1]) + data[101:])
    else:
        other = tmp_path / "other"
        other.write_bytes(data)
        other.replace(path)
    scanned = noting(monkeypatch, wandb.Transactions, "scan", lambda self, buf, base, whole: base)
    got, _ = wandb.read_log_file_on(path, path.name, "r", since)
    monkeypatch.undo()
    assert scanned == [0]
    assert seen(got) == seen(wandb.read_log_file(path, path.name, "r"))


def test_a_run_folder_whose_log_grew_decodes_it_on_and_reads_as_a_build_without_the_cache(tmp_path, monkeypatch):
    """A live run: its transaction log grew by records (W&B's own, appended as it writes them). With the parse
    cache the folder's log is decoded on from where the last read stopped, and the campaign is the one a build
    without the cache reads."""
    logs = tmp_path / "wandb-clean"
    shutil.copytree(FIXTURES / "wandb" / "clean", logs)
    log = next(logs.rglob("*.wandb"))
    data = log.read_bytes()
    ends = record_ends(data)
    cut = ends[len(ends) // 2]
    log.write_bytes(data[:cut])
    ingest(logs, cache=open_cache(logs))
    log.write_bytes(data)
    got, warm, scanned = ingest_warm(logs, monkeypatch, wandb.Transactions, "scan",
                                     lambda self, buf, base, whole: self.pos)
    assert warm.reads == 1 and scanned == [cut]
