"""How a measured number reads in a sentence: three significant digits, thousands separated."""

from __future__ import annotations

import math
from decimal import Decimal

# Hours are reported to 4 decimals (0.36 s): what report.json and the pages show.
HOURS_DECIMALS = 4


def duration(hours: float | None) -> str:
    """A length of time as the site tells it, in tables and sentences alike: minutes below an hour, hours above,
    one decimal ("45.0 min", "1.5 h"); "—" when it is not known."""
    if hours is None:
        return "—"
    return f"{hours * 60:,.1f} min" if abs(hours) < 1 else f"{hours:,.1f} h"


def figure(value: float) -> str:
    """12.3, 0.0648, 540, 1,138, 2e-4: enough digits to tell small measurements apart, no false
    precision; below 0.001 (a learning rate) in scientific notation."""
    if not math.isfinite(value):
        return str(value)
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if 0 < abs(value) < 1e-3:
        mantissa, exponent = f"{value:.2e}".split("e")
        return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"
    return f"{value:.3g}"


def _decimals(text: str) -> int | None:
    """Digits after the point of a plain decimal ("0.192" -> 3); None for exponent forms."""
    if "e" in text or "inf" in text or "nan" in text:
        return None
    return len(text.split(".")[1]) if "." in text else 0


def compared(value: float, threshold: float) -> tuple[str, str]:
    """A value and the threshold it is compared with at one precision: "0.192" and "0.200", not "0.2";
    each keeps up to four significant digits, and the shorter takes the longer's decimals."""
    precision = 4
    shown, limit = f"{value:.{precision}g}", f"{threshold:.{precision}g}"
    while shown == limit and value != threshold and precision < 17:  # 0.31996 is not shown as 0.32 beside 0.32
        precision += 1
        shown, limit = f"{value:.{precision}g}", f"{threshold:.{precision}g}"
    places = [_decimals(shown), _decimals(limit)]
    if None in places or not (math.isfinite(value) and math.isfinite(threshold)):
        return shown, limit
    digits = max(p for p in places if p is not None)
    return f"{value:.{digits}f}", f"{threshold:.{digits}f}"


def difference(a: float, b: float) -> float:
    """a - b without binary noise: 0.334 - 0.301 is 0.033, and 123456.78 - 123456.77 is 0.01."""
    if not (math.isfinite(a) and math.isfinite(b)):
        return a - b
    return float(Decimal(repr(a)) - Decimal(repr(b)))


def money(amount: float, currency: str) -> str:
    """"47.14 USD", "1,200.00 USD": money always to the cent, with its currency."""
    return f"{amount:,.2f} {currency}"


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


def listed(names: list[str], shown: int = 5) -> str:
    """Names for a sentence: the first `shown`, then how many more ("a, b, c and 497 more"), so that a
    sentence about the runs of a campaign of hundreds stays a sentence."""
    if len(names) <= shown:
        return ", ".join(names)
    return f"{', '.join(names[:shown])} and {len(names) - shown:,} more"
