"""The paper's microbenchmarks (section 6.1, Fig. 9): speedup of each configuration over UA
for direct collectives across sizes and pod sizes.

As in the paper (section 5.1), every (collective, size, configuration) runs with its
best-performing threadblock count, from the shared search of ``tbsearch.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import pandas as pd

from nunasim.experiments.sweep import sweep
from nunasim.hardware import Preset
from nunasim.units import PS_PER_NS

# The cases of one speedup: everything but the configuration.
_CASE = ["collective", "size_bytes", "gpus"]


def speedup_table(
    preset: Preset,
    collectives: Iterable[str],
    sizes: Iterable[int],
    gpus: Iterable[int],
    configs: Iterable[str],
    progress: Callable[[str], None] | None = None,
    search: str = "staged",
) -> pd.DataFrame:
    """One row per (collective, size, GPUs, configuration), with the speedup over UA; a
    collective runs its direct algorithm (a bare name of a built-in), at the best
    threadblock count ``search`` finds (``tbsearch.SEARCHES``)."""
    grid = {
        "collective": list(collectives),
        "size": list(sizes),
        "gpus": list(gpus),
        "configuration": list(dict.fromkeys(["UA", *configs])),
        "threadblocks": "auto",
        "search": search,
    }
    runs = sweep(grid, preset, progress)
    table = runs[[*_CASE, "configuration", "threadblocks", "search"]].rename(
        columns={"configuration": "config"}
    )
    table["completion_ns"] = runs["completion_ps"] / PS_PER_NS
    ua = table[table["config"] == "UA"].set_index(_CASE)["completion_ns"]
    baseline = ua.reindex(pd.MultiIndex.from_frame(table[_CASE])).to_numpy()
    table["speedup_vs_ua"] = baseline / table["completion_ns"]
    return table
