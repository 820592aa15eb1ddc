"""Summaries and verdicts: medians, spreads, and whether a ratio is outside
the noise.

A time verdict comes from a confidence interval of the ratio before/after
(`ratio_interval`): a bootstrap that resamples the runs of each side and,
within each run drawn, its per-step times, so that both a noisy step and a
noisy run widen the interval. "Faster" or "slower" is said only when the
whole interval clears 1 by more than `TOLERANCE`; otherwise the ratio is
"no measurable gain". One noisy run widens the interval: it cannot flip the
verdict on its own.
"""

from __future__ import annotations

import math
import random
import statistics
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

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


# a ratio whose interval stays within this share of 1 is no measurable gain
TOLERANCE = 0.03
CONFIDENCE = 0.95
BOOTSTRAP_SAMPLES = 2000
# the fewest runs per side for a verdict: one run says nothing of run-to-run noise, and
# with two, one noisy run decides (measured on an H100: two identical copies of a
# script whose steps sync ten times each came out "1.48x faster" over two runs a side)
MIN_RUNS = 3


@dataclass(frozen=True)
class RatioInterval:
    """before/after (how many times faster after is), with its bootstrap
    interval at `confidence`."""

    ratio: float
    low: float
    high: float
    confidence: float
    runs_before: int
    runs_after: int

    def as_dict(self) -> Dict[str, float]:
        return {"ratio": self.ratio, "low": self.low, "high": self.high, "confidence": self.confidence,
                "tolerance": TOLERANCE, "runs_before": self.runs_before, "runs_after": self.runs_after}


def _mean_of_runs(runs: Sequence[Sequence[float]]) -> float:
    return statistics.fmean(statistics.fmean(r) for r in runs)


def _resampled(runs: Sequence[Sequence[float]], rng: random.Random) -> float:
    """The mean of a bootstrap sample: runs drawn with replacement, and the
    steps of each drawn run drawn with replacement."""
    total = 0.0
    for run in rng.choices(runs, k=len(runs)):
        total += math.fsum(rng.choices(run, k=len(run))) / len(run)
    return total / len(runs)


def ratio_interval(before: Sequence[Sequence[float]], after: Sequence[Sequence[float]],
                   confidence: float = CONFIDENCE, samples: int = BOOTSTRAP_SAMPLES,
                   seed: int = 0) -> RatioInterval:
    """The ratio of mean time per step, before over after, and its
    percentile bootstrap interval. `before` and `after` hold one sequence
    per run: that run's per-step times (or a single time per step for the
    whole run). Seeded, so the same timings give the same interval."""
    b_runs = [list(r) for r in before if len(r)]
    a_runs = [list(r) for r in after if len(r)]
    if not b_runs or not a_runs:
        raise ValueError("no measurements")
    point = ratio(_mean_of_runs(b_runs), _mean_of_runs(a_runs))
    rng = random.Random(seed)
    ratios: List[float] = sorted(
        ratio(_resampled(b_runs, rng), _resampled(a_runs, rng)) for _ in range(samples)
    )
    tail = (1.0 - confidence) / 2
    low = ratios[int(math.floor(tail * (samples - 1)))]
    high = ratios[int(math.ceil((1.0 - tail) * (samples - 1)))]
    return RatioInterval(point, low, high, confidence, len(b_runs), len(a_runs))


def time_verdict(interval: Optional[RatioInterval], tolerance: float = TOLERANCE) -> Optional[str]:
    """Faster only when the whole interval is above 1 + `tolerance`, slower
    only when it is below 1 / (1 + `tolerance`); otherwise no measurable
    gain. None with fewer than `MIN_RUNS` runs on a side: one run says
    nothing of the noise between runs."""
    if interval is None or min(interval.runs_before, interval.runs_after) < MIN_RUNS:
        return None
    if interval.low > 1.0 + tolerance:
        return FASTER
    if interval.high < 1.0 / (1.0 + tolerance):
        return SLOWER
    return NO_GAIN


def scaled_steps(step_times: Sequence[float], total: float, steps: int) -> List[float]:
    """A run's per-step host times scaled to sum to its synchronized total
    (the host's clock at each step runs ahead of the device by the queue it
    leaves at the end); without per-step times, the run's mean, once."""
    times = [t for t in step_times if t >= 0]
    s = math.fsum(times)
    if len(times) != steps or s <= 0:
        return [total / steps]
    return [t * total / s for t in times]


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
