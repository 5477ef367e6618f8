"""The quoted lines of a log are found block by block; they must be the lines a plain reading of the
file gives, whatever the block size, the line lengths and where the file ends."""

from __future__ import annotations

import random

import pytest

from reportgen.ingest.excerpts import MAX_EXCERPT_LINE, _line_heads


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
