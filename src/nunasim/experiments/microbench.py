"""The paper's microbenchmarks (section 6.1, Fig. 9): speedup of each configuration over UA
for direct collectives across sizes and pod sizes.

As in the paper (section 5.1), every (collective, size, configuration) runs with its
best-performing threadblock count, from the shared search of ``tbsearch.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import pandas as pd

from nunasim.experiments.tbsearch import best_threadblocks
from nunasim.hardware import Preset

ALGORITHM = {
    "allgather": "direct",
    "allreduce": "direct",
    "alltoall": "direct",
    "reducescatter": "direct",
}


def best_run(
    preset: Preset, collective: str, gpus: int, size: int, config: str
) -> tuple[int, float]:
    """(threadblocks per GPU, completion ns) of the fastest threadblock count."""
    pod = preset.with_sockets(max(gpus, preset.pod.sockets)).pod
    best = best_threadblocks(pod, f"{collective}:{ALGORITHM[collective]}:gpus={gpus}", size, config)
    return best.threadblocks, best.result.completion_ps / 1000


def speedup_table(
    preset: Preset,
    collectives: Iterable[str],
    sizes: Iterable[int],
    gpus: Iterable[int],
    configs: Iterable[str],
    progress: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """One row per (collective, size, GPUs, configuration), with the speedup over UA."""
    configs = list(dict.fromkeys(["UA", *configs]))
    rows = []
    for collective in collectives:
        for size in sizes:
            for count in gpus:
                base = None
                for config in configs:
                    if progress:
                        progress(f"{collective} {size} B, {count} GPUs, {config}")
                    tbs, ns = best_run(preset, collective, count, size, config)
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
