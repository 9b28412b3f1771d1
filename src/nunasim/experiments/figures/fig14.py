"""Fig. 14, interaction with normal execution (section 6.6): an 8-GPU 1 MB All-Gather beside
a GEMM of 100 tiles per GPU whose size grows, under UA and NAP+NAR; the GEMM size at which
each configuration's collective degrades."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from nunasim.experiments.figures.common import FigureRun, Measured, comparison
from nunasim.experiments.run_options import RunOptions
from nunasim.experiments.sweep import Point, grid_points
from nunasim.hardware import Preset
from nunasim.io.workloads import load_gemm_tile
from nunasim.workload import GemmTile

NAME = "fig14"
GEMM_TILES = 100  # the paper's "GEMM operation with 100 tiles"
# Square tiles (m = n = k) of the shipped tile's data type, the GEMM's size axis.
TILE_EDGES = [32, 64, 96, 128, 160, 192, 256]
QUICK_TILE_EDGES = [64, 128, 256]
QUICK_THREADBLOCKS = 56
# A collective has degraded once it takes this much longer than without the GEMM.
DEGRADED = 0.10
CONFIGS = ["UA", "NAP+NAR"]


def tile(edge: int) -> GemmTile:
    shipped = load_gemm_tile()
    return replace(shipped, m=edge, n=edge, k=edge)


def points(quick: bool) -> list[Point]:
    alone = grid_points(
        {
            "collective": "allgather",
            "gpus": 8,
            "size": "1MB",
            "configuration": CONFIGS,
            "threadblocks": QUICK_THREADBLOCKS if quick else "auto",
        }
    )
    edges = QUICK_TILE_EDGES if quick else TILE_EDGES
    beside = [
        replace(point, gemm_tiles=GEMM_TILES, gemm_tile=tile(edge))
        for edge in edges
        for point in alone
    ]
    return [*alone, *beside]


def run(preset: Preset, quick: bool, options: RunOptions) -> FigureRun:
    chosen = points(quick)
    runs = options.run(NAME, chosen, preset)
    runs["gemm_edge"] = [p.gemm_tile.m if p.gemm_tile else 0 for p in chosen]
    alone = runs[runs["gemm_edge"] == 0].set_index("configuration")["completion_ps"]
    runs["slowdown"] = runs["completion_ps"] / alone.reindex(runs["configuration"]).to_numpy()
    table = runs[["configuration", "gemm_edge", "threadblocks", "completion_ps", "slowdown"]]
    return FigureRun(
        NAME,
        f"8-GPU 1 MB All-Gather beside a GEMM of {GEMM_TILES} tiles (m = n = k)",
        quick,
        table,
        comparison(NAME, claims(table)),
    )


def degrades_at(table: pd.DataFrame, config: str) -> int | None:
    """The smallest GEMM tile edge at which ``config``'s collective has degraded."""
    mine = table[(table["configuration"] == config) & (table["gemm_edge"] > 0)]
    hit = mine[mine["slowdown"] > 1 + DEGRADED]["gemm_edge"]
    return int(hit.min()) if len(hit) else None


def claims(table: pd.DataFrame) -> dict[str, Measured]:
    largest = int(table["gemm_edge"].max())
    at = {config: degrades_at(table, config) for config in CONFIGS}
    worst = table.groupby("configuration")["slowdown"].max()
    text = {c: f"edge {e}" if e else f"none up to edge {largest}" for c, e in at.items()}
    ours: dict[str, Measured] = {
        "gemm-degrades": (
            ", ".join(f"{c} up to {worst[c]:.2f}x slower" for c in CONFIGS),
            bool((worst > 1 + DEGRADED).any()),
        ),
    }
    ua, aware = at["UA"], at["NAP+NAR"]
    if ua is None:
        ours["nap-nar-later"] = (f"UA: {text['UA']}", None)
    elif aware is None:
        ours["nap-nar-later"] = (f"UA: {text['UA']}; NAP+NAR: {text['NAP+NAR']}", True)
    else:
        ours["nap-nar-later"] = (
            f"UA: edge {ua}, NAP+NAR: edge {aware} ({aware / ua:.2f}x)",
            aware > ua,
            aware / ua,
        )
    return ours
