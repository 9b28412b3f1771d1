"""Fig. 9, microbenchmarks (section 6.1): the speedup over UA of every configuration for
All-Gather, All-Reduce and All-to-All, 100 kB to 1 GB, on 2 to 64 GPUs, each at its best
threadblock count.

The full grid is the paper's, each point a threadblock search; its large sizes and pods
run on the flow-level engine (``engine="auto"``). A 64-GPU 1 GB search takes about a
minute, but the packet-engine searches just below ``auto``'s threshold (10 MB on 16-32 GPUs,
100 MB on 2-4) take one to four minutes a point, so the full grid is hours on a 2-core
laptop (measured: its All-Gather third in about 1 h 45 min on two workers;
docs/engine-measured.md, "The Fig. 9 grid"). ``--quick`` is a corner: 8 GPUs, All-Gather,
100 kB and 1 MB, four configurations, two threadblock counts.
"""

from __future__ import annotations

import pandas as pd

from nunasim.experiments.figures.common import (
    FigureRun,
    Measured,
    best_per_case,
    comparison,
    ratio_text,
    with_speedup,
)
from nunasim.experiments.run_options import RunOptions
from nunasim.hardware import Preset
from nunasim.policies.configurations import PAPER_CONFIGURATIONS
from nunasim.units import format_size, ps_to_ns

NAME = "fig9"
CASE = ["collective", "size_bytes", "gpus"]
COLLECTIVES = ["allgather", "allreduce", "alltoall"]
SIZES = ["100kB", "1MB", "10MB", "100MB", "1GB"]
GPUS = [2, 4, 8, 16, 32, 64]
QUICK_CONFIGS = ["UA", "UA+NAR", "NUMA+NAR", "NAP+NAR"]
QUICK_THREADBLOCKS = [7, 56]
SHOWN_CASES = 4  # a claim names its values for up to this many cases, then its misses
# The claims of a configuration's largest speedup over UA: claim id -> configuration.
UP_TO = {"nap-alone-up-to": "NAP", "nap-nar-up-to": "NAP+NAR", "nar-alone-up-to": "UA+NAR"}


def grid(quick: bool) -> dict:
    if quick:
        return {
            "collective": "allgather",
            "size": ["100kB", "1MB"],
            "gpus": 8,
            "configuration": QUICK_CONFIGS,
            "threadblocks": QUICK_THREADBLOCKS,
        }
    return {
        "collective": COLLECTIVES,
        "size": SIZES,
        "gpus": GPUS,
        "configuration": list(PAPER_CONFIGURATIONS),
        "threadblocks": "auto",
    }


def run(preset: Preset, quick: bool, options: RunOptions) -> FigureRun:
    table = speedup_table(options.sweep(NAME, grid(quick), preset))
    return FigureRun(
        NAME,
        "Speedup over UA, each configuration at its best threadblock count",
        quick,
        table,
        comparison(NAME, claims(table)),
    )


def speedup_table(runs: pd.DataFrame) -> pd.DataFrame:
    """The figure's table from its points' rows: each configuration's fastest run per case
    and its speedup over UA's."""
    best = best_per_case(runs, [*CASE, "configuration"])
    return with_speedup(best, CASE, {"configuration": "UA"})[
        [*CASE, "configuration", "threadblocks", "granularity", "completion_ps", "speedup"]
    ]


def report_view(table: pd.DataFrame) -> pd.DataFrame:
    """The table as the report shows it: a row per collective, size and pod, with UA's
    completion and each other configuration's speedup over it (the full grid is 720 rows
    of one configuration each; this is 90)."""
    speedups = table.pivot_table(index=CASE, columns="configuration", values="speedup", sort=False)
    ua = table[table["configuration"] == "UA"].set_index(CASE)["completion_ps"]
    view = speedups.index.to_frame(index=False)
    view["UA (ns)"] = [f"{ps_to_ns(v):,.0f}" for v in ua.reindex(speedups.index)]
    for config in PAPER_CONFIGURATIONS:
        if config != "UA" and config in speedups:
            view[config] = [f"{v:.3f}" if v == v else "-" for v in speedups[config]]
    return view


def claims(table: pd.DataFrame) -> dict[str, Measured]:
    cases = list(dict.fromkeys(zip(*(table[c] for c in CASE), strict=True)))
    speedup = table.set_index([*CASE, "configuration"])["speedup"].sort_index()

    def check(holds: list[tuple[tuple, bool]], shown: str) -> tuple[str, bool | None]:
        if not holds:
            return "not in this grid", None
        misses = [case for case, ok in holds if not ok]
        if len(holds) <= SHOWN_CASES:
            return shown, not misses
        # The full grid has 90 cases: past a few, the values are the table's to show.
        if not misses:
            return f"in all {len(holds)} cases", True
        return f"not in {len(misses)} of {len(holds)}: {cases_text(misses)}", False

    have = set(table["configuration"])
    small = [c for c in cases if c[1] <= 10**6]
    ours: dict[str, Measured] = {}
    if "UA+NAR" in have:
        values = [(c, float(speedup[(*c, "UA+NAR")])) for c in small]
        ours["nar-alone-helps"] = check(
            [(c, v > 1) for c, v in values],
            "UA+NAR " + ", ".join(ratio_text(v) for _, v in values),
        )
    if {"UA+NAR", "NUMA+NAR"} <= have:
        pairs = [(c, speedup[(*c, "NUMA+NAR")], speedup[(*c, "UA+NAR")]) for c in cases]
        ours["numa-nar-over-ua-nar"] = check(
            [(c, a > b) for c, a, b in pairs],
            ", ".join(f"{ratio_text(a)} vs {ratio_text(b)}" for _, a, b in pairs),
        )
    fastest = [(c, speedup[c].idxmax()) for c in cases]
    ours["nap-nar-fastest"] = check(
        [(c, best == "NAP+NAR") for c, best in fastest],
        ", ".join(f"{cases_text([c])}: {best}" for c, best in fastest),
    )
    if "NAP+NAR" in have:
        ours["small-gain-most"] = _small_gain_most(table)
    if {"UA+NAR", "NAP+NAR"} <= have:
        at = [c for c in cases if c[1] == 10**7 and c[2] == 64]
        pairs = [(c, speedup[(*c, "NAP+NAR")], speedup[(*c, "UA+NAR")]) for c in at]
        ours["nap-nar-below-ua-nar-64-10mb"] = check(
            [(c, a < b) for c, a, b in pairs],
            ", ".join(f"{c[0]} {ratio_text(a)} vs {ratio_text(b)}" for c, a, b in pairs),
        )
    # The abstract's and section 1's "up to": each configuration's largest speedup anywhere
    # in the grid (the paper's isolated NAP of section 6.3 is Fig. 11's 8-GPU cases).
    for claim, config in UP_TO.items():
        if config in have:
            ours[claim] = _largest(table, config)
    return ours


def _largest(table: pd.DataFrame, config: str) -> Measured:
    """``config``'s largest speedup over UA in the grid, with its case."""
    rows = table[table["configuration"] == config]
    best = rows.loc[rows["speedup"].idxmax()]
    case = (best["collective"], int(best["size_bytes"]), int(best["gpus"]))
    value = float(best["speedup"])
    return f"{ratio_text(value)} ({cases_text([case])})", value > 1, value


def cases_text(cases: list[tuple]) -> str:
    """Cases of (collective, size, GPUs), the pods of each collective and size together:
    "allgather 1GB on 8, 16 GPUs; alltoall 1MB on 8 GPUs"."""
    pods: dict[tuple[str, int], list[int]] = {}
    for collective, size, gpus in cases:
        pods.setdefault((collective, int(size)), []).append(int(gpus))
    return "; ".join(
        f"{collective} {format_size(size)} on {', '.join(map(str, gpus))} GPUs"
        for (collective, size), gpus in pods.items()
    )


def _small_gain_most(table: pd.DataFrame) -> tuple[str, bool | None]:
    """Per collective and pod: whether NAP+NAR's largest speedup is at a size up to 1 MB,
    where the grid has sizes on both sides of it."""
    nap_nar = table[table["configuration"] == "NAP+NAR"]
    misses, judged = [], 0
    for (collective, gpus), rows in nap_nar.groupby(["collective", "gpus"], sort=False):
        small = rows["size_bytes"] <= 10**6
        if small.all() or not small.any():
            continue
        judged += 1
        best = rows.loc[rows["speedup"].idxmax()]
        if best["size_bytes"] > 10**6:
            size = format_size(int(best["size_bytes"]))
            misses.append(f"{collective} {gpus} GPUs ({ratio_text(best['speedup'])} at {size})")
    if not judged:
        return "not in this grid", None
    if not misses:
        return f"in all {judged} collective and pod cases", True
    return f"not in {len(misses)} of {judged}: " + ", ".join(misses), False
