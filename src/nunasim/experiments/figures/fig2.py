"""Fig. 2, collective sizes in LLM inference (sections 2 and 5.2): the cumulative
distribution of the output-buffer sizes of the collectives of one prefill step and one
decode step of every model on 64 GPUs, derived from the model (``llm_study.fig2_table``).
Nothing is simulated, so the quick and full figures are the same."""

from __future__ import annotations

import numpy as np
import pandas as pd

from nunasim.experiments.figures.common import FigureRun, comparison
from nunasim.experiments.llm_study import fig2_table, load_study, size_cdf
from nunasim.experiments.run_options import RunOptions
from nunasim.hardware import Preset
from nunasim.units import format_size

NAME = "fig2"
# The paper's "tens of megabytes" for prefill: below a hundred MB.
TENS_OF_MB = 100_000_000


def run(preset: Preset, quick: bool, options: RunOptions) -> FigureRun:
    sizes = fig2_table()
    table = size_cdf(sizes, by=("source", "phase"))
    table = table.rename(columns={"size": "size_bytes"})
    gpus = int(load_study().fig2["gpus"])
    return FigureRun(
        NAME,
        f"Collective output-buffer sizes of one inference step on {gpus} GPUs",
        quick,
        table,
        comparison(NAME, claims(sizes)),
    )


def weighted_median(sizes: pd.DataFrame) -> int:
    """The size at or below which half of the collectives (counted) lie."""
    by_size = sizes.groupby("size")["count"].sum().sort_index()
    cumulative = np.cumsum(by_size.to_numpy()) / by_size.sum()
    return int(by_size.index[int(np.searchsorted(cumulative, 0.5))])


def claims(sizes: pd.DataFrame) -> dict[str, tuple[str, bool | None]]:
    prefill = sizes[sizes.phase == "prefill"]
    decode = sizes[sizes.phase == "decode"]
    largest = int(prefill["size"].max())
    prefill_median, decode_median = weighted_median(prefill), weighted_median(decode)
    return {
        "prefill-tens-of-mb": (
            f"median {format_size(prefill_median)}, largest {format_size(largest)}",
            largest < TENS_OF_MB,
        ),
        "decode-smaller": (
            f"median {format_size(decode_median)} (prefill {format_size(prefill_median)})",
            decode_median < prefill_median,
        ),
    }
