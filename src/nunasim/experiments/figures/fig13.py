"""Fig. 13, sensitivity to NAR granularity (section 6.5): a 1 MB 8-GPU All-Gather under NAP
with 2 to 12 NAR domains, against NAP with baseline routing, at 7 and 1,008 threadblocks
per GPU."""

from __future__ import annotations

import pandas as pd

from nunasim.experiments.figures.common import (
    FigureRun,
    comparison,
    ratio_text,
    with_speedup,
)
from nunasim.experiments.run_options import RunOptions
from nunasim.hardware import Preset
from nunasim.scenario import Configuration

NAME = "fig13"
THREADBLOCKS = [7, 1008]  # the paper's low and high parallelisation
GRANULARITIES = [2, 4, 6, 8, 12]
QUICK_GRANULARITIES = {7: [2, 6, 12], 1008: [8, 12]}  # 1,008 threadblocks cost most


def grid(quick: bool, threadblocks: int) -> dict:
    domains = QUICK_GRANULARITIES[threadblocks] if quick else GRANULARITIES
    return {
        "collective": "allgather",
        "gpus": 8,
        "size": "1MB",
        "configuration": ["NAP", *(Configuration("NAP", True, g) for g in domains)],
        "threadblocks": threadblocks,
    }


def run(preset: Preset, quick: bool, options: RunOptions) -> FigureRun:
    runs = pd.concat(
        [options.sweep(NAME, grid(quick, count), preset) for count in THREADBLOCKS],
        ignore_index=True,
    )
    table = with_speedup(runs, ["threadblocks"], {"configuration": "NAP"})
    table = table[table["configuration"] == "NAP+NAR"][
        ["threadblocks", "granularity", "completion_ps", "speedup"]
    ].reset_index(drop=True)
    return FigureRun(
        NAME,
        "NAR granularity: 1 MB 8-GPU All-Gather, NAP+NAR over NAP with baseline routing",
        quick,
        table,
        comparison(NAME, claims(table)),
    )


def claims(table: pd.DataFrame) -> dict[str, tuple[str, bool | None]]:
    speedup = table.set_index(["threadblocks", "granularity"])["speedup"]
    ours: dict[str, tuple[str, bool | None]] = {}
    few = speedup[7]
    finest, coarser = float(few[few.index.max()]), float(few[few.index < few.index.max()].max())
    ours["few-tbs-fine-slower"] = (
        f"{few.index.max()} domains {ratio_text(finest)}, best coarser {ratio_text(coarser)}",
        finest < coarser,
    )
    many = speedup[1008]
    best = int(many.idxmax())
    ours["many-tbs-finest-best"] = (
        f"{best} domains best ({ratio_text(float(many.max()))}); "
        f"{many.index.max()}: {ratio_text(float(many[many.index.max()]))}",
        best == many.index.max(),
    )
    return ours
