"""The paper's headline (section 6.2, Fig. 10): an 8-GPU 1 MB All-Gather under UA and
NAP+NAR, with completion times, the speedup, and the one-way store latency distributions.

As in the paper (section 5.1), each configuration runs the direct algorithm with its
best-performing threadblock count, from the shared search of ``tbsearch.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources

import pandas as pd

from nunasim.collectives.builtins import builtin_plan
from nunasim.engine.result import SimResult
from nunasim.experiments.tbsearch import best_threadblocks
from nunasim.hardware import Preset
from nunasim.io.presets import load_yaml
from nunasim.scenario import Scenario


def paper_fig10_ns() -> dict[str, tuple[float, float]]:
    """The paper's Fig. 10 (mean, max) store latencies per configuration (``paper.yaml``)."""
    text = resources.files("nunasim.experiments").joinpath("paper.yaml").read_text()
    fig10 = load_yaml(text, "builtin:paper.yaml")["fig10"]
    return {config: (float(v["mean_ns"]), float(v["max_ns"])) for config, v in fig10.items()}


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
    configs: tuple[str, ...] = ("UA", "NAP+NAR"),
    progress: Callable[[str], None] | None = None,
) -> Headline:
    """``plan_name`` names a built-in; without ``tbs=`` in it, each configuration runs with
    its best-performing threadblock count (``best_threadblocks``)."""
    base = builtin_plan(plan_name)
    pod = preset.with_sockets(max(base.ngpus, preset.pod.sockets)).pod
    rows, results = [], {}
    paper_figures = paper_fig10_ns()
    for config in configs:
        if "tbs=" in plan_name:
            if progress:
                progress(config)
            plan, result = base, Scenario(pod, base, size, config).run()
        else:
            best = best_threadblocks(pod, plan_name, size, config, progress=progress)
            plan, result = best.plan, best.result
        results[config] = result
        latency = result.store_latency_ns()
        paper = paper_figures.get(config, (float("nan"), float("nan")))
        rows.append(
            {
                "config": config,
                "threadblocks": plan.threadblocks_per_gpu[0],
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
