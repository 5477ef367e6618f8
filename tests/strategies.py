"""Hypothesis strategies the reader tests share."""

from __future__ import annotations

from hypothesis import strategies as st


@st.composite
def damaged(draw, original: bytes) -> bytes:
    """A real file, damaged the ways files are: cut off, bytes flipped, bytes inserted or lost."""
    data = bytearray(original)
    for _ in range(draw(st.integers(1, 4))):
        where = draw(st.integers(0, len(data)))
        how = draw(st.sampled_from(["cut", "flip", "insert", "delete"]))
        if how == "cut":
            del data[where:]
        elif how == "flip" and where < len(data):
            data[where] ^= draw(st.integers(1, 255))
        elif how == "insert":
            data[where:where] = draw(st.binary(min_size=1, max_size=16))
        else:
            del data[where:where + draw(st.integers(1, 64))]
    return bytes(data)
