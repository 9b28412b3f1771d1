"""Latency-throughput curves of ``nunasim noc``: one run per offered load, in parallel.

Every point is an independent, deterministic run with the same seed (common random numbers:
a higher rate injects a superset of a lower one's packets), so running the points in worker
processes gives exactly the results of running them one after the other.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from nunasim.engine.noc.run import NocResult, Pattern, check_run, run_noc
from nunasim.engine.noc.saturation import SATURATION_LATENCY_FACTOR, saturation
from nunasim.hardware import Socket

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class CurveSpec:
    """Everything of a sweep's runs but the rate."""

    socket: Socket
    pattern: Pattern
    packet_flits: int = 1
    cycles: int = 10_000
    warmup: int = 1_000
    seed: int = 0
    rate_unit: str = "flits"
    drain: int | None = None

    def check(self, rate: float) -> None:
        """Refuse a bad point before any run starts (so no worker fails half-way)."""
        check_run(
            self.socket,
            self.pattern,
            rate,
            self.rate_unit,
            self.packet_flits,
            self.cycles,
            self.warmup,
            self.drain,
        )

    def run(self, rate: float) -> NocResult:
        return run_noc(
            self.socket,
            self.pattern,
            rate,
            self.packet_flits,
            self.cycles,
            self.warmup,
            self.seed,
            rate_unit=self.rate_unit,
            drain=self.drain,
        ).result()


def default_workers() -> int:
    return os.cpu_count() or 1


def sweep(
    spec: CurveSpec,
    rates: Sequence[float],
    workers: int = 1,
    done: Callable[[int, int, NocResult], None] | None = None,
) -> list[NocResult]:
    """The result of every rate, in the order of ``rates``; ``done(k, total, result)`` is
    called as the k-th point finishes (in the order they finish)."""
    for rate in rates:
        spec.check(rate)
    results: list[NocResult | None] = [None] * len(rates)
    if workers <= 1 or len(rates) <= 1:
        for i, rate in enumerate(rates):
            results[i] = spec.run(rate)
            if done is not None:
                done(i + 1, len(rates), results[i])
    else:
        with ProcessPoolExecutor(max_workers=min(workers, len(rates))) as pool:
            futures = {pool.submit(spec.run, rate): i for i, rate in enumerate(rates)}
            for k, future in enumerate(as_completed(futures), start=1):
                results[futures[future]] = future.result()
                if done is not None:
                    done(k, len(rates), results[futures[future]])
    return [r for r in results if r is not None]


# The saturation marks of a point's curve (one curve per packet size), on each of its rows.
SATURATION_COLUMNS = (
    "saturation_latency_cycles",
    "saturation_load",
    "saturation_load_high",
    "overload_accepted",
    "overload_offered",
)


def curve_table(results: Sequence[NocResult], preset: str) -> pd.DataFrame:
    """One row per point: every result field, the preset, and the saturation marks of its
    curve (``SATURATION_COLUMNS``, NaN where the sweep does not show one): a plot reads them
    from the table rather than working them out."""
    import pandas as pd  # only sweeps that write or draw need it

    table = pd.DataFrame([{"preset": preset, **r.as_dict()} for r in results])
    if table.empty:
        return table
    for column in SATURATION_COLUMNS:
        table[column] = np.nan
    for _, rows in table.groupby("packet_flits"):
        zero_load = float(rows["pattern_zero_load_cycles"].iloc[0])
        marks = saturation(
            rows["offered_flits_per_node_cycle"].to_numpy(),
            rows["accepted_flits_per_node_cycle"].to_numpy(),
            rows["avg_latency_cycles"].to_numpy(),
            zero_load,
            rows["saturated"].to_numpy(dtype=bool),
        )
        values = (
            SATURATION_LATENCY_FACTOR * zero_load,
            marks.load,
            marks.load_high,
            marks.overload_accepted,
            marks.overload_offered,
        )
        for column, value in zip(SATURATION_COLUMNS, values, strict=True):
            table.loc[rows.index, column] = np.nan if value is None else value
    return table
