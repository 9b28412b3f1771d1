"""Fig. 11, the isolation study (section 6.3): an 8-GPU All-Gather at a small and a medium
size under all eight configurations, each a speedup over UA."""

from __future__ import annotations

import pandas as pd

from nunasim.experiments.figures.common import (
    FigureRun,
    best_per_case,
    comparison,
    ratio_text,
    with_speedup,
)
from nunasim.experiments.run_options import RunOptions
from nunasim.hardware import Preset
from nunasim.policies.configurations import PAPER_CONFIGURATIONS
from nunasim.units import format_size

NAME = "fig11"
PLACEMENTS = ("UA", "NUMA", "NAP*", "NAP")
# The quick grid runs one count (8 threadblocks per peer) instead of the search.
QUICK_THREADBLOCKS = 56


def grid(quick: bool) -> dict:
    return {
        "collective": "allgather",
        "gpus": 8,
        "size": ["100kB", "1MB"] if quick else ["100kB", "10MB"],
        "configuration": list(PAPER_CONFIGURATIONS),
        "threadblocks": QUICK_THREADBLOCKS if quick else "auto",
    }


def run(preset: Preset, quick: bool, options: RunOptions) -> FigureRun:
    runs = options.sweep(NAME, grid(quick), preset)
    table = speedups(runs)
    return FigureRun(
        NAME,
        "Isolation of techniques: 8-GPU All-Gather, speedup over UA",
        quick,
        table,
        comparison(NAME, claims(table)),
    )


def speedups(runs: pd.DataFrame) -> pd.DataFrame:
    best = best_per_case(runs, ["size_bytes", "configuration"])
    table = with_speedup(best, ["size_bytes"], {"configuration": "UA"})
    return table[
        ["size_bytes", "configuration", "threadblocks", "granularity", "completion_ps", "speedup"]
    ]


def claims(table: pd.DataFrame) -> dict[str, tuple[str, bool | None]]:
    speedup = table.set_index(["size_bytes", "configuration"])["speedup"]
    sizes = list(dict.fromkeys(table["size_bytes"]))
    gains = {
        (size, placement): float(speedup[size, placement + "+NAR"] / speedup[size, placement])
        for size in sizes
        for placement in PLACEMENTS
    }
    misses = [f"{p} at {format_size(s)}" for (s, p), gain in gains.items() if gain <= 1]
    most = {size: max(PLACEMENTS, key=lambda p, s=size: gains[s, p]) for size in sizes}
    fastest = {size: speedup[size].idxmax() for size in sizes}
    ours: dict[str, tuple[str, bool | None]] = {
        "nar-helps-every-placement": (
            "every placement" if not misses else "not for " + ", ".join(misses),
            not misses,
        ),
        "nar-helps-nap-most": (
            ", ".join(f"{format_size(s)}: {most[s]}" for s in sizes),
            all(placement == "NAP" for placement in most.values()),
        ),
        "nap-alone-not-beneficial": (
            ", ".join(f"{format_size(s)}: {ratio_text(speedup[s, 'NAP'])}" for s in sizes),
            all(speedup[s, "NAP"] <= 1 for s in sizes),
        ),
        "nap-nar-fastest": (
            ", ".join(f"{format_size(s)}: {fastest[s]}" for s in sizes),
            all(config == "NAP+NAR" for config in fastest.values()),
        ),
    }
    large = [s for s in sizes if s >= 10**7]
    if large:
        alone = {p: float(speedup[large[0], p]) for p in ("NUMA", "NAP*", "NAP")}
        ours["placements-alone-slow-at-10mb"] = (
            ", ".join(f"{p} {ratio_text(v)}" for p, v in alone.items()),
            all(v < 1 for v in alone.values()),
        )
    return ours
