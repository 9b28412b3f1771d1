"""Fig. 12, sensitivity to collective size (section 6.4): NAP+NAR's speedup over UA for an
8-GPU All-Gather as the size grows."""

from __future__ import annotations

import pandas as pd

from nunasim.experiments.figures.common import (
    FigureRun,
    Measured,
    best_per_case,
    comparison,
    ratio_text,
    with_speedup,
)
from nunasim.experiments.run_options import RunOptions
from nunasim.hardware import Preset
from nunasim.units import format_size

NAME = "fig12"
# Fig. 9's sizes (its 8-GPU All-Gather points, so the two share cached results); from
# 100 MB on, ``auto`` runs them on the flow engine.
SIZES = ["100kB", "1MB", "10MB", "100MB", "1GB"]
QUICK_SIZES = ["100kB", "1MB", "4MB"]
# The quick grid searches a few counts (1, 4 and 32 threadblocks per peer).
QUICK_THREADBLOCKS = [7, 28, 224]


def grid(quick: bool) -> dict:
    return {
        "collective": "allgather",
        "gpus": 8,
        "size": QUICK_SIZES if quick else SIZES,
        "configuration": ["UA", "NAP+NAR"],
        "threadblocks": QUICK_THREADBLOCKS if quick else "auto",
    }


def run(preset: Preset, quick: bool, options: RunOptions) -> FigureRun:
    runs = options.sweep(NAME, grid(quick), preset)
    best = best_per_case(runs, ["size_bytes", "configuration"])
    table = with_speedup(best, ["size_bytes"], {"configuration": "UA"})
    table = table[table["configuration"] == "NAP+NAR"][
        ["size_bytes", "configuration", "threadblocks", "granularity", "completion_ps", "speedup"]
    ].reset_index(drop=True)
    return FigureRun(
        NAME,
        "NAP+NAR speedup over UA against collective size, 8-GPU All-Gather",
        quick,
        table,
        comparison(NAME, claims(table)),
    )


def claims(table: pd.DataFrame) -> dict[str, Measured]:
    speedup = table.set_index("size_bytes")["speedup"].sort_index()
    listed = ", ".join(f"{format_size(int(s))} {ratio_text(v)}" for s, v in speedup.items())
    small = speedup[speedup.index <= 10**6]
    large = speedup[speedup.index >= 64 * 10**6]
    ours: dict[str, Measured] = {
        "shrinks": (listed, bool((speedup.diff().dropna() < 0).all()) and len(speedup) > 1),
    }
    if len(small):
        ours["small-speedup"] = (
            ", ".join(ratio_text(v) for v in small),
            bool((small > 1).all()),
            tuple(float(v) for v in small),
        )
    if len(large):
        first = float(large.iloc[0])
        ours["large-speedup"] = (ratio_text(first), first > 1, first)
    if len(small) and len(large):
        ours["decay"] = _decay(small, large)
    return ours


def _decay(small: pd.Series, large: pd.Series) -> Measured:
    """The fraction of its gain up to 1 MB (the mean of those sizes' gains, as the paper's
    range spans them) that the speedup keeps at the first size from 64 MB: the decay
    itself, whose direction is that it keeps less than all of it."""
    before = float(small.mean()) - 1
    after = float(large.iloc[0]) - 1
    if before <= 0:  # nothing to decay from
        return f"no gain up to 1 MB ({ratio_text(before + 1)})", False
    kept = after / before
    text = (
        f"{kept:.2f} of the gain: {ratio_text(after + 1)} at {format_size(int(large.index[0]))}"
        f" against {ratio_text(before + 1)} (mean up to 1 MB)"
    )
    return text, bool(kept < 1), kept
