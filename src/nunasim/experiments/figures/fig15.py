"""Fig. 15, end-to-end LLM inference (section 6.7): every model's TTFT and TPOT under UA
and NAP+NAR, both at UA's best parallelism, batch and sequence length (the study's
``execution: shared``: compute unchanged, as the paper has it; each configuration's own
best beside it), with the collectives priced by the simulator (``llm_study``); the table
is the geometric-mean and largest reductions per GPU count, and the picture the 64-GPU
(quick: 8-GPU) stacked bars."""

from __future__ import annotations

import numpy as np
import pandas as pd

from nunasim.experiments.figures.common import (
    FigureRun,
    Measured,
    claims_with,
    comparison,
    ratio_text,
)
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
        search=options.search,
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
        comparison(NAME, claims(table, choices)),
        stores={CHOICES: choices},
    )


def claims(table: pd.DataFrame, choices: pd.DataFrame | None = None) -> dict[str, Measured]:
    """The paper's averages over every model and GPU count against ours (the ``all`` rows,
    over the GPU counts that ran):
    a reduction holds when ours is one, a speedup when ours is above 1. With the study's
    ``choices`` (one row per model, GPU count, phase and configuration), also the claims
    read from single steps (``step_claims``)."""
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
    if choices is not None:
        ours |= step_claims(choices)
    return ours


def step_claims(choices: pd.DataFrame) -> dict[str, Measured]:
    """Section 6.7's claims about UA's chosen steps, from the study's rows: communication's
    share of each phase's step (the mean over models and GPU counts; its direction, the
    paper's 4:1 and 5:1, that compute is the larger part), the speedup of a collective
    kind's time in a step (the geometric mean over the steps that issue it) and one step's
    end-to-end speedup (Llama 3.1 70B on 64 GPUs), each as paper.yaml names them. The
    speedups compare the same step, so they are read only where NAP+NAR's row prices UA's
    plan (``execution: shared``)."""
    keys = ["model", "gpus", "phase"]
    ua = choices[choices.configuration == "UA"].set_index(keys).sort_index()
    nap = choices[choices.configuration == "NAP+NAR"].set_index(keys).sort_index()
    ours: dict[str, Measured] = {}
    for phase in ("prefill", "decode"):
        steps = ua[ua.index.get_level_values("phase") == phase]
        if len(steps):
            share = float((100 * steps.communication_ms / steps.time_ms).mean())
            ours[f"{phase}-communication-share"] = (
                f"{share:.0f}% (compute:communication {(100 - share) / share:.1f}:1)",
                share < 50,
                share,
            )
    plan = ["tp", "dp", "pp", "batch", "seq"]
    if ua.empty or not ua[plan].equals(nap.reindex(ua.index)[plan]):
        return ours  # NAP+NAR chose its own steps: a speedup would mix in the change of cut
    for claim, kind in claims_with(NAME, "collective").items():
        issued = ua[f"{kind}_ms"] > 0
        if issued.any():
            ratio = ua[f"{kind}_ms"][issued] / nap[f"{kind}_ms"][issued]
            speedup = float(np.exp(np.log(ratio.to_numpy()).mean()))
            shown = f"{ratio_text(speedup)} ({int(issued.sum())} steps)"
            ours[claim] = (shown, speedup > 1, speedup)
    for claim, step in claims_with(NAME, "step").items():
        key = (step["model"], step["gpus"], step["phase"])
        if key in ua.index:
            chosen = ua.loc[key]
            speedup = float(chosen.time_ms / nap.loc[key].time_ms)
            cut = f"TP{chosen.tp} DP{chosen.dp} PP{chosen.pp}"
            ours[claim] = (
                f"{100 * (speedup - 1):+.1f}% ({cut}, {chosen.time_ms:.3f} ms under UA)",
                speedup > 1,
                speedup,
            )
    return ours
