"""Reading a latency-throughput curve: where it saturates and what it carries past that."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# The saturation load is where the average latency reaches this many times its zero-load
# value (the usual convention of NoC papers).
SATURATION_LATENCY_FACTOR = 2.0


@dataclass(frozen=True)
class Saturation:
    """The marks of one curve (flits/node/cycle; None where the sweep does not show it)."""

    load: float | None  # offered load where latency reaches 2 x zero-load, interpolated
    overload_accepted: float | None  # accepted at the highest offered load past ``load``
    overload_offered: float | None  # that load
    # When the first point past the threshold is unstable its latency has not settled and
    # nothing can be interpolated: ``load`` is then the last point below it and this the
    # unstable one, the saturation load lies between them.
    load_high: float | None = None


def saturation(
    offered: np.ndarray,
    accepted: np.ndarray,
    latency: np.ndarray,
    zero_load: float,
    saturated: np.ndarray,
) -> Saturation:
    """The marks of a curve given point by point (any order). The saturation load is
    interpolated linearly between the last point below 2 x zero-load and the first above it;
    an unstable (saturated) point counts as above whatever its average latency, and then
    the load is only bracketed (``load_high``)."""
    order = np.argsort(offered, kind="stable")
    offered, accepted = np.asarray(offered)[order], np.asarray(accepted)[order]
    latency, saturated = np.asarray(latency)[order], np.asarray(saturated, dtype=bool)[order]
    threshold = SATURATION_LATENCY_FACTOR * zero_load
    over = saturated | ~(latency < threshold)  # NaN latency (nothing arrived) is over
    if not over.any():
        return Saturation(None, None, None)
    k = int(np.argmax(over))
    high = None
    if k == 0:
        load = float(offered[0])
    elif saturated[k]:
        load, high = float(offered[k - 1]), float(offered[k])
    else:
        share = (threshold - latency[k - 1]) / (latency[k] - latency[k - 1])
        load = float(offered[k - 1] + share * (offered[k] - offered[k - 1]))
    if k == len(offered) - 1 and not saturated[k]:
        return Saturation(load, None, None, high)
    return Saturation(load, float(accepted[-1]), float(offered[-1]), high)
