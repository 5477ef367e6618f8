"""How a measured number reads in a sentence: three significant digits, thousands separated."""

from __future__ import annotations

import math


def figure(value: float) -> str:
    """12.3, 0.0648, 540, 1,138: enough digits to tell small measurements apart, no false precision."""
    if not math.isfinite(value):
        return str(value)
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"
