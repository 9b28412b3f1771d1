"""Fig. 10-style histograms of one-way remote-store latency, one panel per configuration,
with the mean and maximum marked (and the paper's, when given) and a legend that says
which line is which.

Reads the ``stores`` tables of SimResults (column ``latency_ps``) only, and the paper's
figures as numbers.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from nunasim.units import ps_to_ns


def draw_latency_histograms(
    stores: dict[str, pd.DataFrame],
    title: str,
    paper: Mapping[str, tuple[float, float]] | None = None,
) -> Figure:
    """``paper``: per configuration, the paper's mean and maximum (ns), drawn in grey."""
    paper = paper or {}
    labels = list(stores)
    latencies = {k: ps_to_ns(stores[k]["latency_ps"].to_numpy()) for k in labels}
    everything = np.concatenate([v for v in latencies.values() if len(v)]) if labels else []
    marks = [x for label in labels for x in paper.get(label, ())]
    if len(everything) and marks:
        everything = np.concatenate([everything, marks])
    low = float(np.floor(min(everything) / 50) * 50) if len(everything) else 0.0
    high = float(np.ceil(max(everything) / 50) * 50) if len(everything) else 1.0
    bins = np.linspace(low, high, 41)
    fig = Figure(figsize=(4.2 * len(labels), 3.4))
    axes = fig.subplots(1, len(labels), sharey=True, squeeze=False)[0]
    for panel, (ax, label) in enumerate(zip(axes, labels, strict=True)):
        values = latencies[label]
        ax.hist(
            values,
            bins=bins,
            color="#4a7fb0" if panel == 0 else "#d9822b",
            edgecolor="white",
            linewidth=0.3,
        )
        mean, worst = float(values.mean()), float(values.max())
        ax.axvline(mean, color="black", linestyle="--", linewidth=1, label="mean")
        ax.axvline(worst, color="#b02a2a", linestyle=":", linewidth=1.2, label="maximum")
        if label in paper:
            paper_mean, paper_max = paper[label]
            ax.axvline(paper_mean, color="grey", linestyle="--", linewidth=1, label="paper's mean")
            ax.axvline(paper_max, color="grey", linestyle=":", linewidth=1.2, label="paper's max")
        ax.legend(fontsize=7, frameon=False, loc="upper right")
        ax.set_title(
            f"({chr(ord('a') + panel)}) {label}: mean {mean:.0f} ns, max {worst:.0f} ns", fontsize=9
        )
        ax.set_xlabel("one-way remote store latency (ns)")
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("stores (256 B lines)")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig
