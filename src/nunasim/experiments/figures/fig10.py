"""Fig. 10, latency distributions (section 6.2): one-way remote store latency of an 8-GPU
1 MB All-Gather under UA and NAP+NAR (``headline.run_headline``). Its histograms need every
store of the two runs, which the result cache does not keep, so it always runs. Beside
them, the latencies the paper states without a run: section 1's zero-load spread of Fig.
1's transfer and section 3.1.3's longest NoC time, from the preset's paths."""

from __future__ import annotations

import pandas as pd

from nunasim.experiments.figures.common import FigureRun, Measured, comparison, ratio_text
from nunasim.experiments.headline import run_headline
from nunasim.experiments.run_options import RunOptions
from nunasim.hardware import Preset
from nunasim.hardware.summary import transfer_spread
from nunasim.units import PS_PER_NS

NAME = "fig10"
PLAN = "allgather:direct:gpus=8"
QUICK_PLAN = "allgather:direct:gpus=8:tbs=56"  # one count instead of the search
SIZE = 10**6
# Section 1's ratios: claim id -> ``TransferSpread.ratios`` key.
RATIOS = {
    "noc-worst-over-best": "NoC worst/best",
    "noc-mean-over-best": "NoC mean/best",
    "transfer-worst-over-best": "transfer worst/best",
    "transfer-mean-over-best": "transfer mean/best",
}


def run(preset: Preset, quick: bool, options: RunOptions) -> FigureRun:
    del options  # two runs, in this process
    outcome = run_headline(preset, QUICK_PLAN if quick else PLAN, SIZE)
    table = outcome.table[
        [
            "config",
            "threadblocks",
            "completion_ns",
            "store_mean_ns",
            "store_max_ns",
            "paper_mean_ns",
            "paper_max_ns",
        ]
    ].rename(columns={"config": "configuration"})
    rows = table.set_index("configuration")
    mean, worst = rows["store_mean_ns"], rows["store_max_ns"]
    ours: dict[str, Measured] = {
        "ua-mean": _against(mean["UA"], outcome.table, "UA", "paper_mean_ns"),
        "ua-max": _against(worst["UA"], outcome.table, "UA", "paper_max_ns"),
        "nap-nar-mean": _against(mean["NAP+NAR"], outcome.table, "NAP+NAR", "paper_mean_ns"),
        "nap-nar-max": _against(worst["NAP+NAR"], outcome.table, "NAP+NAR", "paper_max_ns"),
        "max-lower": (
            f"{100 * (1 - worst['NAP+NAR'] / worst['UA']):.0f}% lower",
            bool(worst["NAP+NAR"] < worst["UA"]),
            100 * (worst["NAP+NAR"] / worst["UA"] - 1),
        ),
    }
    ours |= transfer_claims(preset)
    stores = {config: result.stores[["latency_ps"]] for config, result in outcome.results.items()}
    return FigureRun(
        NAME,
        "One-way remote store latency, 8-GPU 1 MB All-Gather",
        quick,
        table,
        comparison(NAME, ours),
        stores,
    )


def transfer_claims(preset: Preset) -> dict[str, Measured]:
    """Section 1's and section 3.1.3's zero-load figures of Fig. 1's transfer on ``preset``
    (``hardware.summary.transfer_spread``: no run, the preset's paths alone). A ratio's
    direction is that the worst or the mean is above the best; the NoC time is a latency,
    without one."""
    spread = transfer_spread(preset)
    ratios = spread.ratios()
    ours: dict[str, Measured] = {}
    for claim, key in RATIOS.items():
        ours[claim] = (ratio_text(ratios[key]), bool(ratios[key] > 1), float(ratios[key]))
    worst = spread.noc_worst_ps / PS_PER_NS
    best = spread.noc_best_ps / PS_PER_NS
    ours["noc-transfer-max"] = (f"{worst:,.0f} ns (best {best:,.0f} ns)", None, float(worst))
    return ours


def _against(value: float, table: pd.DataFrame, config: str, column: str) -> Measured:
    """A latency beside the paper's (held to it within paper.yaml's tolerance: it has no
    direction of its own)."""
    paper = float(table.set_index("config").loc[config, column])
    return f"{value:,.0f} ns ({100 * (value / paper - 1):+.0f}%)", None, float(value)
