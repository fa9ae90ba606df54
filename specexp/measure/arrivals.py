"""When each request of an open-loop window is sent: scheduled offsets from the window's start.

One function, `schedule`, turns a request rate, an arrival process and a seed into every
request's send offset (seconds after the window's start). Poisson arrivals draw exponential
gaps; `gamma` draws gamma gaps of shape `burstiness` with the same mean (shape 1 is Poisson,
below 1 burstier, above 1 smoother); `constant` spaces requests exactly 1 / rate apart. An
infinite rate sends everything at offset 0 (a closed-loop burst). The first request is sent at
offset 0, so a window's span is the sum of n - 1 gaps. The same seed gives the same schedule,
so a drafter and its baseline see the very same arrivals. Trace replay reuses `scaled` for
recorded timestamps.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

Arrival = Literal["poisson", "constant", "gamma"]
ARRIVALS: tuple[str, ...] = ("poisson", "constant", "gamma")


def request_count(rate: float, num_requests: int | None, duration_s: float | None) -> int:
    """Requests in one window: `num_requests`, else as many as `duration_s` holds at `rate`
    (at least 1)."""
    if num_requests is not None:
        return num_requests
    if duration_s is None or math.isinf(rate):
        raise ValueError(
            "an open-loop window needs workload.num_requests (or workload.duration_s with a finite rate)"
        )
    return max(1, int(round(rate * duration_s)))


def schedule(
    n: int, rate: float, arrival: Arrival = "poisson", burstiness: float = 1.0, seed: int = 0
) -> list[float]:
    """Send offsets (seconds, non-decreasing, the first 0) of `n` requests at `rate` req/s."""
    if n <= 0:
        return []
    if math.isinf(rate):
        return [0.0] * n
    if rate <= 0:
        raise ValueError(f"request rate must be > 0, got {rate}")
    mean = 1.0 / rate
    import numpy as np  # here: a run without open-loop arrivals never needs it

    rng = np.random.default_rng(seed)
    if arrival == "constant":
        gaps = np.full(n - 1, mean)
    elif arrival == "poisson":
        gaps = rng.exponential(mean, n - 1)
    elif arrival == "gamma":
        if burstiness <= 0:
            raise ValueError(f"burstiness (gamma shape) must be > 0, got {burstiness}")
        gaps = rng.gamma(burstiness, mean / burstiness, n - 1)
    else:
        raise ValueError(f"arrival must be one of {', '.join(ARRIVALS)}, got {arrival!r}")
    return [0.0, *np.cumsum(gaps).tolist()]


def scaled(timestamps: Sequence[float], speed: float = 1.0) -> list[float]:
    """Recorded arrival timestamps as send offsets from the first, replayed `speed` times faster."""
    if not timestamps:
        return []
    first = min(timestamps)
    return [(t - first) / speed for t in timestamps]


def rate_of(times: Sequence[float]) -> float | None:
    """Requests per second of sends at `times`: (n - 1) / (last - first); None under 2 sends or
    when they all left at once."""
    ordered = sorted(times)
    if len(ordered) < 2 or ordered[-1] <= ordered[0]:
        return None
    return (len(ordered) - 1) / (ordered[-1] - ordered[0])
