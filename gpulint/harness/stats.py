"""Summaries and verdicts: medians, spreads, and whether a ratio is outside
the noise."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Dict, Sequence

FASTER = "faster"
SLOWER = "slower"
NO_GAIN = "no measurable gain"
LESS_MEMORY = "less memory"
MORE_MEMORY = "more memory"
SAME_MEMORY = "same memory"
# memory figures are exact, not noisy: a difference under this share is nothing
MEMORY_TOLERANCE = 0.01


@dataclass(frozen=True)
class Summary:
    median: float
    low: float
    high: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> "Summary":
        if not values:
            raise ValueError("no measurements")
        return cls(statistics.median(values), min(values), max(values), len(values))

    def as_dict(self) -> Dict[str, float]:
        return {"median": self.median, "min": self.low, "max": self.high, "n": self.n}


def time_verdict(bad: Summary, good: Summary) -> str:
    """Faster or slower only when the two spreads do not overlap: every good
    repetition beat (or lost to) every bad one. Otherwise the ratio is noise."""
    if good.high < bad.low:
        return FASTER
    if good.low > bad.high:
        return SLOWER
    return NO_GAIN


def memory_verdict(bad_peak: float, good_peak: float) -> str:
    if bad_peak <= 0 and good_peak <= 0:
        return SAME_MEMORY
    ref = max(bad_peak, good_peak)
    if abs(bad_peak - good_peak) <= MEMORY_TOLERANCE * ref:
        return SAME_MEMORY
    return LESS_MEMORY if good_peak < bad_peak else MORE_MEMORY


def fmt_ms(seconds: float) -> str:
    """Seconds as milliseconds, three significant digits (whole ms from 100 up)."""
    v = seconds * 1e3
    return f"{v:.3g}" if v < 100 else f"{v:.0f}"


def fmt_mib(n) -> str:
    return "n/a" if n is None else f"{n / 2**20:,.0f} MiB"


def ratio(bad: float, good: float) -> float:
    """How many times faster (or smaller) good is: bad / good."""
    return bad / good if good > 0 else float("inf")
