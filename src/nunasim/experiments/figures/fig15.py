"""Fig. 15, end-to-end LLM inference (section 6.7): every model's TTFT and TPOT under UA
and NAP+NAR, both at UA's best parallelism, batch and sequence length (the study's
``execution: shared``: compute unchanged, as the paper has it; each configuration's own
best beside it), with the collectives priced by the simulator (``llm_study``); the table
is the geometric-mean and largest reductions per GPU count, and the picture the 64-GPU
(quick: 8-GPU) stacked bars."""

from __future__ import annotations

import pandas as pd

from nunasim.experiments.figures.common import FigureRun, Measured, comparison, ratio_text
from nunasim.experiments.llm_study import fig15_summary, fig15_table
from nunasim.experiments.run_options import RunOptions
from nunasim.experiments.sweep import PointTimes
from nunasim.hardware import Preset

NAME = "fig15"
CHOICES = "choices"  # the per-model table the picture draws, kept beside the summary
ALL_GPUS = "all"


def summary_table(choices: pd.DataFrame) -> pd.DataFrame:
    """``fig15_summary`` per GPU count and over them all (the paper's averages), with the
    reductions in percent."""
    parts = [(str(n), choices[choices.gpus == n]) for n in sorted(set(choices.gpus))]
    parts.append((ALL_GPUS, choices))
    frames = []
    for gpus, part in parts:
        summary = fig15_summary(part)
        summary.insert(0, "gpus", gpus)
        frames.append(summary)
    table = pd.concat(frames, ignore_index=True)
    table["geomean_change_pct"] = -100 * table.pop("geomean_reduction")
    table["max_change_pct"] = -100 * table.pop("max_reduction")
    table["collective_speedup"] = table.pop("collective_speedup_geomean")
    for other in ("own", "shared"):
        if f"{other}_geomean_reduction" in table:
            table[f"{other}_geomean_change_pct"] = -100 * table.pop(f"{other}_geomean_reduction")
            table[f"{other}_max_change_pct"] = -100 * table.pop(f"{other}_max_reduction")
    return table.drop(columns=["phase"])


def run(preset: Preset, quick: bool, options: RunOptions) -> FigureRun:
    # The points the search finds it needs run a round at a time where the options say
    # (all workers); its report counts every point it used once, cached or run.
    choices = fig15_table(
        quick,
        options.cache,
        preset=preset,
        run_many=lambda points: options.run(NAME, points, preset),
    )
    options.times[NAME] = PointTimes(
        choices.attrs["points"], choices.attrs["points_timed"], choices.attrs["point_s"]
    )
    table = summary_table(choices)
    counts = sorted(set(choices.gpus))
    pods = f"{counts[0]}-{counts[-1]}" if len(counts) > 1 else f"{counts[0]}"
    return FigureRun(
        NAME,
        f"LLM inference on {pods} GPUs, UA and NAP+NAR, collectives at "
        f"{choices.attrs['threadblocks']} (bars: {counts[-1]} GPUs)",
        quick,
        table,
        comparison(NAME, claims(table)),
        stores={CHOICES: choices},
    )


def claims(table: pd.DataFrame) -> dict[str, Measured]:
    """The paper's averages over every model and GPU count against ours (the ``all`` rows,
    over the GPU counts that ran):
    a reduction holds when ours is one, a speedup when ours is above 1."""
    overall = table[table.gpus == ALL_GPUS].set_index("metric")
    ours: dict[str, Measured] = {}
    for metric, key in (("TTFT", "ttft"), ("TPOT", "tpot")):
        if metric not in overall.index:
            continue
        row = overall.loc[metric]
        mean, largest = float(row.geomean_change_pct), float(row.max_change_pct)
        ours[f"{key}-mean"] = (f"{mean:+.1f}%", mean < 0, mean)
        ours[f"{key}-max"] = (f"{largest:+.1f}%", largest < 0, largest)
        phase = "prefill" if metric == "TTFT" else "decode"
        speedup = float(row.collective_speedup)
        ours[f"{phase}-collectives"] = (ratio_text(speedup), speedup > 1, speedup)
    if {"TTFT", "TPOT"} <= set(overall.index):
        prefill = float(overall.loc["TTFT"].collective_speedup)
        decode = float(overall.loc["TPOT"].collective_speedup)
        ours["decode-gains-more"] = (
            f"decode {ratio_text(decode)}, prefill {ratio_text(prefill)}",
            decode > prefill,
        )
    return ours
