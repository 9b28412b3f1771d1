"""The threadblock search on the flow engine against the same search on the packet engine:
would running a figure's packet-engine points on the flow engine (a lower ``auto``
threshold) change what the figure shows?

    python benchmarks/flow_search_vs_packet.py reproduction/cache [--size 10MB]
        [--gpus 2,4,8] [--collectives allgather]

Reads the packet-engine rows of a result cache (or a sweep's table, .csv or .parquet), each
a point searched over threadblock counts and NAR granularities, and runs every point again,
searched the same way, on the flow engine. Prints, per row, both best runs (count, domains,
completion) and flow / packet; per cell (collective, size, pod) with UA, each engine's
speedup over UA and whether both pick the same fastest configuration; then the range of
flow / packet over the rows and of the speedups' differences over the cells.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import pandas as pd
from flow_at_searched_counts import band_summary  # this folder's: run as a script

from nunasim.experiments.cache import ENTRY_SUFFIX, ResultCache
from nunasim.experiments.sweep import Point, run_point
from nunasim.io.presets import load_preset
from nunasim.scenario import Configuration
from nunasim.units import parse_size

CELL = ["collective", "size_bytes", "gpus"]


def packet_rows(source: str) -> pd.DataFrame:
    path = Path(source)
    if path.is_dir():
        cache = ResultCache(path)
        rows = [cache.get(p.name.removesuffix(ENTRY_SUFFIX)) for p in cache.entries()]
        table = pd.DataFrame([row for row in rows if row is not None])
    else:
        table = (pd.read_parquet if source.endswith(".parquet") else pd.read_csv)(source)
    return table[table["engine"] == "packet"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", help="a result cache folder or a sweep's table")
    parser.add_argument("--size", default=None, help="only rows of this collective size")
    parser.add_argument("--gpus", default=None, help="only these pod sizes (comma-separated)")
    parser.add_argument("--collectives", default=None, help="only these (comma-separated)")
    parser.add_argument("--preset", default="nextgen-4die")
    args = parser.parse_args()
    rows = packet_rows(args.source)
    if args.size:
        rows = rows[rows["size_bytes"] == parse_size(args.size)]
    if args.gpus:
        rows = rows[rows["gpus"].isin([int(g) for g in args.gpus.split(",")])]
    if args.collectives:
        rows = rows[rows["collective"].isin(args.collectives.split(","))]
    rows = rows.drop_duplicates([*CELL, "configuration"]).sort_values([*CELL, "configuration"])
    preset = load_preset(args.preset)
    print(
        "| collective | size | GPUs | config | packet: tbs, domains, us | flow: tbs, domains, us "
        "| flow / packet | search s (flow) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    flow_us = []
    for row in rows.itertuples():
        point = Point(
            row.collective,
            int(row.size_bytes),
            Configuration.parse(row.configuration),
            gpus=int(row.gpus),
            threadblocks="auto",
            engine="flow",
        )
        started = time.perf_counter()
        result = run_point(point, preset)
        seconds = time.perf_counter() - started
        info = result.info
        flow_us.append(result.completion_ps / 1e6)
        print(
            f"| {row.collective} | {row.size_bytes:,} | {row.gpus} | {row.configuration} "
            f"| {row.threadblocks}, {row.granularity}, {row.completion_ps / 1e6:.3f} "
            f"| {info.threadblocks}, {info.granularity}, {result.completion_ps / 1e6:.3f} "
            f"| {result.completion_ps / row.completion_ps:.3f} | {seconds:.1f} |",
            flush=True,
        )
    rows = rows.assign(flow_us=flow_us, packet_us=rows["completion_ps"] / 1e6)
    ratios = (rows["flow_us"] / rows["packet_us"]).tolist()
    if ratios:
        print(f"\n{band_summary(ratios)}")
    print("\n| collective | size | GPUs | config | speedup packet | speedup flow |")
    print("|---|---|---|---|---|---|")
    gaps, same_best, cells = [], 0, 0
    for cell, group in rows.groupby(CELL, sort=False):
        ua = group[group["configuration"] == "UA"]
        if ua.empty:
            continue
        cells += 1
        base_p, base_f = float(ua["packet_us"].iloc[0]), float(ua["flow_us"].iloc[0])
        for r in group.itertuples():
            sp, sf = base_p / r.packet_us, base_f / r.flow_us
            gaps.append(sf - sp)
            print(
                f"| {cell[0]} | {cell[1]:,} | {cell[2]} | {r.configuration} | {sp:.3f} | {sf:.3f} |"
            )
        same_best += group["packet_us"].idxmin() == group["flow_us"].idxmin()
    if gaps:
        print(
            f"\n{cells} cells: speedup flow - packet {min(gaps):+.3f} to {max(gaps):+.3f} "
            f"(mean {statistics.mean(gaps):+.3f}); the same fastest configuration in "
            f"{same_best} of {cells}"
        )


if __name__ == "__main__":
    started = time.perf_counter()
    main()
    print(f"({time.perf_counter() - started:.0f} s)", file=sys.stderr)
