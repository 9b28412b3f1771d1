"""The flow engine at the threadblock counts a search picked on the packet engine: one line
per packet-engine row of a figure's table (the table in docs/engine.md, "At the counts the
search picks").

    python benchmarks/flow_at_searched_counts.py reproduction/fig9/fig9.csv [--size 10MB]
        [--gpus 2,4,8,16,32]

The table is one ``nunasim reproduce fig9`` (or any sweep) wrote: each row that ran on the
packet engine (its ``engine`` column, or where there is none, ``auto``'s choice for it) is
run again, at its collective, pod, size, configuration, threadblocks and NAR granularity,
on the flow engine (the placement does not depend on the engine), and its completion compared
with the row's. Prints the Markdown table, then the range and mean of flow / packet and the
rows outside 10 %.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time

import pandas as pd

from nunasim.collectives.builtins import builtin_plan
from nunasim.io.presets import load_preset
from nunasim.scenario import Configuration, Scenario
from nunasim.units import parse_size

BAND = 0.10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table", help="a sweep's table (.csv or .parquet)")
    parser.add_argument("--size", default=None, help="only rows of this collective size")
    parser.add_argument("--gpus", default=None, help="only these pod sizes (comma-separated)")
    parser.add_argument("--preset", default="nextgen-4die")
    args = parser.parse_args()
    read = pd.read_parquet if args.table.endswith(".parquet") else pd.read_csv
    rows = read(args.table)
    if "engine" in rows:
        rows = rows[rows["engine"] == "packet"]
    if "engine" not in rows:
        rows = rows.assign(engine="auto")
    if args.size:
        rows = rows[rows["size_bytes"] == parse_size(args.size)]
    if args.gpus:
        rows = rows[rows["gpus"].isin([int(g) for g in args.gpus.split(",")])]
    preset = load_preset(args.preset)
    print(
        "| collective | GPUs | size | config | threadblocks | domains | packet us | flow / packet |"
    )
    print("|---|---|---|---|---|---|---|---|")
    ratios = []
    for row in rows.itertuples():
        plan = builtin_plan(row.collective, gpus=int(row.gpus), tbs=int(row.threadblocks))
        config = Configuration.parse(row.configuration)
        if config.nar:
            config = dataclasses.replace(config, granularity=int(row.granularity))
        if getattr(row, "engine", "auto") != "packet":
            # a figure's table may not say which engine ran: the row's own (``auto``) choice
            auto = Scenario(preset, plan, int(row.size_bytes), config)
            if auto.chosen_engine != "packet":
                continue
        scenario = Scenario(preset, plan, int(row.size_bytes), config, engine="flow")
        ratio = scenario.run().completion_ps / row.completion_ps
        ratios.append(ratio)
        shown = f"**{ratio:.3f}**" if abs(ratio - 1) > BAND else f"{ratio:.3f}"
        print(
            f"| {row.collective} | {row.gpus} | {row.size_bytes} | {row.configuration} "
            f"| {row.threadblocks} | {row.granularity} | {row.completion_ps / 1e6:.2f} "
            f"| {shown} |",
            flush=True,
        )
    if ratios:
        print(f"\n{band_summary(ratios)}")


def band_summary(ratios: list[float]) -> str:
    """The range and mean of flow / packet over ``ratios``' rows, and how many leave the band."""
    outside = sum(abs(r - 1) > BAND for r in ratios)
    return (
        f"{len(ratios)} rows: flow / packet {min(ratios):.3f} to {max(ratios):.3f}, "
        f"mean {statistics.mean(ratios):.3f}, {outside} outside {BAND:.0%}"
    )


if __name__ == "__main__":
    started = time.perf_counter()
    main()
    print(f"({time.perf_counter() - started:.0f} s)", file=sys.stderr)
