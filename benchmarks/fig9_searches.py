"""Fig. 9's claims under the two threadblock searches, from a result cache alone.

    python benchmarks/fig9_searches.py --cache-dir reproduction/cache [--sizes 100kB,1MB,1GB]

The figures run the staged search (each count at the estimated granularity, then every
granularity at the best count); ``nunasim reproduce fig9 --search joint`` runs the joint
search (every count with every granularity) into the same cache. This script runs nothing:
it takes each Fig. 9 cell whose eight configurations the cache holds under both searches,
and prints, over those cells, each claim as the staged search's points judge it and as the
joint search's do, then every configuration whose speedup over UA moved by more than
``--moved`` between the two.
"""

from __future__ import annotations

import argparse
from dataclasses import replace

import pandas as pd

from nunasim.experiments.cache import ResultCache, point_key
from nunasim.experiments.figures import fig9
from nunasim.experiments.sweep import grid_points
from nunasim.hardware import Preset
from nunasim.io.presets import load_preset
from nunasim.policies.configurations import CONFIGURATIONS

KEY = [*fig9.CASE, "configuration"]
COLUMNS = [*KEY, "threadblocks", "granularity", "completion_ps", "speedup"]


def cached_table(cache: ResultCache, preset: Preset, sizes: list[str], search: str) -> pd.DataFrame:
    """Fig. 9's table over ``sizes`` from the points ``cache`` holds under ``search``."""
    rows = []
    for size in sizes:
        for point in grid_points(dict(fig9.grid(False), size=size)):
            row = cache.get(point_key(replace(point, search=search), preset))
            if row is not None:
                rows.append(row)
    if not rows:
        return pd.DataFrame(columns=COLUMNS)
    return fig9.speedup_table(pd.DataFrame(rows))


def complete_cells(table: pd.DataFrame) -> pd.DataFrame:
    """The cells of ``table`` with every configuration, as their (collective, size, GPUs)."""
    counts = table.groupby(fig9.CASE, sort=False)["configuration"].nunique()
    return counts[counts == len(CONFIGURATIONS)].index.to_frame(index=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", default="reproduction/cache")
    parser.add_argument("--sizes", default=",".join(fig9.SIZES))
    parser.add_argument("--preset", default="nextgen-4die")
    parser.add_argument("--moved", type=float, default=0.02, help="speedup change to list")
    args = parser.parse_args()
    preset = load_preset(args.preset)
    cache = ResultCache(args.cache_dir)
    sizes = args.sizes.split(",")
    staged = cached_table(cache, preset, sizes, "staged")
    joint = cached_table(cache, preset, sizes, "joint")
    cells = complete_cells(staged).merge(complete_cells(joint), on=fig9.CASE)
    print(f"{len(cells)} cells with all eight configurations under both searches")
    if cells.empty:
        return
    found = {"staged": staged, "joint": joint}
    tables = {name: t.merge(cells, on=fig9.CASE) for name, t in found.items()}
    verdicts = {name: fig9.claims(t) for name, t in tables.items()}
    print("\n| claim | staged search | joint search |\n|---|---|---|")
    for claim in verdicts["staged"]:
        texts = [f"{verdicts[n][claim][1]}: {verdicts[n][claim][0]}" for n in tables]
        print(f"| {claim} | " + " | ".join(texts) + " |")
    both = tables["staged"].merge(tables["joint"], on=KEY, suffixes=("_staged", "_joint"))
    print(
        f"\nConfigurations whose speedup over UA moved by more than {args.moved:.0%}:\n"
        "| collective | size | GPUs | configuration | staged: speedup (tbs, domains) "
        "| joint: speedup (tbs, domains) |\n|---|---|---|---|---|---|"
    )
    for row in both.itertuples(index=False):
        staged_s, joint_s = row.speedup_staged, row.speedup_joint
        if abs(joint_s / staged_s - 1) > args.moved:
            print(
                f"| {row.collective} | {row.size_bytes:,} | {row.gpus} | {row.configuration} "
                f"| {staged_s:.3f}x ({row.threadblocks_staged}, {row.granularity_staged}) "
                f"| {joint_s:.3f}x ({row.threadblocks_joint}, {row.granularity_joint}) |"
            )


if __name__ == "__main__":
    main()
