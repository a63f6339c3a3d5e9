"""zkbench.stats: the statistics of the results: percentiles, medians, and
handoff delays from the grant and release times of a lock's holders.
"""

import math
import statistics


def pct(values, q):
    s = sorted(values)
    if not s:
        return float("nan")
    return s[max(0, math.ceil(q * len(s)) - 1)]


def median(values):
    return statistics.median(values) if values else float("nan")


def handoff_delays(events):
    """events: [granted, released] of every cycle of every client, one clock.
    The delay of a handoff is the next grant after a release."""
    ev = sorted(events)
    return [ev[i + 1][0] - ev[i][1] for i in range(len(ev) - 1)]

