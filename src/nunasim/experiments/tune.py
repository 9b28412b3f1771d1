"""A tuning table for a collective library (the paper, section 4.1, footnote: the library
decides when to use NAR and at which granularity): for a preset and a pod size, the fastest
configuration, NAR granularity and threadblock count of each collective at each size, and
the size ranges over which each choice holds.

Each (collective, size, configuration) is found by the shared threadblock search
(``tbsearch``: every candidate count, then every granularity at the best one), or, with
explicit counts, by running every count with every granularity the socket allows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from nunasim.collectives.builtins import builtin_parts, is_builtin_name
from nunasim.experiments.figures.common import best_per_case, with_speedup
from nunasim.experiments.run_options import RunOptions
from nunasim.hardware import Preset
from nunasim.policies.place import auto_granularities
from nunasim.scenario import Configuration

CASE = ["collective", "size_bytes"]
CHOICE = ["configuration", "granularity", "threadblocks"]


def candidates(
    preset: Preset, configs: Sequence[str], threadblocks: Sequence[int] | None
) -> list[Configuration]:
    """The configurations to run: each as named, searched by ``tbsearch``; with explicit
    ``threadblocks``, each granularity the socket allows for those that use domains."""
    chosen: list[Configuration] = []
    for name in configs:
        config = Configuration.parse(name)
        if threadblocks is None or not config.uses_domains:
            chosen.append(config)
        else:
            chosen += [Configuration.parse(name, g) for g in auto_granularities(preset.socket)]
    return chosen


def tune(
    preset: Preset,
    gpus: int,
    collectives: Sequence[str],
    sizes: Sequence[int],
    configs: Sequence[str],
    options: RunOptions,
    threadblocks: Sequence[int] | None = None,
) -> pd.DataFrame:
    """One row per (collective, size): the fastest choice, its completion time and its
    speedup over UA (at UA's own best count; NaN when UA is not among ``configs``)."""
    grid = {
        "collective": list(collectives),
        "size": list(sizes),
        "gpus": gpus,
        "configuration": candidates(preset, configs, threadblocks),
        "threadblocks": list(threadblocks) if threadblocks else "auto",
    }
    runs = _named(options.sweep("tune", grid, preset), collectives)
    fastest = best_per_case(runs, [*CASE, "configuration"])
    if "UA" in set(fastest["configuration"]):
        fastest = with_speedup(fastest, CASE, {"configuration": "UA"})
    else:
        fastest = fastest.assign(speedup=float("nan"))
    best = best_per_case(fastest, CASE)
    return best[[*CASE, *CHOICE, "search", "completion_ps", "speedup"]].rename(
        columns={"speedup": "speedup_vs_ua"}
    )


def _named(runs: pd.DataFrame, collectives: Sequence[str]) -> pd.DataFrame:
    """Each run under the name it was asked for (``allgather:ring``), not only its kind
    (``allgather``): the algorithm and protocol are part of the decision a library reads."""
    asked = {builtin_parts(name): name for name in collectives if is_builtin_name(name)}
    labels = [
        asked.get(builtin_parts(plan), kind) if is_builtin_name(plan) else kind
        for plan, kind in zip(runs["plan"], runs["collective"], strict=True)
    ]
    return runs.assign(collective=labels)


def thresholds(best: pd.DataFrame, preset: str, gpus: int) -> dict[str, Any]:
    """``best`` as size ranges per collective: consecutive measured sizes with the same
    choice merge into one range. A library picks the last range whose ``from_bytes`` is at
    most its size (below the first, the first)."""
    table: dict[str, list[dict[str, Any]]] = {}
    for collective, rows in best.groupby("collective", sort=False):
        ranges: list[dict[str, Any]] = []
        for row in rows.sort_values("size_bytes").itertuples():
            choice = {
                "configuration": str(row.configuration),
                "nar": str(row.configuration).endswith("+NAR"),
                "nar_granularity": int(row.granularity),
                "threadblocks": int(row.threadblocks),
            }
            if ranges and all(ranges[-1][k] == v for k, v in choice.items()):
                ranges[-1]["to_bytes"] = int(row.size_bytes)
                ranges[-1]["speedup_vs_ua"].append(_number(row.speedup_vs_ua))
                continue
            ranges.append(
                {
                    "from_bytes": int(row.size_bytes),
                    "to_bytes": int(row.size_bytes),
                    **choice,
                    "speedup_vs_ua": [_number(row.speedup_vs_ua)],
                }
            )
        table[str(collective)] = ranges
    # The searches that found the choices (None: counts given, no search ran).
    named = best.get("search", [])
    searches = sorted({str(s) for s in named if isinstance(s, str)})
    return {"preset": preset, "gpus": gpus, "searches": searches, "collectives": table}


def _number(value: float) -> float | None:
    return None if pd.isna(value) else round(float(value), 4)
