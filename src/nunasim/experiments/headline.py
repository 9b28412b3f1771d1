"""The paper's headline (section 6.2, Fig. 10): an 8-GPU 1 MB All-Gather under UA and
NAP+NAR, with completion times, the speedup, and the one-way store latency distributions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from nunasim.collectives.builtins import builtin_plan
from nunasim.engine.result import SimResult
from nunasim.hardware import Preset
from nunasim.scenario import Scenario

PAPER_FIG10_NS = {"UA": (920.0, 1320.0), "NAP+NAR": (780.0, 1180.0)}


@dataclass(frozen=True)
class Headline:
    table: pd.DataFrame  # one row per configuration
    results: dict[str, SimResult]

    @property
    def speedup(self) -> float:
        times = self.table.set_index("config")["completion_ns"]
        return float(times["UA"] / times["NAP+NAR"])


def run_headline(
    preset: Preset,
    plan_name: str,
    size: int,
    configs=("UA", "NAP+NAR"),
    progress: Callable[[str], None] | None = None,
) -> Headline:
    plan = builtin_plan(plan_name)
    pod = preset.pod if preset.pod.sockets >= plan.ngpus else preset.with_sockets(plan.ngpus).pod
    rows, results = [], {}
    for config in configs:
        if progress:
            progress(config)
        result = Scenario(pod, plan, size, config).run()
        results[config] = result
        latency = result.store_latency_ns()
        paper = PAPER_FIG10_NS.get(config, (float("nan"), float("nan")))
        rows.append(
            {
                "config": config,
                "completion_ns": result.completion_ps / 1000,
                "store_mean_ns": latency["mean"],
                "store_max_ns": latency["max"],
                "paper_mean_ns": paper[0],
                "paper_max_ns": paper[1],
                "stores": len(result.stores),
                "events": result.events,
                "wall_s": result.wall_s,
            }
        )
    return Headline(pd.DataFrame(rows), results)
