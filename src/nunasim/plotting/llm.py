"""Figures of the LLM study, from its tables only: Fig. 15's stacked step-time bars and
Fig. 2's cumulative distributions of collective sizes."""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure

PARTS = ("compute", "allreduce", "reducescatter", "allgather", "alltoall", "sendrecv")
PHASE_METRIC = {"prefill": "TTFT", "decode": "TPOT"}
TITLE_CHARS = 110  # Fig. 15's title wraps at this many characters, within its 13 inches


def draw_fig15(table: pd.DataFrame, gpus: int) -> Figure:
    """Per model, UA and NAP+NAR bars side by side, stacked by compute and each collective
    kind, normalised to UA's step time; one panel per phase."""
    rows = table[table.gpus == gpus]
    phases = [p for p in PHASE_METRIC if p in set(rows.phase)]
    figure, axes = plt.subplots(len(phases), 1, figsize=(13, 3.8 * len(phases)), squeeze=False)
    colours = plt.get_cmap("tab10")
    for ax, phase in zip(axes[:, 0], phases, strict=True):
        part = rows[rows.phase == phase]
        models = list(dict.fromkeys(part.model))
        for m, model in enumerate(models):
            ua_total = float(
                part[(part.model == model) & (part.configuration == "UA")].time_ms.iloc[0]
            )
            for c, configuration in enumerate(("UA", "NAP+NAR")):
                row = part[(part.model == model) & (part.configuration == configuration)].iloc[0]
                bottom = 0.0
                for k, name in enumerate(PARTS):
                    value = float(row[f"{name}_ms"]) / ua_total
                    ax.bar(
                        m + (c - 0.5) * 0.38,
                        value,
                        0.36,
                        bottom=bottom,
                        color=colours(k),
                        hatch="//" if c else None,
                        label=name if m == 0 and c == 0 else None,
                    )
                    bottom += value
        ax.set_xticks(range(len(models)), models, rotation=30, ha="right")
        ax.set_ylabel(f"{PHASE_METRIC[phase]} (UA = 1)")
        ax.set_title(f"{phase} on {gpus} GPUs: UA (plain) and NAP+NAR (hatched)")
        ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    figure.tight_layout()
    return figure


def draw_size_cdfs(cdf: pd.DataFrame, title: str) -> Figure:
    """One panel per phase (or trace), a step curve per group of ``size_cdf`` (its key
    columns other than ``phase`` name the curve: a model, or a trace and a kind)."""
    phases = list(dict.fromkeys(cdf.phase))
    keys = [c for c in cdf.columns if c not in ("phase", "size", "fraction")]
    figure, axes = plt.subplots(1, len(phases), figsize=(6.5 * len(phases), 4.5), squeeze=False)
    for ax, phase in zip(axes[0], phases, strict=True):
        part = cdf[cdf.phase == phase]
        for key, group in part.groupby(keys, sort=False):
            names = key if isinstance(key, tuple) else (key,)
            sizes = [int(group["size"].iloc[0]), *group["size"]]
            fractions = [0.0, *group["fraction"]]
            ax.step(sizes, fractions, where="post", label=" ".join(map(str, names)))
        ax.set_xscale("log")
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("collective output buffer (bytes)")
        ax.set_ylabel("cumulative fraction")
        ax.set_title(phase)
        ax.legend(fontsize="x-small", loc="upper left")
    figure.suptitle(title)
    figure.tight_layout()
    return figure


def draw_fig15_choices(table: pd.DataFrame, title: str) -> Figure:
    """``draw_fig15`` at the table's largest GPU count (the paper's Fig. 15: 64 GPUs)."""
    figure = draw_fig15(table, gpus=int(table.gpus.max()))
    figure.suptitle("\n".join(textwrap.wrap(title, TITLE_CHARS)))
    figure.tight_layout()
    return figure


def draw_size_cdf_table(cdf: pd.DataFrame, title: str) -> Figure:
    """``draw_size_cdfs`` of a table whose sizes are ``size_bytes`` (a written figure's)."""
    return draw_size_cdfs(cdf.rename(columns={"size_bytes": "size"}), title)
