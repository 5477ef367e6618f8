"""Non-finite values (NaN, infinity) in each run's metrics, grouped into windows of steps."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import pandas as pd

from reportgen.model import (
    METRIC_FRAME_COLUMNS,
    Campaign,
    Evidence,
    MessageKind,
    metric_values,
    same_metric,
)


@dataclass
class NonFinite:
    """A window of logged rows where one metric was not finite, from its first row on."""

    run: str
    metric: str
    step: int | None
    last_step: int | None
    count: int
    evidence: list[Evidence] = field(default_factory=list)
    note: str | None = None
    at: datetime | None = None  # when the first row was logged, for formats that keep times


def non_finite(campaign: Campaign) -> dict[str, list[NonFinite]]:
    """Per run, each metric's non-finite windows (consecutive logged rows), plus text-log reports."""
    out: dict[str, list[NonFinite]] = {}
    frame = campaign.metrics
    names = [c for c in frame.columns if c not in METRIC_FRAME_COLUMNS]
    for name in names:
        logged, numbers = metric_values(frame[name], missing=0.0)
        if not logged.any():
            continue
        bad = logged & ~np.isfinite(numbers)
        if not bad.any():
            continue
        rows = frame.loc[logged, ["run", "path", "line", "step", "ts"]].assign(bad=bad[logged])
        # A window is a stretch of consecutive logged rows (of this metric, in one file) that are not finite;
        # two files of one run (its trainer_state.json and its TensorBoard events) showing the same window
        # show one window, with both as evidence.
        seen: dict[tuple, NonFinite] = {}
        for (run, path), group in rows.groupby(["run", "path"], sort=True):
            flags = np.concatenate(([False], group["bad"].to_numpy(), [False]))
            edges = np.flatnonzero(flags[1:] != flags[:-1])
            for start, stop in zip(edges[::2], edges[1::2] - 1):
                first, last = group.iloc[start], group.iloc[stop]
                span = (str(run), _int(first["step"]), _int(last["step"]), int(stop - start + 1))
                evidence = Evidence(str(path), _int(first["line"]))
                at = None if pd.isna(first["ts"]) else first["ts"].to_pydatetime()
                if span in seen and span[1] is not None:
                    seen[span].evidence.append(evidence)
                    seen[span].at = seen[span].at or at
                    continue
                seen[span] = window = NonFinite(str(run), name, *span[1:], [evidence], at=at)
                out.setdefault(str(run), []).append(window)
    for message in campaign.messages:
        if message.kind == MessageKind.NON_FINITE and message.run is not None:
            metric = message.target or "loss"
            covering = [w for w in out.get(message.run, []) if message.evidence.path in {e.path for e in w.evidence}
                        and (message.target is None or w.metric == message.target)
                        and message.step is not None and w.step is not None and w.step <= message.step <= (w.last_step or w.step)]
            if covering:  # the value is already in the metrics; keep what the source said about it
                for window in covering:
                    window.note = window.note or message.message
                continue
            if any(same_metric(metric, w.metric) for w in out.get(message.run, []) if message.evidence.path not in {e.path for e in w.evidence}):
                continue  # a printed copy of values the run's metrics already hold (its step is only where a progress bar was)
            out.setdefault(message.run, []).append(NonFinite(
                message.run, metric, message.step, message.step, 1, [message.evidence], note=message.message))
    for windows in out.values():
        windows.sort(key=lambda n: (n.step is None, n.step or 0, n.metric, n.evidence))
    return out


def _int(value) -> int | None:
    return None if pd.isna(value) else int(value)
