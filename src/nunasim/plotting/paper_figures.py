"""The pictures of ``nunasim reproduce``: each draws one figure's table (``FigureRun.table``)
with the paper's axes and series, and reads nothing else."""

from __future__ import annotations

import textwrap
from collections.abc import Callable

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from nunasim.plotting.latency import draw_latency_histograms
from nunasim.plotting.speedups import draw_speedups
from nunasim.units import format_size


def _grouped_bars(
    table: pd.DataFrame,
    group: str,
    series: str,
    label: Callable[[object], str],
    title: str,
    axis_labels: tuple[str, str],
) -> Figure:
    """One group of bars per value of ``group``, one bar per value of ``series``, of the
    table's ``speedup``, with a line at 1."""
    groups = list(dict.fromkeys(table[group]))
    names = list(dict.fromkeys(table[series]))
    values = table.set_index([group, series])["speedup"]
    palette = colormaps["tab10"]
    fig = Figure(figsize=(max(5.0, 0.5 * len(groups) * len(names) + 2), 3.6))
    ax = fig.subplots()
    width = 0.8 / max(1, len(names))
    for i, name in enumerate(names):
        heights = [float(values.get((g, name), np.nan)) for g in groups]
        x = np.arange(len(groups)) + (i - (len(names) - 1) / 2) * width
        ax.bar(x, heights, width, label=str(name), color=palette(i % 10), gid="bar")
    ax.set_xticks(np.arange(len(groups)))
    ax.set_xticklabels([label(g) for g in groups])
    ax.legend(fontsize=8, ncol=min(4, len(names)), frameon=False)
    return _finish(fig, ax, title, axis_labels)


def _wrapped(title: str) -> str:
    return "\n".join(textwrap.wrap(title, 70))


def _finish(fig: Figure, ax: Axes, title: str, axis_labels: tuple[str, str]) -> Figure:
    """The line at 1 (no change), the axes' labels, a grid and the title."""
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xlabel(axis_labels[0])
    ax.set_ylabel(axis_labels[1])
    ax.grid(alpha=0.3)
    fig.suptitle(_wrapped(title), fontsize=10)
    fig.tight_layout()
    return fig


def draw_fig9(table: pd.DataFrame, title: str) -> Figure:
    return draw_speedups(
        table.rename(columns={"configuration": "config", "speedup": "speedup_vs_ua"}),
        _wrapped(title),
    )


def draw_fig10(
    stores: dict[str, pd.DataFrame], title: str, table: pd.DataFrame | None = None
) -> Figure:
    """The histograms, with the paper's mean and maximum of each configuration that
    ``table`` (Fig. 10's) gives them for."""
    paper = {}
    if table is not None and {"paper_mean_ns", "paper_max_ns"} <= set(table.columns):
        for row in table.dropna(subset=["paper_mean_ns", "paper_max_ns"]).itertuples():
            paper[str(row.configuration)] = (float(row.paper_mean_ns), float(row.paper_max_ns))
    return draw_latency_histograms(stores, _wrapped(title), paper)


def draw_fig11(table: pd.DataFrame, title: str) -> Figure:
    return _grouped_bars(
        table,
        "size_bytes",
        "configuration",
        lambda s: format_size(int(s)),
        title,
        ("All-Gather size", "speedup over UA"),
    )


def draw_fig12(table: pd.DataFrame, title: str) -> Figure:
    fig = Figure(figsize=(5.0, 3.4))
    ax = fig.subplots()
    ordered = table.sort_values("size_bytes")
    ax.plot(ordered["size_bytes"], ordered["speedup"], marker="o", label="NAP+NAR", gid="line")
    ax.set_xscale("log")
    ax.set_xticks(ordered["size_bytes"])
    ax.set_xticklabels([format_size(int(s)) for s in ordered["size_bytes"]])
    return _finish(fig, ax, title, ("All-Gather size", "NAP+NAR speedup over UA"))


def draw_fig13(table: pd.DataFrame, title: str) -> Figure:
    ordered = table.sort_values("granularity", kind="stable")
    labelled = ordered.assign(
        parallelism=[f"{int(t):,} threadblocks" for t in ordered["threadblocks"]]
    )
    figure = _grouped_bars(
        labelled,
        "granularity",
        "parallelism",
        str,
        title,
        ("NAR granularity (domains)", "speedup over baseline routing"),
    )
    # Its differences are 5-15 %: a y range around them, the line at 1 inside it.
    low, high = float(table["speedup"].min()), float(table["speedup"].max())
    margin = max(0.02, 0.15 * (high - low))
    figure.axes[0].set_ylim(min(low, 1.0) - margin, max(high, 1.0) + 2 * margin)
    return figure


def draw_fig14(table: pd.DataFrame, title: str) -> Figure:
    fig = Figure(figsize=(5.0, 3.4))
    ax = fig.subplots()
    beside = table[table["gemm_edge"] > 0]
    for config, rows in beside.groupby("configuration", sort=False):
        ordered = rows.sort_values("gemm_edge")
        ax.plot(ordered["gemm_edge"], 1 / ordered["slowdown"], marker="o", label=config, gid="line")
    ax.legend(fontsize=8, frameon=False)
    return _finish(
        fig, ax, title, ("GEMM tile edge (m = n = k)", "collective speed\n(relative to no GEMM)")
    )


DRAW_TABLE = {
    "fig9": draw_fig9,
    "fig11": draw_fig11,
    "fig12": draw_fig12,
    "fig13": draw_fig13,
    "fig14": draw_fig14,
}
