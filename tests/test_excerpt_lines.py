"""The quoted lines of a log are found block by block; they must be the lines a plain reading of the
file gives, whatever the block size, the line lengths and where the file ends."""

from __future__ import annotations

import importlib
import math
import random

import pytest

from reportgen.ingest import ingest
from reportgen.ingest.excerpts import MAX_EXCERPT_LINE, _line_heads, excerpts
from reportgen.model import QuotedRecord
from reportgen.recall import Recall

excerpts_module = importlib.import_module("reportgen.ingest.excerpts")  # the package's `excerpts` is the function


def plain_heads(path, numbers: set[int]) -> dict[int, bytes]:
    """Every numbered line's first bytes, from Python's own line iteration."""
    with open(path, "rb") as handle:
        return {n: line[:4 * MAX_EXCERPT_LINE].rstrip(b"\r\n") for n, line in enumerate(handle, 1) if n in numbers}


@pytest.mark.parametrize("seed", range(40))
def test_lines_found_by_blocks_are_the_files_lines(tmp_path, seed):
    rng = random.Random(seed)
    lengths = [rng.choice([0, 1, 5, 50, 4 * MAX_EXCERPT_LINE - 1, 4 * MAX_EXCERPT_LINE, 4 * MAX_EXCERPT_LINE + 1, 2000])
               for _ in range(rng.randint(0, 60))]
    data = b"\n".join(bytes([65 + n % 26]) * length for n, length in enumerate(lengths))
    data += rng.choice([b"", b"\n", b"\r\n", b"a last line with no newline"])
    path = tmp_path / "log.txt"
    path.write_bytes(data)
    numbers = sorted(rng.sample(range(1, 70), rng.randint(0, 25)))
    expected = plain_heads(path, set(numbers))
    for block_size in (3, 7, 64, 4096, 1 << 20):
        found = {n: head.rstrip(b"\r\n") for n, head in _line_heads(path, numbers, block_size).items()}
        assert found == expected, block_size


def test_a_line_after_the_last_is_not_found(tmp_path):
    """Counter-example: a file ending in a newline has no empty line after it to quote."""
    path = tmp_path / "log.txt"
    path.write_bytes(b"one\ntwo\n")
    assert _line_heads(path, [2, 3]) == {2: b"two\n"}


def _counted(monkeypatch) -> list[str]:
    """The files whose lines are looked for (by _line_heads), in order."""
    read: list[str] = []
    real = excerpts_module._line_heads
    monkeypatch.setattr(excerpts_module, "_line_heads", lambda path, numbers, *rest: read.append(path.name) or real(path, numbers, *rest))
    return read


def test_with_a_recall_an_unchanged_files_quotes_are_the_last_builds(tmp_path, monkeypatch):
    """The watcher's recall keeps each text file's quotes under its signature and cited lines: an unchanged log is
    not read again. Counter-examples: a log that grew, and other cited lines, are quoted again; the quotes are
    always those a build without the recall makes."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.log").write_text("".join(f"line {n}\n" for n in range(1, 40)), encoding="utf-8")
    (logs / "b.log").write_text("one\ntwo\nthree\n", encoding="utf-8")
    read = _counted(monkeypatch)
    recall = Recall()
    cited = {"a.log": {5, 30}, "b.log": {2}}
    first = excerpts(logs, cited, recall=recall)
    recall.settle()
    assert read == ["a.log", "b.log"] and first == excerpts(logs, cited)
    read.clear()
    assert excerpts(logs, cited, recall=recall) == first and read == []
    recall.settle()
    with (logs / "b.log").open("a", encoding="utf-8") as handle:
        handle.write("four\n")
    again = excerpts(logs, {"a.log": {5, 31}, "b.log": {2}}, recall=recall)  # b.log: the same line, the file grown
    recall.settle()
    assert read == ["a.log", "b.log"] and again == excerpts(logs, {"a.log": {5, 31}, "b.log": {2}})
    assert again["b.log"][-1].lines[-1] == "four"



def test_a_binary_files_cited_records_are_quoted_as_read_a_nan_kept_and_a_value_not_logged_left_out(tmp_path):
    """A TensorBoard file's cited records, quoted from what reportgen read of them: each row of a record with its
    step and the values it logged (a NaN logged is a value; a metric the row did not log is not shown), a record
    of two summaries as two rows, and a record with nothing read as none."""
    from test_tensorboard_speed_shape import MIXED

    logs = tmp_path / "logs"
    (logs / "r").mkdir(parents=True)
    name = "events.out.tfevents.1796244583.vm.6803.0"
    (logs / "r" / name).write_bytes(b"".join(MIXED))
    campaign = ingest(logs)
    quoted = {e.first_line: e.records for e in excerpts(logs, {f"r/{name}": {1, 2, 4, 5, 7}}, campaign=campaign)[f"r/{name}"]}
    assert quoted[1] == () and quoted[7] == ()  # no values; Lightning's placeholder, left out
    assert quoted[2] == (QuotedRecord(1, (("loss", 0.5),)),)
    [nan] = quoted[4]
    assert nan.step == 1 and [(n, math.isnan(v)) for n, v in nan.values] == [("eval/acc", True)]
    assert quoted[5] == (QuotedRecord(2, (("loss", 0.375),)), QuotedRecord(2, (("lr", 0.125),)))
