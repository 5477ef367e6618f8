"""A console log its process appends to is read on from where the last read stopped (ingest/textlog.py
read_on, kept by the parse cache): captured stdout of real Trainer, Lightning and tqdm runs
(tests/fixtures/make_fixtures.py) read on from any point reads as it does whole (messages, sessions, printed
metric rows, counts), nothing scanned twice and nothing lost; a log that did more than grow is read whole.

The few lines appended to those logs here (a printed dict, a traceback, "Killed") are written by hand as the
Trainer, Python and the kernel print them: the logs they are appended to are the libraries' own."""

from __future__ import annotations

import dataclasses
import re
import shutil
from array import array
from pathlib import Path

import pandas as pd
import pytest
from conftest import changed, ingest_warm, noting

from reportgen.ingest import ingest, textlog
from reportgen.ingest.cache import open_cache

FIXTURES = Path(__file__).parent / "fixtures"
CONSOLES = {
    "trainer-resumed": FIXTURES / "formats" / "hf" / "hf-resumed" / "train.log",  # two processes in one log
    "trainer-killed": FIXTURES / "formats" / "hf" / "hf-killed" / "train.log",
    "trainer-nan": FIXTURES / "formats" / "hf" / "hf-nan" / "train.log",
    "lightning-killed": FIXTURES / "formats" / "lightning" / "pl-killed" / "stdout.log",
    "tqdm-redrawn": FIXTURES / "stdout" / "nohup.out",  # progress bars redrawn with "\r"
    "oom": FIXTURES / "formats" / "text" / "oom-1.log",  # a traceback
    "wandb-output": FIXTURES / "trainer-wandb" / "wandb" / "offline-run-20261206_050604-agbmguyd" / "files" / "output.log",
}


def seen(read: textlog.TextRead) -> tuple:
    """Everything a read gives, comparable (a Session compares as itself: its fields are compared)."""
    return (read.info, read.messages, [dataclasses.asdict(s) for s in read.sessions], read.metrics)


def same(a: textlog.TextRead, b: textlog.TextRead) -> None:
    (info_a, messages_a, sessions_a, frame_a), (info_b, messages_b, sessions_b, frame_b) = seen(a), seen(b)
    pd.testing.assert_frame_equal(frame_a, frame_b)
    assert frame_a.attrs == frame_b.attrs
    assert info_a == info_b and messages_a == messages_b and sessions_a == sessions_b


def scanned(state: textlog._Scanner) -> tuple:
    """A kept scan, comparable: its messages, sessions and printed columns (arrays by their bytes: NaN and all),
    and the rest of its state, counts and all (`at` left out: it holds the file's clock)."""
    def column(value):
        return value.tobytes() if isinstance(value, array) else value
    printed = {name: ({metric: tuple(map(column, rows_values)) for metric, rows_values in value.items()} if name == "metrics"
                      else column(value)) for name, value in vars(state.printed).items()}
    rest = {name: value for name, value in vars(state).items() if name not in ("messages", "sessions", "printed", "at")}
    return (state.messages, [dataclasses.asdict(s) for s in state.sessions], printed, rest)


def whole(path: Path) -> textlog.TextRead:
    return textlog.read_console(path, path.name)


def cuts(data: bytes) -> list[int]:
    """Every line end and carriage return, the newline itself (a whole line then has no newline yet), the byte
    after every third of them, and every 89th byte."""
    ends = sorted(m.end() for m in re.finditer(rb"[\r\n]", data))
    newlines = [m.start() for m in re.finditer(rb"\n", data)]
    return sorted({0, *ends, *newlines, *(e + 1 for e in ends[::3] if e < len(data)), *range(0, len(data), 89)})


@pytest.mark.parametrize("name", sorted(CONSOLES))
def test_a_log_read_on_from_where_it_stopped_reads_as_the_whole_log_wherever_it_was_cut(tmp_path, name):
    """Every way a growing console log can have been seen (at a line end, inside a line, inside a redrawn bar,
    inside a traceback, between two processes) then read on gives what reading the whole log gives."""
    data = CONSOLES[name].read_bytes()
    path = tmp_path / CONSOLES[name].name
    path.write_bytes(data)
    expected = whole(path)
    kept = 0
    for cut in cuts(data):
        path.write_bytes(data[:cut])
        first, since = textlog.read_on(path, path.name)
        if since is None:  # no complete line yet, or a character cut in two: nothing to read on from
            assert b"\n" not in data[:cut] or first.info.problems
            continue
        kept += 1
        same(first, whole(path))  # what the first read gave is the whole read of what was there
        # What is kept is the scan of the complete lines alone: the last line, scanned for this read, left no trace.
        path.write_bytes(data[: data.rfind(b"\n", 0, cut) + 1])
        assert scanned(since) == scanned(textlog.read_on(path, path.name)[1])
        path.write_bytes(data)
        again, after = textlog.read_on(path, path.name, since)
        same(again, expected)
        assert after.at.end == data.rfind(b"\n") + 1 and after.lines == data.count(b"\n")
    assert kept > len(cuts(data)) // 2


def test_a_log_that_grew_is_scanned_from_where_it_stopped_not_from_its_start(tmp_path, monkeypatch):
    source = CONSOLES["trainer-resumed"]
    path = tmp_path / source.name
    data = source.read_bytes()
    path.write_bytes(data)
    first, since = textlog.read_on(path, path.name)
    more = ("{'loss': 0.125, 'grad_norm': 0.5, 'learning_rate': 1e-05, 'epoch': 9.0}\n"
            "Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n"
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    with path.open("a", encoding="utf-8") as handle:
        handle.write(more)
    fed = noting(monkeypatch, textlog._Scanner, "feed", lambda self, text, first, *_: (text, first))
    got, after = textlog.read_on(path, path.name, since)
    monkeypatch.undo()
    assert fed == [(more, data.count(b"\n") + 1)]  # the new lines alone
    assert got.info.lines == first.info.lines + 4 and after.at.end == path.stat().st_size
    assert got.messages[-1].kind.value == "oom" and got.messages[-1].evidence.line == data.count(b"\n") + 4
    assert got.metrics["loss"].iloc[-1] == 0.125
    same(got, whole(path))


@pytest.mark.parametrize("change", ["rewritten", "truncated", "edited at the start", "replaced by another file"])
def test_a_log_that_did_not_only_grow_is_read_whole(tmp_path, monkeypatch, change):
    """Counter-examples: what was scanned before is trusted only when the file is the same one, no shorter,
    and its first bytes and the bytes before where the scan stopped are as they were."""
    data = CONSOLES["trainer-killed"].read_bytes()
    path = tmp_path / "train.log"
    path.write_bytes(data)
    _first, since = textlog.read_on(path, path.name)
    lines = data.splitlines(keepends=True)
    edited = {
        "rewritten": b"".join(lines[:-1]) + b"Killed\n" + b"more\n",
        "truncated": b"".join(lines[: len(lines) // 2]),
        "edited at the start": b"X" + data[1:] + b"Killed\n",
        "replaced by another file": data + b"Killed\n",
    }[change]
    changed(path, edited, replaced=change == "replaced by another file")
    fed = noting(monkeypatch, textlog._Scanner, "feed", lambda self, text, first, *_: first)
    got, _ = textlog.read_on(path, path.name, since)
    monkeypatch.undo()
    assert fed[0] == 1  # from the first line
    same(got, whole(path))


def test_a_line_being_written_is_scanned_once_it_is_whole_and_counted_once(tmp_path):
    """The last line of a live log, half written (a bar drawn, not yet ended), is read as the last line while it
    is; the state kept stops before it, so the next read scans it again from its start, once."""
    data = CONSOLES["tqdm-redrawn"].read_bytes()
    path = tmp_path / "nohup.out"
    cut = data.rfind(b"\r", 0, len(data) // 2)
    path.write_bytes(data[:cut])
    first, since = textlog.read_on(path, path.name)
    assert since.at.end == data.rfind(b"\n", 0, cut) + 1 and first.info.lines == since.lines + 1
    # The bar as far as it was drawn: where the process stood then, on the line being written.
    bar = list(re.finditer(rb"(\d+)/30 \[", data[:cut]))[-1]
    assert (first.messages[-1].kind.value, first.messages[-1].step, first.messages[-1].evidence.line) == \
        ("progress", int(bar[1]), data.count(b"\n", 0, bar.start()) + 1)
    path.write_bytes(data)
    again, _ = textlog.read_on(path, path.name, since)
    same(again, whole(path))
    assert (again.messages[-1].kind.value, again.messages[-1].step) == ("progress", 30)
    assert again.info.lines == data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


@pytest.mark.parametrize("case", ["not UTF-8", "past the budget", "Kaggle log"])
def test_a_log_read_whole_each_time_keeps_nothing_to_read_on_from(tmp_path, monkeypatch, case):
    """Counter-examples: a log whose bytes were replaced, one the budget cut (its end never reached) and a Kaggle
    log (a JSON array, not lines of a console) are read whole at every build."""
    path = tmp_path / "train.log"
    if case == "not UTF-8":
        path.write_bytes(CONSOLES["trainer-killed"].read_bytes() + b"caf\xe9\n")
    elif case == "past the budget":
        monkeypatch.setattr(textlog, "TEXT_BUDGET", 1000)
        path.write_bytes(CONSOLES["trainer-killed"].read_bytes())
    else:
        path = tmp_path / "lora-tiny.log"
        path.write_bytes((FIXTURES / "stdout" / "kaggle" / "lora-tiny.log").read_bytes())
    got, since = textlog.read_on(path, path.name)
    assert since is None
    same(got, whole(path))


def test_a_campaign_whose_console_log_grew_reads_that_log_on_and_as_a_build_without_the_cache(tmp_path, monkeypatch):
    """ingest with the parse cache: the other files are loaded, the grown console log is scanned on from where it
    stopped, and the campaign is the one a build without the cache reads."""
    logs = tmp_path / "trainer-restart"
    shutil.copytree(FIXTURES / "campaigns" / "trainer-restart", logs)
    ingest(logs, cache=open_cache(logs))
    grown = logs / "logs" / "lr1e-2.log"
    lines = grown.read_bytes().count(b"\n")
    with grown.open("a", encoding="utf-8") as handle:
        handle.write("Killed\n")
    got, warm, fed = ingest_warm(logs, monkeypatch, textlog._Scanner, "feed",
                                 lambda self, text, first, *_: (text, first))
    assert warm.reads == 1 and fed[0] == ("Killed\n", lines + 1)
    assert any(m.kind.value == "killed" for m in got.messages)
