"""Quoting the evidence: the cited lines of each input file with a few lines around them.

Reads only what it needs (a line of hundreds of MB is never held whole) and never outside LOGS.
A binary file's "lines" are records (TensorBoard events): each cited record is given as what
reportgen read from it, its step and values or why it was not read, since its bytes are not text.
How an excerpt is shown (a cut line's mark, a record's values as text) is the site's to decide.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from reportgen.boundary import open_file, refusal
from reportgen.errors import during
from reportgen.ingest.cache import Signatures, signature
from reportgen.model import Campaign, Excerpt, QuotedRecord
from reportgen.recall import Recall, digest

MAX_EXCERPT_LINE = 400  # characters of a line kept for quoting; a longer line is marked cut


def excerpts(logs: Path, cited: dict[str, set[int]], context: int = 2,
             campaign: Campaign | None = None, recall: Recall | None = None,
             signatures: Signatures | None = None) -> dict[str, list[Excerpt]]:
    """The cited lines of each file with `context` lines around them; for a binary file, the cited
    records as `campaign` holds them. With `recall` (held by the watcher), a text file's quotes are those of
    the last build when the file's signature (ingest/cache.py) and its cited lines are the same: a long log
    is not read again to its end at every build for the lines it cites. `signatures`: the parse cache's, held
    with it, which take an unchanged file's signature once."""
    out: dict[str, list[Excerpt]] = {}
    root = logs.resolve()
    for rel, lines in sorted(cited.items()):
        with during(f"quoting {rel}"):
            _quote(logs, root, rel, lines, context, campaign, out, recall, signatures)
    return out


def _records(rel: str, wanted: list[int], campaign: Campaign) -> list[Excerpt]:
    """Each cited record of a binary file as reportgen read it: its step and values, or why it was skipped."""
    frame = campaign.metrics
    if len(frame):  # the cited lines first (a few rows), then their file: a long run's rows are compared once, by number
        rows = frame[frame["line"].isin(wanted).to_numpy(dtype=bool, na_value=False)]
        rows = rows[(rows["path"] == rel).to_numpy(dtype=bool, na_value=False)]
    else:
        rows = frame
    names = campaign.metric_names()
    problems = {p.line: p.message for info in campaign.inputs if info.path == rel for p in info.problems}
    spelled = campaign.spellings.get(rel, {})  # a tag read under the run's own name is shown as written
    # The rows' cells as Python objects, one array for all (a row at a time would make a Series of each): a
    # value logged as NaN is a float, one not logged is missing.
    cells = rows.to_numpy(dtype=object)
    at = {name: index for index, name in enumerate(rows.columns)}
    numbers = rows["line"].to_numpy()
    out = []
    for number in wanted:
        read = []
        for row in cells[numbers == number]:
            values = tuple((spelled.get(name, name), float(value)) for name in names
                           if not pd.isna(value := row[at[name]]) or (isinstance(value, float) and value != value))
            step = row[at["step"]]
            read.append(QuotedRecord(None if pd.isna(step) else int(step), values))
        if number in problems:
            read.append(QuotedRecord(None, (), problems[number]))
        out.append(Excerpt(number, (), frozenset([number]), unit="record", records=tuple(read)))
    return out


def _quote(logs: Path, root: Path, rel: str, lines: set[int], context: int, campaign: Campaign | None,
           out: dict[str, list[Excerpt]], recall: Recall | None, signatures: Signatures | None) -> None:
    """The cited lines of one file, with `context` lines around them, into out[rel]."""
    wanted = sorted(n for n in lines if n and n > 0)
    path = logs / rel
    if not wanted or refusal(root, path) is not None:
        return
    with open_file(path) as handle:
        head = handle.read(8192)
    if b"\x00" in head:
        if campaign is not None:
            out[rel] = _records(rel, wanted, campaign)
        return
    now = None
    if recall is not None:
        now = signatures.of(path, b"") if signatures is not None else signature(path, b"")
    if now is None:
        out[rel] = _quoted(path, wanted, context)
        return
    # Kept under the signature taken before quoting: a file written to meanwhile has another at the next build.
    out[rel] = recall.each("quote", [rel], [digest(rel, now, wanted, context)],
                           lambda _todo: [_quoted(path, wanted, context)])[0]


def _quoted(path: Path, wanted: list[int], context: int) -> list[Excerpt]:
    """The lines `wanted` of a text file, with `context` lines around them."""
    ranges: list[list[int]] = []
    for n in wanted:
        lo, hi = max(1, n - context), n + context
        if ranges and lo <= ranges[-1][1] + 1:
            ranges[-1][1] = hi
        else:
            ranges.append([lo, hi])
    heads = _line_heads(path, [n for lo, hi in ranges for n in range(lo, hi + 1)])
    texts: dict[int, str] = {}
    cut: set[int] = set()
    for number, raw in heads.items():
        text = raw.rstrip(b"\r\n").decode("utf-8", errors="replace")
        if len(text) > MAX_EXCERPT_LINE:
            text = text[:MAX_EXCERPT_LINE]
            cut.add(number)
        texts[number] = text
    return [
        Excerpt(lo, tuple(texts[n] for n in range(lo, hi + 1) if n in texts), frozenset(n for n in wanted if lo <= n <= hi),
                cut=frozenset(n for n in cut if lo <= n <= hi))
        for lo, hi in ranges
        if lo in texts
    ]


def _line_heads(path: Path, numbers: list[int], block_size: int = 1 << 20) -> dict[int, bytes]:
    """The first bytes of each numbered line (enough to quote it), found block by block: a block where
    no cited line starts has its newlines counted, not split, and a line of hundreds of MB is never
    held whole."""
    wanted = sorted(set(numbers))
    heads: dict[int, bytes] = {}
    keep = 4 * MAX_EXCERPT_LINE
    number, head, at = 1, b"", 0  # the line the block starts in, its head so far, the next of `wanted`
    with open_file(path) as handle:
        while at < len(wanted):
            block = handle.read(block_size)
            if not block:
                break
            if wanted[at] > number + block.count(b"\n"):
                number += block.count(b"\n")
                continue
            newlines = np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == 0x0A)
            while at < len(wanted) and wanted[at] <= number + len(newlines):
                index = wanted[at] - number  # the line's place in the block: 0 began before it
                start = 0 if index == 0 else int(newlines[index - 1]) + 1
                end = int(newlines[index]) + 1 if index < len(newlines) else len(block)
                head = head if index == 0 else b""
                head += block[start:max(start, min(end, start + keep - len(head)))]
                if index == len(newlines):
                    break  # the line goes on in the next block
                heads[wanted[at]], head = head, b""
                at += 1
            number += len(newlines)
    if at < len(wanted) and number == wanted[at] and head:
        heads[number] = head  # the last line, with no newline
    return heads
