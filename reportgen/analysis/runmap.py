"""How the analysis does the same work for many runs: one by one, unless the build hands it a way to
share the work among worker processes (reportgen.parallel's, which the analysis does not import: it
reads no files and starts no processes)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

# map_runs(function, items) -> [function(item) for item in items], in the items' order
Mapper = Callable[[Callable[[Any], Any], Sequence[Any]], list[Any]]


def one_by_one(function: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
    return [function(item) for item in items]
