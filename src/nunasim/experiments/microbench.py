"""The paper's microbenchmarks (section 6.1, Fig. 9): speedup of each configuration over UA
for direct collectives across sizes and pod sizes.

As in the paper (section 5.1), every (collective, size, configuration) runs with its
best-performing threadblock count, chosen from ``tbs_per_peer`` x (GPUs - 1).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import pandas as pd

from nunasim.collectives.builtins import builtin_plan
from nunasim.hardware import Preset
from nunasim.scenario import Scenario

ALGORITHM = {
    "allgather": "direct",
    "allreduce": "direct",
    "alltoall": "direct",
    "reducescatter": "direct",
}


def best_run(
    preset: Preset, collective: str, gpus: int, size: int, config: str, tbs_per_peer: Iterable[int]
) -> tuple[int, float]:
    """(threadblocks per GPU, completion ns) of the fastest threadblock count."""
    pod = preset.with_sockets(max(gpus, preset.pod.sockets)).pod
    best: tuple[int, float] | None = None
    for k in tbs_per_peer:
        plan = builtin_plan(f"{collective}:{ALGORITHM[collective]}:gpus={gpus}", tbs=k * (gpus - 1))
        ns = Scenario(pod, plan, size, config).run().completion_ps / 1000
        if best is None or ns < best[1]:
            best = (k * (gpus - 1), ns)
    assert best is not None
    return best


def speedup_table(
    preset: Preset,
    collectives: Iterable[str],
    sizes: Iterable[int],
    gpus: Iterable[int],
    configs: Iterable[str],
    tbs_per_peer: Iterable[int] = (1, 2, 4),
    progress: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """One row per (collective, size, GPUs, configuration), with the speedup over UA."""
    configs = list(dict.fromkeys(["UA", *configs]))
    tbs_per_peer = tuple(tbs_per_peer)
    rows = []
    for collective in collectives:
        for size in sizes:
            for count in gpus:
                base = None
                for config in configs:
                    if progress:
                        progress(f"{collective} {size} B, {count} GPUs, {config}")
                    tbs, ns = best_run(preset, collective, count, size, config, tbs_per_peer)
                    base = ns if config == "UA" else base
                    rows.append(
                        {
                            "collective": collective,
                            "size_bytes": size,
                            "gpus": count,
                            "config": config,
                            "threadblocks": tbs,
                            "completion_ns": ns,
                            "speedup_vs_ua": base / ns,
                        }
                    )
    return pd.DataFrame(rows)
