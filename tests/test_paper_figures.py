"""The pictures a reader of the paper should recognise at a glance: Fig. 9 one panel per
collective on one y range, Fig. 10's lines named and the paper's drawn beside ours,
Fig. 13's 5-15 % differences visible, Fig. 15's title whole."""

from __future__ import annotations

import numpy as np
import pandas as pd

from nunasim.plotting.llm import TITLE_CHARS, draw_fig15_choices
from nunasim.plotting.paper_figures import draw_fig9, draw_fig10, draw_fig13


def test_fig9_has_a_panel_per_collective_on_one_y_range():
    rows = [
        {"collective": c, "size_bytes": s, "gpus": g, "configuration": k, "speedup": v}
        for c, top in (("allgather", 1.4), ("allreduce", 1.9), ("alltoall", 1.2))
        for s in (10**5, 10**6)
        for g in (2, 8)
        for k, v in (("UA", 1.0), ("UA+NAR", 1.1), ("NAP+NAR", top))
    ]
    figure = draw_fig9(pd.DataFrame(rows), "Fig. 9")
    assert [ax.get_ylabel().split("\n")[0] for ax in figure.axes] == [
        "allgather",
        "allreduce",
        "alltoall",
    ]
    assert len({ax.get_ylim() for ax in figure.axes}) == 1
    assert figure.axes[0].get_ylim()[1] >= 1.9  # All-Reduce's tallest bar fits every panel
    bars = [p for p in figure.axes[0].patches if p.get_gid() == "bar"]
    assert len(bars) == 2 * 2 * 2  # (size, GPUs) groups x configurations other than UA


def test_fig10_names_its_lines_and_draws_the_papers():
    rng = np.random.default_rng(0)
    stores = {
        "UA": pd.DataFrame({"latency_ps": rng.integers(700_000, 1_100_000, 500)}),
        "NAP+NAR": pd.DataFrame({"latency_ps": rng.integers(650_000, 900_000, 500)}),
    }
    table = pd.DataFrame(
        {
            "configuration": ["UA", "NAP+NAR"],
            "paper_mean_ns": [920.0, 780.0],
            "paper_max_ns": [1320.0, 1180.0],
        }
    )
    figure = draw_fig10(stores, "Fig. 10", table)
    for ax, (mean, worst) in zip(figure.axes, ((920, 1320), (780, 1180)), strict=True):
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert labels == ["mean", "maximum", "paper's mean", "paper's max"]
        drawn = {float(line.get_xdata()[0]) for line in ax.get_lines()}
        assert {mean, worst} <= drawn
        assert ax.get_xlim()[1] >= worst  # the paper's maximum is on the axis
    plain = draw_fig10(stores, "Fig. 10")
    assert [t.get_text() for t in plain.axes[0].get_legend().get_texts()] == ["mean", "maximum"]


def test_fig13_zooms_on_its_differences():
    table = pd.DataFrame(
        {
            "granularity": [2, 6, 12, 2, 6, 12],
            "threadblocks": [7, 7, 7, 1008, 1008, 1008],
            "speedup": [1.11, 1.17, 1.08, 1.04, 1.09, 1.02],
        }
    )
    low, high = draw_fig13(table, "Fig. 13").axes[0].get_ylim()
    assert 0.9 < low < 1.0 < 1.17 < high < 1.3


def test_fig15_title_is_wrapped_within_the_figure():
    rows = []
    for configuration in ("UA", "NAP+NAR"):
        for phase in ("prefill", "decode"):
            row = {"model": "m", "gpus": 64, "phase": phase, "configuration": configuration}
            row |= {"time_ms": 1.0, "compute_ms": 0.5, "allreduce_ms": 0.5}
            row |= {f"{k}_ms": 0.0 for k in ("reducescatter", "allgather", "alltoall", "sendrecv")}
            rows.append(row)
    title = "LLM inference on 2-64 GPUs, UA and NAP+NAR, " * 4
    figure = draw_fig15_choices(pd.DataFrame(rows), title)
    lines = figure._suptitle.get_text().split("\n")
    assert len(lines) > 1 and all(len(line) <= TITLE_CHARS for line in lines)
