"""What a long-lived process (`reportgen watch`) keeps of the work of its last build, so that a build after
a few logs changed works out again only what those logs touch.

A result is kept under a digest of everything it is worked out from: the function that makes it is given
those inputs and reads nothing else (a run's trace is made from the run's rows; a run's pace from its rows,
its timed records and its span). A later build asking with the same digest gets the kept result; a
difference in any input only makes the result worked out again. What a build did not ask for is forgotten
when it ends (`settle`): what is kept is one build's work, never more. Results are shared between builds,
so nothing may change them after they are made.
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np
import pandas as pd

Item = TypeVar("Item")
Result = TypeVar("Result")


def digest(*parts: object) -> bytes:
    """A digest of picklable values: equal values give equal digests in one process (pickle keeps every value it
    is given, so values that differ give digests that differ)."""
    return hashlib.blake2b(pickle.dumps(parts, protocol=pickle.HIGHEST_PROTOCOL), digest_size=16).digest()


def _cells(column: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """A column as a 64-bit word a row, byte for byte (a number's bits, a text's hash), and whether each row is
    missing: a NaN logged is not a value not logged."""
    missing = column.isna().to_numpy(dtype=bool)
    kind = column.dtype.kind if isinstance(column.dtype, np.dtype) else getattr(column.dtype, "kind", "O")
    if kind == "f":
        values = column.to_numpy(dtype="float64", na_value=0.0).view(np.uint64)
    elif kind in "iub":
        values = column.to_numpy(dtype="int64", na_value=0).view(np.uint64)
    elif kind == "M":
        values = column.to_numpy(dtype="datetime64[ns]").view(np.uint64)
    else:  # a text: its distinct values hashed once each, then looked up row by row
        codes, distinct = pd.factorize(column, use_na_sentinel=True)
        hashed = pd.util.hash_array(np.asarray(distinct, dtype=object), categorize=False)
        values = np.append(hashed, np.uint64(0))[codes]  # a missing text (code -1) is the appended 0
    return values, missing


def frame_digests(frame: pd.DataFrame, by: str) -> dict[str, bytes]:
    """A digest of each group's rows (the frame grouped by its column `by`), every cell and the rows' order,
    with the group's key and the frame's columns and their types. Each column is hashed a group at a time,
    straight from its array (a group whose rows are together, as in a frame sorted by `by`, without a copy)."""
    if not len(frame):
        return {}
    shape = digest([str(name) for name in frame.columns], [str(t) for t in frame.dtypes])
    columns = [_cells(frame[name]) for name in frame.columns if name != by]  # `by`: the group's key, hashed once
    out = {}
    for key, at in frame.groupby(by, sort=False, observed=True).indices.items():
        rows = slice(int(at[0]), int(at[-1]) + 1) if int(at[-1]) - int(at[0]) + 1 == len(at) else at  # ordered indices
        total = hashlib.blake2b(digest(shape, str(key), len(at)), digest_size=16)
        for values, missing in columns:
            total.update(np.ascontiguousarray(values[rows]))
            total.update(np.packbits(missing[rows]))
        out[str(key)] = total.digest()
    return out


class Recall:
    """The results of the last build and of the one being made, by part ("trace", "pace"...) and digest."""

    def __init__(self) -> None:
        self._last: dict[tuple[str, bytes], object] = {}
        self._now: dict[tuple[str, bytes], object] = {}
        self.reused = 0
        self.made = 0

    def each(self, part: str, items: Sequence[Item], keys: Sequence[bytes],
             make: Callable[[list[Item]], list[Result]]) -> list[Result]:
        """The results of `items`, whose digests are `keys`, in their order: kept ones as they were, the others
        made by `make` (given the items without a kept result, in their order; their results back)."""
        found: list = [self._now.get((part, key), self._last.get((part, key), _NONE)) for key in keys]
        todo = [index for index, result in enumerate(found) if result is _NONE]
        made = make([items[index] for index in todo]) if todo else []
        for index, result in zip(todo, made, strict=True):
            found[index] = result
        for key, result in zip(keys, found, strict=True):
            self._now[(part, key)] = result
        self.reused += len(found) - len(todo)
        self.made += len(todo)
        return found

    def settle(self) -> None:
        """A build is over: what it used is what the next one may reuse."""
        self._last, self._now = self._now, {}


_NONE = object()


def each(recall: Recall | None, part: str, items: Sequence[Item], key: Callable[[Item], bytes],
         make: Callable[[list[Item]], list[Result]]) -> list[Result]:
    """Recall.each when there is a recall (its keys made by `key`), else `make(items)`."""
    if recall is None:
        return make(list(items))
    return recall.each(part, items, [key(item) for item in items], make)
