"""The paper's headline (section 6.2, Fig. 10): an 8-GPU 1 MB All-Gather under UA and
NAP+NAR, with completion times, the speedup, and the one-way store latency distributions.

As in the paper (section 5.1), each configuration runs the direct algorithm with its
best-performing threadblock count, from the shared search of ``tbsearch.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from nunasim.collectives.builtins import is_builtin_name
from nunasim.engine.result import SimResult
from nunasim.experiments.figures.common import paper_data
from nunasim.experiments.sweep import grid_points, run_point
from nunasim.hardware import Preset
from nunasim.units import PS_PER_NS, parse_size


def paper_fig10_ns(
    collective: str = "allgather", gpus: int = 8, size: int = 10**6
) -> dict[str, tuple[float, float]]:
    """The paper's Fig. 10 (mean, max) store latencies per configuration (``paper.yaml``),
    for the experiment they are of; none for any other collective, pod or size."""
    fig10 = dict(paper_data()["fig10"])
    experiment = fig10.pop("experiment")
    if (collective, gpus, size) != (
        experiment["collective"],
        experiment["gpus"],
        parse_size(experiment["size"]),
    ):
        return {}
    return {config: (float(v["mean_ns"]), float(v["max_ns"])) for config, v in fig10.items()}


@dataclass(frozen=True)
class Headline:
    """The headline's table and each configuration's run."""

    table: pd.DataFrame  # one row per configuration
    results: dict[str, SimResult]

    @property
    def speedup(self) -> float:
        """Completion time under UA over that under NAP+NAR."""
        times = self.table.set_index("config")["completion_ns"]
        return float(times["UA"] / times["NAP+NAR"])


def run_headline(
    preset: Preset,
    plan_name: str,
    size: int,
    configs: tuple[str, ...] = ("UA", "NAP+NAR"),
    progress: Callable[[str], None] | None = None,
    search: str = "staged",
) -> Headline:
    """``plan_name`` names a built-in or a plan file; a built-in without ``tbs=`` runs each
    configuration with its best-performing threadblock count (``best_threadblocks``, by
    ``search``), a
    file or a ``tbs=`` with its own (a file at its best granularity, searched by
    simulation: ``Point``)."""
    searched = is_builtin_name(plan_name) and "tbs=" not in plan_name
    grid = {
        "plan": plan_name,
        "size": size,
        "configuration": list(configs),
        "threadblocks": "auto" if searched else None,
        "search": search,
    }
    results = {
        point.configuration.name: run_point(point, preset, progress) for point in grid_points(grid)
    }
    first = next(iter(results.values())).to_row()
    paper_figures = paper_fig10_ns(first["collective"], first["gpus"], size)
    rows = []
    for config, result in results.items():
        row = result.to_row()
        paper = paper_figures.get(config, (float("nan"), float("nan")))
        rows.append(
            {
                "config": config,
                "threadblocks": row["threadblocks"],
                "completion_ns": result.completion_ps / PS_PER_NS,
                "store_mean_ns": row["store_mean_ns"],
                "store_max_ns": row["store_max_ns"],
                "paper_mean_ns": paper[0],
                "paper_max_ns": paper[1],
                "stores": row["stores"],
                "events": row["events"],
                "wall_s": row["wall_s"],
            }
        )
    return Headline(pd.DataFrame(rows), results)
