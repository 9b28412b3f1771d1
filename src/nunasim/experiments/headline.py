"""The paper's headline (section 6.2, Fig. 10): an 8-GPU 1 MB All-Gather under UA and
NAP+NAR, with completion times, the speedup, and the one-way store latency distributions.

As in the paper (section 5.1), each configuration runs the direct algorithm with its
best-performing threadblock count: 1, 2, 4 and 8 threadblocks per peer are tried and the
fastest kept.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources

import pandas as pd

from nunasim.collectives.builtins import builtin_plan
from nunasim.engine.result import SimResult
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


TBS_PER_PEER = (1, 2, 4, 8)


def run_headline(
    preset: Preset,
    plan_name: str,
    size: int,
    configs: tuple[str, ...] = ("UA", "NAP+NAR"),
    progress: Callable[[str], None] | None = None,
    tbs_per_peer: tuple[int, ...] = TBS_PER_PEER,
) -> Headline:
    """``plan_name`` names a built-in; without ``tbs=`` in it, the threadblock count is
    swept over ``tbs_per_peer`` x (GPUs - 1) and the fastest run of each configuration kept."""
    base = builtin_plan(plan_name)
    pod = preset.pod if preset.pod.sockets >= base.ngpus else preset.with_sockets(base.ngpus).pod
    if "tbs=" in plan_name:
        candidates = [base]
    else:
        candidates = [builtin_plan(plan_name, tbs=k * (base.ngpus - 1)) for k in tbs_per_peer]
    rows, results = [], {}
    paper_figures = paper_fig10_ns()
    for config in configs:
        best = None
        for plan in candidates:
            if progress:
                progress(f"{config}, {plan.threadblocks_per_gpu[0]} threadblocks")
            result = Scenario(pod, plan, size, config).run()
            if best is None or result.completion_ps < best[1].completion_ps:
                best = (plan, result)
        plan, result = best
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
