"""How a measured number reads in a sentence: three significant digits, thousands separated."""

from __future__ import annotations

import math

# Hours are reported to 4 decimals (0.36 s): what report.json and the pages show.
HOURS_DECIMALS = 4


def figure(value: float) -> str:
    """12.3, 0.0648, 540, 1,138: enough digits to tell small measurements apart, no false precision."""
    if not math.isfinite(value):
        return str(value)
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def median(values: list[float]) -> float | None:
    """The median of the finite values (None if there are none), without overflowing on huge ones."""
    finite = sorted(v for v in values if math.isfinite(v))
    if not finite:
        return None
    middle = len(finite) // 2
    return finite[middle] if len(finite) % 2 else finite[middle - 1] / 2 + finite[middle] / 2


def plural(n: int, word: str) -> str:
    """"1 save", "14 saves"."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"
