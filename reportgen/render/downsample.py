"""Reduce a long metric series for display without hiding what matters.

TensorBoard keeps 1,000 reservoir-sampled points per tag, so one spike in a million steps is
usually not drawn at all. Here a series is cut into buckets of consecutive points and every
bucket keeps its minimum and its maximum, so the drawn envelope is the true one; every
non-finite point (NaN, +/-infinity), which a line cannot show, is kept to be drawn as a marker.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

DEFAULT_POINTS = 2000


@dataclass
class Reduced:
    """The points kept for one trace: positions into the original series, in order."""

    kept: np.ndarray  # indices of finite points drawn as the line (bucket minima and maxima)
    non_finite: np.ndarray  # indices of non-finite points drawn as markers
    total: int  # points in the series
    non_finite_total: int
    every_window: bool = True  # each window of non-finite points has its first and last point kept

    @property
    def shown(self) -> int:
        return len(self.kept) + len(self.non_finite)

    @property
    def complete(self) -> bool:
        return self.shown == self.total

    def count(self) -> str:
        """How many points the chart shows: "2,000 of 1,000,000 points shown", "all 3 points shown"."""
        if self.total <= 1:
            return "1 point shown" if self.total else "no point shown"
        if self.complete:
            return f"all {self.total:,} points shown"
        return f"{self.shown:,} of {self.total:,} points shown"

    def label(self) -> str:
        """The count and, for a reduced series, what the reduction kept."""
        if self.complete:
            return self.count()
        text = self.count() + " (each bucket's minimum and maximum kept"
        if self.non_finite_total:
            if len(self.non_finite) == self.non_finite_total:
                text += ", every non-finite point kept"
            elif self.every_window:
                text += f", {len(self.non_finite):,} of {self.non_finite_total:,} non-finite points kept: every window's first and last"
            else:
                text += f", {len(self.non_finite):,} of {self.non_finite_total:,} non-finite points kept, evenly spread"
        return text + ")"


def reduce(values: np.ndarray, points: int = DEFAULT_POINTS) -> Reduced:
    """Keep at most about `points` points of a series, ordered as given (by step).

    Finite points: the first, the last, and each bucket's minimum and maximum. Non-finite
    points: all of them while they fit in the budget, otherwise the first and last of every
    window of consecutive non-finite points (so no window disappears), and if even those do
    not fit, an even spread of them (the label says so).
    """
    values = np.asarray(values, dtype="float64")
    total = len(values)
    finite_mask = np.isfinite(values)
    bad = np.flatnonzero(~finite_mask)
    bad_kept, every_window = bad, True
    if len(bad) > points // 2:
        bad_kept = _window_edges(bad, values)
        if len(bad_kept) > points // 2:  # so many windows that even their edges do not fit
            bad_kept = bad_kept[np.linspace(0, len(bad_kept) - 1, points // 2).astype(np.int64)]
            every_window = False
    good = np.flatnonzero(finite_mask)
    budget = max(2, points - len(bad_kept))
    if len(good) <= budget:
        return Reduced(good, bad_kept, total, len(bad), every_window)
    buckets = max(1, budget // 2)
    bounds = np.linspace(0, len(good), buckets + 1).astype(np.int64)
    picked = [good[0], good[-1]]
    ordered = values[good]
    for lo, hi in itertools.pairwise(bounds):
        if hi <= lo:
            continue
        chunk = ordered[lo:hi]
        picked.append(good[lo + int(np.argmin(chunk))])
        picked.append(good[lo + int(np.argmax(chunk))])
    return Reduced(np.unique(np.asarray(picked, dtype=np.int64)), bad_kept, total, len(bad), every_window)


def _window_edges(bad: np.ndarray, values: np.ndarray) -> np.ndarray:
    """First and last index of each window of consecutive non-finite points of one kind."""
    kind = np.sign(values[bad])  # NaN stays NaN, +inf 1, -inf -1
    kind = np.where(np.isnan(kind), 0.0, kind)
    breaks = np.flatnonzero((np.diff(bad) != 1) | (np.diff(kind) != 0))
    starts = np.concatenate(([0], breaks + 1))
    ends = np.concatenate((breaks, [len(bad) - 1]))
    return np.unique(np.concatenate((bad[starts], bad[ends])))
