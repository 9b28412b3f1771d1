"""Latency-throughput curves of ``nunasim noc``: latency and accepted throughput against
offered load, one line per packet size, with the saturation marks.

Reads the sweep's table only (columns of ``NocResult`` and the saturation marks the sweep
adds, ``experiments.noc_curve.curve_table``): offered, accepted, average latency, the flits
ejected in the window, the pattern's zero-load latency, the saturated flag, the channel
bound, packet_flits, and each curve's saturation load, its latency threshold and what it
carries past it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

_COLOURS = ("#4a7fb0", "#d9822b", "#3b8b4a", "#8a4fa0")


def draw_noc_curve(table: pd.DataFrame, title: str) -> Figure:
    fig = Figure(figsize=(8.4, 3.4))
    lat_ax, acc_ax = fig.subplots(1, 2)
    top = 0.0
    series = table.groupby("packet_flits")
    for index, (colour, (flits, rows)) in enumerate(zip(_COLOURS * 8, series, strict=False)):
        rows = rows.sort_values("offered_flits_per_node_cycle")
        offered = rows["offered_flits_per_node_cycle"].to_numpy()
        accepted = rows["accepted_flits_per_node_cycle"].to_numpy()
        latency = rows["avg_latency_cycles"].to_numpy()
        unstable = rows["saturated"].to_numpy(dtype=bool)
        first = rows.iloc[0]
        threshold = float(first["saturation_latency_cycles"])
        load, load_high = _mark(first["saturation_load"]), _mark(first["saturation_load_high"])
        overload = _mark(first["overload_accepted"]), _mark(first["overload_offered"])
        label = f"{flits}-flit packets"
        # Unstable points have no settled average: drawn hollow and not joined to the curve.
        lat_ax.plot(offered[~unstable], latency[~unstable], "o-", color=colour, ms=3, label=label)
        lat_ax.plot(offered[unstable], latency[unstable], "o", mfc="none", color=colour, ms=4)
        lat_ax.axhline(threshold, color=colour, ls=":", lw=0.8)
        acc_ax.plot(offered, accepted, "o-", color=colour, ms=3, label=label)
        ejected = rows["ejected_flits_per_node_cycle"].to_numpy()
        acc_ax.plot(offered, ejected, "--", color=colour, lw=0.8, label=f"{label}, ejected")
        acc_ax.plot(offered[unstable], accepted[unstable], "o", mfc="none", color="black", ms=5)
        if load is not None:
            for ax in (lat_ax, acc_ax):
                ax.axvline(load, color=colour, ls="--", lw=0.8)
                if load_high is not None:  # bracketed: shade where it lies
                    ax.axvspan(load, load_high, color=colour, alpha=0.12, lw=0)
            where = f"{load:.3g}"
            if load_high is not None:
                where += f"-{load_high:.3g}"
            lat_ax.annotate(
                f"saturation {where}",
                (load, threshold),
                fontsize=7,
                color=colour,
                xytext=(-90, 6 + 11 * index),  # one line per series, left of the mark
                textcoords="offset points",
            )
        if overload[0] is not None and overload[1] is not None:
            acc_ax.annotate(
                f"{overload[0]:.3g} at {overload[1]:.3g}",
                (overload[1], overload[0]),
                fontsize=7,
                color=colour,
                xytext=(-70, -14 - 11 * index),
                textcoords="offset points",
            )
        top = max(top, float(np.nanmax(offered)))
    bound = float(table["channel_bound_flits_per_node_cycle"].min())
    acc_ax.plot([0, top], [0, top], color="grey", lw=0.6, label="accepted = offered")
    acc_ax.axhline(bound, color="#b02a2a", ls=":", lw=1, label=f"channel bound {bound:.3g}")
    finite = table["avg_latency_cycles"].to_numpy()
    finite = finite[np.isfinite(finite)]
    if len(finite):
        zero = float(table["pattern_zero_load_cycles"].min())
        lat_ax.set_ylim(0, min(float(finite.max()) * 1.05, 8 * zero))
    lat_ax.set_xlabel("offered load (flits/node/cycle)")
    lat_ax.set_ylabel("average latency (cycles)")
    lat_ax.set_title("(a) latency; hollow: unstable", fontsize=9)
    acc_ax.set_xlabel("offered load (flits/node/cycle)")
    acc_ax.set_ylabel("accepted (flits/node/cycle)")
    acc_ax.set_title("(b) accepted throughput", fontsize=9)
    for ax in (lat_ax, acc_ax):
        ax.grid(alpha=0.3)
        ax.set_xlim(0, top * 1.02)
        ax.legend(fontsize=7, loc="upper left")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def _mark(value: object) -> float | None:
    """A saturation mark of the table, None where the sweep does not show it (NaN)."""
    number = float(value)  # type: ignore[arg-type]
    return None if np.isnan(number) else number
