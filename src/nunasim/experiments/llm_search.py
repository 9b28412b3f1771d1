"""The LLM study's parameters (``llm_study.yaml``) and its parallelism search.

The search tries every cut of the pod, batch and sequence length and keeps the fastest step
that meets a throughput floor; its collectives are priced by a ``CollectiveTimer``
(``collective_timer``). With ``execution: shared`` (the default) the first configuration's
choice is every configuration's plan, priced under each one's collectives; with ``own``
each configuration searches its own.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from typing import Any

from nunasim.errors import ConfigError
from nunasim.experiments.collective_timer import PLAN_COUNT, CollectiveTimer
from nunasim.hardware import Preset
from nunasim.io.presets import load_yaml
from nunasim.llm.collectives import Call
from nunasim.llm.model import Model
from nunasim.llm.operators import PHASES, Step
from nunasim.llm.parallelism import Parallelism, parallelisms
from nunasim.llm.settings import InferenceSettings
from nunasim.llm.step_time import (
    Breakdown,
    Rates,
    kv_bytes_per_gpu,
    step_breakdown,
    step_calls,
    step_compute_ps,
    weight_bytes_per_gpu,
)
from nunasim.units import SECONDS_PER_PS, format_size, parse_size

# --- study parameters -------------------------------------------------------------------------


def study_threadblocks(value: Any, source: str) -> int | str:
    """The study file's ``threadblocks``: ``"auto"``, ``"plan"`` (or null) or a count."""
    if value is None:
        return PLAN_COUNT
    if value in ("auto", PLAN_COUNT):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    raise ConfigError(
        f"'auto', 'plan' or a count of at least 1, not {value!r}",
        source=source,
        where="threadblocks",
    )


@dataclass(frozen=True)
class PhaseGrid:
    batch: tuple[int, ...]
    seq: tuple[int, ...]
    min_tokens_per_s_per_gpu: float


# How the configurations of the study choose their execution plan (see the module's text).
EXECUTIONS = ("shared", "own")


@dataclass(frozen=True)
class Study:
    configurations: tuple[str, ...]
    gpus: tuple[int, ...]
    phases: dict[str, PhaseGrid]
    collective_sizes: tuple[int, ...]
    threadblocks: int | str | None
    engine: str | None
    quick_gpus: tuple[int, ...]
    quick_models: tuple[str, ...]
    quick_sizes: tuple[int, ...]
    fig2: dict[str, Any]
    execution: str = "shared"


def load_study() -> Study:
    """The shipped study parameters (``llm_study.yaml``)."""
    source = "builtin:llm_study.yaml"
    text = resources.files("nunasim.experiments").joinpath("llm_study.yaml").read_text()
    data = load_yaml(text, source)
    phases = {
        phase: PhaseGrid(
            tuple(data[phase]["batch"]),
            tuple(data[phase]["seq"]),
            float(data[phase]["min_tokens_per_s_per_gpu"]),
        )
        for phase in PHASES
    }
    quick = data["quick"]
    return Study(
        configurations=tuple(data["configurations"]),
        gpus=tuple(data["gpus"]),
        phases=phases,
        collective_sizes=tuple(sorted(parse_size(s) for s in data["collective_sizes"])),
        threadblocks=study_threadblocks(data.get("threadblocks", PLAN_COUNT), source),
        engine=data.get("engine"),
        quick_gpus=tuple(quick["gpus"]),
        quick_models=tuple(quick["models"]),
        quick_sizes=tuple(sorted(parse_size(s) for s in quick["collective_sizes"])),
        fig2=dict(data["fig2"]),
        execution=study_execution(data.get("execution", "shared"), source),
    )


def study_execution(value: Any, source: str = "--execution") -> str:
    """The study's ``execution``: ``shared`` or ``own``."""
    if value not in EXECUTIONS:
        raise ConfigError(
            f"{' or '.join(EXECUTIONS)}, not {value!r}", source=source, where="execution"
        )
    return str(value)


def rates_for(preset: Preset, settings: InferenceSettings) -> Rates:
    socket = preset.socket
    return Rates(
        flops=socket.flops_for(settings.compute_dtype),
        hbm_bandwidth=sum(stack.bandwidth for stack in socket.stacks),
    )


# --- the search ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    """One enumerated point: cut, batch (per attention group), sequence length, its step
    breakdown and the pod's throughput in tokens per second."""

    parallelism: Parallelism
    batch: int
    seq: int
    breakdown: Breakdown
    tokens_per_s: float
    # Whether a collective of the step is larger than the simulated grid (priced by the
    # extrapolation), and the step's time were every collective at the ports' full
    # bandwidth: no pricing of the extrapolated ones can make the step faster than that.
    beyond_grid: bool = False
    lower_bound_ps: float = 0.0
    # The throughput were the step as fast as its lower bound: no pricing exceeds it.
    most_tokens_per_s: float = math.inf

    def meets(self, floor_per_gpu: float) -> bool:
        return reaches(self.tokens_per_s, floor_per_gpu, self.parallelism)

    def may_meet(self, floor_per_gpu: float) -> bool:
        """Whether any pricing of the step's collectives may make it meet the floor."""
        return reaches(self.most_tokens_per_s, floor_per_gpu, self.parallelism)


def reaches(tokens_per_s: float, floor_per_gpu: float, par: Parallelism) -> bool:
    """Whether the pod's throughput meets the floor for the GPUs ``par`` uses."""
    return tokens_per_s >= floor_per_gpu * par.gpus


def throughput(par: Parallelism, step: Step, step_ps: float) -> float:
    """Tokens per second of the pod running ``step`` under ``par`` in ``step_ps``."""
    seconds = step_ps * SECONDS_PER_PS
    return math.inf if seconds <= 0 else step.tokens * par.dp / seconds


def fitting_steps(
    model: Model, gpus: int, phase: str, grid: PhaseGrid, settings: InferenceSettings
) -> Iterator[tuple[Parallelism, Step]]:
    """Every (cut, step) of the phase's grid whose weights and KV cache fit one GPU's HBM,
    in the search's order."""
    for par in parallelisms(model, gpus):
        weights = weight_bytes_per_gpu(model, par, settings)
        if weights > settings.hbm_capacity_bytes:
            continue
        for batch in grid.batch:
            for seq in grid.seq:
                step = Step(phase, batch, seq)
                if weights + kv_bytes_per_gpu(model, step, par, settings) <= (
                    settings.hbm_capacity_bytes
                ):
                    yield par, step


def largest_collective(
    model: Model, gpus: int, phase: str, grid: PhaseGrid, settings: InferenceSettings
) -> int:
    """The largest collective (bytes, over more than one GPU) any step the search
    enumerates issues; 0 when none communicates."""
    return max(
        (
            call.size
            for par, step in fitting_steps(model, gpus, phase, grid, settings)
            for call in step_calls(model, step, par, settings)
            if call.gpus > 1
        ),
        default=0,
    )


@dataclass(frozen=True)
class Pricer:
    """Prices the steps of one model under one configuration."""

    model: Model
    configuration: str
    timer: CollectiveTimer
    settings: InferenceSettings
    rates: Rates

    def lower_bound_ps(self, par: Parallelism, step: Step) -> float:
        """The step's compute and every collective at the ports' full bandwidth: no pricing
        of its collectives, simulated or extrapolated, is faster."""
        return self._bound(par, step, step_calls(self.model, step, par, self.settings))

    def _bound(self, par: Parallelism, step: Step, calls: list[Call]) -> float:
        compute = step_compute_ps(self.model, step, par, self.settings, self.rates)
        return compute + sum(
            c.count * self.timer.lower_bound_ps(c.kind, c.size, c.gpus, self.configuration)
            for c in calls
        )

    def candidate(self, par: Parallelism, step: Step) -> Candidate:
        timer, configuration = self.timer, self.configuration
        bd = step_breakdown(
            self.model,
            step,
            par,
            self.settings,
            self.rates,
            lambda kind, size, n: timer.time(kind, size, n, configuration),
        )
        calls = step_calls(self.model, step, par, self.settings)
        beyond = not all(timer.covers(c.size, c.gpus) for c in calls)
        bound = self._bound(par, step, calls)
        return Candidate(
            par,
            step.batch,
            step.seq,
            bd,
            throughput(par, step, bd.total_ps),
            beyond,
            bound,
            throughput(par, step, bound),
        )


def candidates(
    model: Model,
    gpus: int,
    phase: str,
    configuration: str,
    timer: CollectiveTimer,
    grid: PhaseGrid,
    settings: InferenceSettings,
    rates: Rates,
) -> list[Candidate]:
    """Every (cut, batch, seq) of the grid whose weights and KV cache fit one GPU's HBM."""
    pricer = Pricer(model, configuration, timer, settings, rates)
    return [
        pricer.candidate(par, step)
        for par, step in fitting_steps(model, gpus, phase, grid, settings)
    ]


def contenders(pricer: Pricer, gpus: int, phase: str, grid: PhaseGrid) -> list[Candidate]:
    """The candidates ``choose`` could pick, in the search's order: they are priced from
    the lowest lower bound up, and those whose bound exceeds the fastest step meeting the
    floor so far are never priced (they cannot be chosen), so the collectives of steps far
    too slow to win are not simulated. Nor are steps that are fast but too small: a step
    whose throughput at its lower bound is below the floor cannot meet it, so it is
    chosen only if no step meets the floor, and then every step is priced. ``choose``
    picks from them what it picks from all ``candidates``."""
    floor = grid.min_tokens_per_s_per_gpu
    steps = list(fitting_steps(pricer.model, gpus, phase, grid, pricer.settings))
    bounds = [pricer.lower_bound_ps(par, step) for par, step in steps]
    priced: dict[int, Candidate] = {}
    fastest = math.inf
    for i in sorted(range(len(steps)), key=bounds.__getitem__):
        if bounds[i] > fastest:
            break
        par, step = steps[i]
        if not reaches(throughput(par, step, bounds[i]), floor, par):  # ``may_meet``
            continue
        priced[i] = pricer.candidate(*steps[i])
        if priced[i].meets(floor):
            fastest = min(fastest, priced[i].breakdown.total_ps)
    if math.isinf(fastest):  # none meets the floor: the highest throughput may be any
        for i, (par, step) in enumerate(steps):
            priced.setdefault(i, pricer.candidate(par, step))
    return [priced[i] for i in sorted(priced)]


def choose(found: list[Candidate], floor_per_gpu: float) -> Candidate:
    """The fastest step among those meeting the throughput floor; if none does, the one with
    the highest throughput. Ties go to the earlier enumerated."""
    if not found:
        raise ConfigError("no configuration fits the GPUs' HBM")
    meeting = [c for c in found if c.meets(floor_per_gpu)]
    if meeting:
        return min(meeting, key=lambda c: c.breakdown.total_ps)
    return max(found, key=lambda c: c.tokens_per_s)


def choice_within_grid(found: list[Candidate], chosen: Candidate, floor_per_gpu: float) -> bool:
    """Whether ``choose`` picks ``chosen`` however the collectives beyond the simulated grid
    truly cost: its own step is priced from the grid, and every candidate priced by the
    extrapolation is slower than it even with those collectives at full port bandwidth, or
    even then misses the throughput floor the choice meets."""
    if chosen.beyond_grid:
        return False
    beyond = [c for c in found if c.beyond_grid]
    if not chosen.meets(floor_per_gpu):
        return not beyond  # the highest throughput: any of them might have it
    return all(
        c.lower_bound_ps > chosen.breakdown.total_ps or not c.may_meet(floor_per_gpu)
        for c in beyond
    )


def best(
    model: Model,
    gpus: int,
    phase: str,
    configuration: str,
    timer: CollectiveTimer,
    study: Study,
    settings: InferenceSettings,
    rates: Rates,
) -> tuple[Candidate, bool]:
    """The chosen candidate, and whether the choice holds whatever the collectives beyond
    the simulated grid cost (``choice_within_grid``)."""
    grid = study.phases[phase]
    pricer = Pricer(model, configuration, timer, settings, rates)
    found = contenders(pricer, gpus, phase, grid)
    if not found:
        capacity = format_size(settings.hbm_capacity_bytes)
        raise ConfigError(
            f"{model.name} on {gpus} GPUs: no configuration's weights and KV cache fit "
            f"one GPU's {capacity} of HBM (hbm_capacity); try more GPUs"
        )
    chosen = choose(found, grid.min_tokens_per_s_per_gpu)
    return chosen, choice_within_grid(found, chosen, grid.min_tokens_per_s_per_gpu)
