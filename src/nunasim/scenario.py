"""A scenario: hardware, plan, configuration, size and seed; ``run()`` gives a SimResult.

This is the one place where a concrete placement policy meets the engine, and so the one
place every command that places or simulates a plan goes through: it proves the plan
first (``prove_once``: once per plan object) and refuses one that fails with the
checker's located message, before anything is placed, run or written.
"""

from __future__ import annotations

from dataclasses import dataclass

from nunasim.collectives.check import prove_once
from nunasim.collectives.plan import Plan
from nunasim.engine.analytic import lower_bound_ps
from nunasim.engine.lower import lower
from nunasim.engine.packet.engine import simulate
from nunasim.engine.result import SimResult, build_result
from nunasim.errors import ConfigError
from nunasim.hardware import Pod
from nunasim.mapping.placement import Placement
from nunasim.policies.background import place_gemm
from nunasim.policies.place import place
from nunasim.workload import GemmTile


@dataclass(frozen=True)
class Scenario:
    pod: Pod
    plan: Plan
    size: int  # collective size in bytes
    config: str = "UA"
    granularity: int | str = "auto"
    seed: int = 0
    dtype: str = "bf16"
    grouping: str = "all"
    layout: str = "aligned"  # chunks in pages: "aligned" or "packed" (policies.placement)
    gemm_tiles: int = 0  # background GEMM tiles per GPU (paper section 6.6)
    gemm_tile: GemmTile | None = None

    def placement(self) -> Placement:
        prove_once(self.plan)
        if self.pod.sockets < self.plan.ngpus:
            raise ConfigError(
                f"the plan needs {self.plan.ngpus} GPUs but the pod has {self.pod.sockets}"
            )
        return place(
            self.plan,
            self.size,
            self.pod,
            self.config,
            self.granularity,
            self.seed,
            self.grouping,
            self.layout,
        )

    def run(self, placement: Placement | None = None) -> SimResult:
        prove_once(self.plan)
        placement = placement or self.placement()
        background = None
        if self.gemm_tiles:
            if self.gemm_tile is None:
                raise ConfigError("a background GEMM needs a tile shape")
            background = place_gemm(
                placement.address_map, self.plan.ngpus, self.gemm_tiles, self.gemm_tile, self.seed
            )
        lowered = lower(self.pod, self.plan, placement, self.dtype, background)
        trace = simulate(lowered)
        return build_result(trace, lower_bound_ps(lowered), self.pod.socket.l1_latency_ps)
