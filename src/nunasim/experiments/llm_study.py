"""End-to-end LLM inference under UA and NAP+NAR (paper section 6.7, Fig. 15) and the
collective-size distributions of Fig. 2.

Collective times come from the simulator: each distinct (collective, size, GPUs,
configuration) runs once through the sweep API and is remembered (in memory, and in the
sweeps' result cache when one is given); between the simulated grid's sizes the time is a
straight line in size. The search then tries every cut of the pod, batch and sequence length
and keeps the fastest step that meets a throughput floor, separately per configuration. Given
a runner of many points (``llm_table``'s ``run_many``, the sweeps' Dask cluster), the study
first finds the points its search needs, in rounds, and runs each round's together.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, fields
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nunasim.errors import ConfigError
from nunasim.experiments.cache import ResultCache, point_key
from nunasim.experiments.sweep import Point, PointTimes, run_points
from nunasim.hardware import Preset
from nunasim.io.models import load_inference_settings, load_model, model_names
from nunasim.io.presets import load_preset, load_yaml
from nunasim.io.traces import read_trace
from nunasim.llm.collectives import Call, wire_factor
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
from nunasim.scenario import Configuration
from nunasim.units import PS_PER_S, format_size, parse_size

Progress = Callable[[str], None]

# The simulator's built-in collective for each kind a step issues. A point-to-point message
# of M bytes is a 2-GPU All-to-All of 2M: each GPU keeps half its buffer and sends M.
_PLANS = {
    "allreduce": "allreduce",
    "allgather": "allgather",
    "reducescatter": "reducescatter",
    "alltoall": "alltoall",
}

# The ``threadblocks`` value that keeps each built-in plan's own count (one threadblock per
# peer and chunk), where "auto" runs the paper's search.
PLAN_COUNT = "plan"


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


def collective_point(
    collective: str,
    size: int,
    gpus: int,
    configuration: str,
    threadblocks: int | str | None = None,
    engine: str | None = None,
) -> Point:
    """The sweep point that prices one ``collective`` of ``size`` bytes on ``gpus`` GPUs
    (``threadblocks``: ``"plan"`` or None, the plan's own count; a count; or ``"auto"``,
    the paper's search).
    ``engine`` is handed to the point when the sweep API has an engine field, and is
    otherwise the packet engine every point runs on."""
    if collective == "sendrecv":
        collective, size, gpus = "alltoall", 2 * size, 2
    if collective not in _PLANS:
        raise ConfigError(f"no simulated collective for {collective!r}")
    extra: dict[str, Any] = {}
    if engine is not None and "engine" in {f.name for f in fields(Point)}:
        extra["engine"] = engine
    return Point(
        _PLANS[collective],
        max(size, 1),
        Configuration.parse(configuration),
        gpus=gpus,
        threadblocks=None if threadblocks == PLAN_COUNT else threadblocks,
        **extra,
    )


def collective_time(
    collective: str,
    size: int,
    gpus: int,
    configuration: str,
    preset: Preset | str = "nextgen-4die",
    threadblocks: int | str | None = None,
    cache: ResultCache | None = None,
) -> int:
    """Completion time in picoseconds of one ``collective`` (``collective_point``), run
    through the sweep API and its result cache when given: the one place the study meets
    the simulator."""
    hardware = preset if isinstance(preset, Preset) else load_preset(preset)
    point = collective_point(collective, size, gpus, configuration, threadblocks)
    rows = run_points([point], hardware, cache=cache, workers=1)
    return int(rows["completion_ps"].iloc[0])


Key = tuple[str, int, int, str]  # (collective, size, GPUs, configuration): one grid point


@dataclass
class CollectiveTimer:
    """Collective times at any size from simulations on a grid of ``sizes``: memoised here,
    and kept across runs in the sweeps' result cache (``cache``; None: nothing kept), so
    ``nunasim cache info|clear`` covers them."""

    preset: Preset
    sizes: tuple[int, ...]
    cache: ResultCache | None = None
    progress: Progress | None = None
    simulate: Callable[[str, int, int, str], int] | None = None
    threadblocks: int | str | None = None
    engine: str | None = None
    simulated: dict[Key, int] = field(default_factory=dict)
    runs: int = 0
    extrapolated: int = 0
    times: PointTimes = field(default_factory=PointTimes)  # cached points included

    def point(self, kind: str, size: int, gpus: int, configuration: str) -> int:
        """The simulated time of one grid point (run on first use, unless cached)."""
        key = (kind, size, gpus, configuration)
        if key not in self.simulated:
            if self.simulate is not None:
                self.simulated[key] = self.simulate(*key)
            else:
                self.learn(key, self._run(*key))
        return self.simulated[key]

    def _run(self, kind: str, size: int, gpus: int, configuration: str) -> dict[str, Any]:
        point = collective_point(kind, size, gpus, configuration, self.threadblocks, self.engine)
        cached = self.cache is not None and self.cache.get(point_key(point, self.preset))
        if not cached:
            self.runs += 1
            if self.progress:
                self.progress(f"simulating {kind} {size} B on {gpus} GPUs, {configuration}")
        # One point at a time, here: the search asks for the points it needs as it goes,
        # and each finished one is in the cache at once, so a stopped study resumes.
        return run_points([point], self.preset, cache=self.cache, workers=1).to_dict("records")[0]

    def planner(self, missing: dict[Key, Point]) -> CollectiveTimer:
        """A timer for a search that finds which points are needed: it prices from what
        this timer knows (its points, then the cache, which it adds to this timer) and puts
        every other grid point it is asked for in ``missing``, pricing it meanwhile at its
        lower bound. No simulation is faster than that bound, so the search it prices
        prices no candidate the true search would not, and asks for no point the true
        search would not need (``llm_table``)."""

        def known(kind: str, size: int, gpus: int, configuration: str) -> int:
            key = (kind, size, gpus, configuration)
            if key not in self.simulated:
                point = collective_point(*key, self.threadblocks, self.engine)
                row = self.cache.get(point_key(point, self.preset)) if self.cache else None
                if row is None:
                    missing[key] = point
                    return math.ceil(self.lower_bound_ps(kind, size, gpus))
                self.learn(key, row)
            return self.simulated[key]

        return CollectiveTimer(self.preset, self.sizes, simulate=known)

    def learn(self, key: Key, row: dict[str, Any]) -> None:
        """Take a simulated point's ``row`` (a sweep's) as the time of grid point ``key``."""
        self.simulated[key] = int(row["completion_ps"])
        self.times += PointTimes.of_row(row)

    def time(self, kind: str, size: int, gpus: int, configuration: str) -> int:
        """Interpolated time: a straight line in size between the two neighbouring grid
        sizes (the alpha-beta model between them), the smallest's below the grid, and above
        it the largest's plus the extra bytes at ``slope_ps_per_byte``."""
        if gpus == 1:
            return 0
        grid = self.sizes
        if size <= grid[0]:
            return self.point(kind, grid[0], gpus, configuration)
        if size >= grid[-1]:
            hi = self.point(kind, grid[-1], gpus, configuration)
            if size == grid[-1]:
                return hi
            self.extrapolated += 1
            slope = self.slope_ps_per_byte(kind, gpus, configuration)
            return round(hi + slope * (size - grid[-1]))
        upper = next(i for i, s in enumerate(grid) if s >= size)
        s0, s1 = grid[upper - 1], grid[upper]
        t0 = self.point(kind, s0, gpus, configuration)
        t1 = self.point(kind, s1, gpus, configuration)
        # Measured against searched runs at the midpoints of 10x steps, a line in size is
        # 2.5% off on average and a line in log-log space 6.7% (docs/llm.md).
        return round(t0 + (t1 - t0) * (size - s0) / (s1 - s0))

    def slope_ps_per_byte(self, kind: str, gpus: int, configuration: str) -> float:
        """The alpha-beta model's beta beyond the grid: the least-squares slope of the
        simulated times over the grid's top sizes (within 16x of the largest), never less
        than the ideal, the bytes each GPU sends over all its ports at full bandwidth."""
        ideal = self.ideal_ps_per_byte(kind, gpus)
        top = [s for s in self.sizes if s * 16 >= self.sizes[-1]]
        if len(top) < 2:
            return ideal
        times = [self.point(kind, s, gpus, configuration) for s in top]
        fitted = float(np.polyfit(np.array(top, float), np.array(times, float), 1)[0])
        return max(fitted, ideal)

    def ideal_ps_per_byte(self, kind: str, gpus: int) -> float:
        """Picoseconds per byte of a collective's size at the ports' full bandwidth: its
        wire bytes per GPU over every port of the GPU."""
        return wire_factor(kind, gpus) * PS_PER_S / self.injection_bandwidth

    def lower_bound_ps(self, kind: str, size: int, gpus: int) -> float:
        """No simulated run of the collective is faster: each GPU must put its wire bytes
        through its ports (and an extrapolated time is never below it either)."""
        return 0.0 if gpus == 1 else self.ideal_ps_per_byte(kind, gpus) * size

    def covers(self, size: int, gpus: int) -> bool:
        """Whether the time of a collective of ``size`` bytes on ``gpus`` GPUs comes from
        the simulated grid (interpolated, or the smallest size's), not from the alpha-beta
        extrapolation beyond it."""
        return gpus == 1 or size <= self.sizes[-1]

    @property
    def injection_bandwidth(self) -> float:
        """Bytes per second one GPU can send: all its ports, one direction."""
        return len(self.preset.socket.ports) * self.preset.pod.port_bandwidth


# --- study parameters -------------------------------------------------------------------------


@dataclass(frozen=True)
class PhaseGrid:
    batch: tuple[int, ...]
    seq: tuple[int, ...]
    min_tokens_per_s_per_gpu: float


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
    )


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

    def meets(self, floor_per_gpu: float) -> bool:
        return self.tokens_per_s >= floor_per_gpu * self.parallelism.gpus


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
            c.count * self.timer.lower_bound_ps(c.kind, c.size, c.gpus) for c in calls
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
        throughput = step.tokens * par.dp / (bd.total_ps * 1e-12)
        bound = self._bound(par, step, calls)
        return Candidate(par, step.batch, step.seq, bd, throughput, beyond, bound)


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
    too slow to win are not simulated. ``choose`` picks from them what it picks from all
    ``candidates``."""
    steps = list(fitting_steps(pricer.model, gpus, phase, grid, pricer.settings))
    bounds = [pricer.lower_bound_ps(par, step) for par, step in steps]
    priced: dict[int, Candidate] = {}
    fastest = math.inf
    for i in sorted(range(len(steps)), key=bounds.__getitem__):
        if bounds[i] > fastest:
            break
        priced[i] = pricer.candidate(*steps[i])
        if priced[i].meets(grid.min_tokens_per_s_per_gpu):
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
    extrapolation is slower than it even with those collectives at full port bandwidth."""
    if chosen.beyond_grid:
        return False
    beyond = [c for c in found if c.beyond_grid]
    if not chosen.meets(floor_per_gpu):
        return not beyond  # the highest throughput: any of them might have it
    return all(c.lower_bound_ps > chosen.breakdown.total_ps for c in beyond)


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


def candidate_row(
    model: str, gpus: int, phase: str, configuration: str, c: Candidate
) -> dict[str, Any]:
    bd = c.breakdown
    row: dict[str, Any] = {
        "model": model,
        "gpus": gpus,
        "phase": phase,
        "configuration": configuration,
        "tp": c.parallelism.tp,
        "dp": c.parallelism.dp,
        "pp": c.parallelism.pp,
        "ep": c.parallelism.ep,
        "batch": c.batch,
        "seq": c.seq,
        "time_ms": bd.total_ps / 1e9,
        "compute_ms": bd.compute_ps / 1e9,
        "communication_ms": bd.communication_ps / 1e9,
        "tokens_per_s": c.tokens_per_s,
    }
    for kind in ("allreduce", "reducescatter", "allgather", "alltoall", "sendrecv"):
        row[f"{kind}_ms"] = bd.collective_ps.get(kind, 0) / 1e9
        row[f"{kind}_count"] = bd.collective_counts.get(kind, 0)
    return row


def llm_table(
    models: Iterable[str],
    gpus: Iterable[int],
    phases: Iterable[str] = PHASES,
    *,
    quick: bool = False,
    preset: Preset | str = "nextgen-4die",
    cache: ResultCache | None = None,
    progress: Progress | None = None,
    timer: CollectiveTimer | None = None,
    threadblocks: int | str | None = None,
    run_many: Callable[[list[Point]], pd.DataFrame] | None = None,
) -> pd.DataFrame:
    """The chosen configuration per model, GPU count, phase and configuration (UA,
    NAP+NAR): one row each with its breakdown. ``threadblocks`` replaces the study's
    setting for the simulated collectives (``"auto"``: the paper's search, ``"plan"``: the
    plan's own count, a count; None: the study's); the table's
    ``attrs`` say which ran (``threadblocks``), how many simulations (``runs``) and what
    the points used took to compute (``points``, ``points_timed``, ``point_s``).

    Without ``run_many`` the search simulates each point when it first needs it, one at a
    time. With it (a runner of many points at once, such as ``run_points`` on a Dask
    cluster) the search runs in rounds on ``CollectiveTimer.planner``: each round's
    missing points are run together, and the round that misses none is the result, the
    same table as the one-at-a-time search gives."""
    study = load_study()
    settings = load_inference_settings()
    hardware = preset if isinstance(preset, Preset) else load_preset(preset)
    sizes = study.quick_sizes if quick else study.collective_sizes
    models, gpus, phases = tuple(models), tuple(gpus), tuple(phases)  # priced once a round
    timer = timer or CollectiveTimer(
        hardware,
        sizes,
        cache,
        progress,
        threadblocks=study.threadblocks if threadblocks is None else threadblocks,
        engine=study.engine,
    )
    rates = rates_for(hardware, settings)

    def price(timer: CollectiveTimer) -> list[dict[str, Any]]:
        return _study_rows(models, gpus, phases, timer, study, settings, rates)

    if run_many is None or timer.simulate is not None:
        rows = price(timer)
    else:
        rows = _in_rounds(timer, price, run_many)
    table = pd.DataFrame(rows)
    table.attrs["threadblocks"] = threadblocks_text(timer.threadblocks)
    table.attrs["runs"] = timer.runs
    table.attrs["grid"] = [int(size) for size in timer.sizes]
    table.attrs["points"] = timer.times.points
    table.attrs["points_timed"] = timer.times.timed
    table.attrs["point_s"] = timer.times.seconds
    return table


def _in_rounds(
    timer: CollectiveTimer,
    price: Callable[[CollectiveTimer], list[dict[str, Any]]],
    run_many: Callable[[list[Point]], pd.DataFrame],
) -> list[dict[str, Any]]:
    """``price``'s rows once every point it needs is known: each round prices with
    ``timer.planner`` and runs the points it missed, all at once, into ``timer``."""
    while True:
        missing: dict[Key, Point] = {}
        rows = price(timer.planner(missing))
        if not missing:
            return rows
        fetched = run_many(list(missing.values()))
        timer.runs += len(missing)
        for key, row in zip(missing, fetched.to_dict("records"), strict=True):
            timer.learn(key, row)


def _study_rows(
    models: Iterable[str],
    gpus: Iterable[int],
    phases: Iterable[str],
    timer: CollectiveTimer,
    study: Study,
    settings: InferenceSettings,
    rates: Rates,
) -> list[dict[str, Any]]:
    rows = []
    for name in models:
        model = load_model(name)
        for n in gpus:
            for phase in phases:
                reference: Candidate | None = None
                for configuration in study.configurations:
                    chosen, within = best(
                        model, n, phase, configuration, timer, study, settings, rates
                    )
                    reference = reference or chosen
                    row = candidate_row(name, n, phase, configuration, chosen)
                    row["within_grid"] = within
                    if model.moe is None:
                        row["ep"] = 1  # a dense model has no experts to spread
                    # The first configuration's step priced under this one: the same
                    # collectives, so their speedup is not mixed with a change of cut.
                    same = step_breakdown(
                        model,
                        Step(phase, reference.batch, reference.seq),
                        reference.parallelism,
                        settings,
                        rates,
                        lambda kind, size, g, c=configuration: timer.time(kind, size, g, c),
                    )
                    row["reference_communication_ms"] = same.communication_ps / 1e9
                    rows.append(row)
    return rows


def threadblocks_text(threadblocks: int | str | None) -> str:
    """How the simulated collectives chose their threadblocks, for outputs and reports."""
    if threadblocks is None or threadblocks == PLAN_COUNT:
        return "the plan's own threadblock count"
    if threadblocks == "auto":
        return "the best threadblock count and NAR granularity (the paper's search)"
    return f"{threadblocks} threadblocks per GPU"


def fig15_table(
    quick: bool,
    cache: ResultCache | None = None,
    progress: Progress | None = None,
    *,
    preset: Preset | str = "nextgen-4die",
    threadblocks: int | str | None = None,
    run_many: Callable[[list[Point]], pd.DataFrame] | None = None,
) -> pd.DataFrame:
    """Fig. 15 and the section 6.7 averages: every model on every GPU count of the study
    (``quick``: the quick subset on 8 GPUs, two simulated sizes), both phases, UA and
    NAP+NAR. The table's ``attrs`` hold the wall time and simulations run; ``run_many`` is
    ``llm_table``'s."""
    study = load_study()
    models = study.quick_models if quick else tuple(model_names())
    gpus = study.quick_gpus if quick else study.gpus
    started = time.perf_counter()
    table = llm_table(
        models,
        gpus,
        quick=quick,
        preset=preset,
        cache=cache,
        progress=progress,
        threadblocks=threadblocks,
        run_many=run_many,
    )
    table.attrs["wall_s"] = time.perf_counter() - started
    return table


def fig15_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per phase: geometric-mean and largest reduction of the step time (TTFT, TPOT) under
    NAP+NAR against UA, each with its own chosen configuration, and the geometric-mean
    speedup of the collectives of UA's chosen step under NAP+NAR."""
    keys = ["model", "gpus", "phase"]
    ua = table[table.configuration == "UA"].set_index(keys)
    nap = table[table.configuration == "NAP+NAR"].set_index(keys)
    rows = []
    for phase in PHASES:
        a, b = ua.xs(phase, level="phase"), nap.xs(phase, level="phase")
        if a.empty:
            continue
        ratio = (b.time_ms / a.time_ms).to_numpy()
        # UA's chosen step under both configurations (where it communicates at all)
        moving = a.communication_ms > 0
        comm = a.communication_ms[moving] / b.reference_communication_ms[moving]
        row: dict[str, Any] = {
            "phase": phase,
            "metric": "TTFT" if phase == "prefill" else "TPOT",
            "points": len(ratio),
            "geomean_reduction": 1 - float(np.exp(np.log(ratio).mean())),
            "max_reduction": 1 - float(ratio.min()),
            "collective_speedup_geomean": float(np.exp(np.log(comm.to_numpy()).mean()))
            if len(comm)
            else float("nan"),
        }
        if "within_grid" in table:
            # choices (of either configuration) that could change were the collectives
            # beyond the simulated grid simulated rather than extrapolated
            both = table[table.phase == phase]
            row["beyond_grid"] = int((~both.within_grid.astype(bool)).sum())
        rows.append(row)
    return pd.DataFrame(rows)


# --- Fig. 2: collective sizes -------------------------------------------------------------

# One row per collective (or per group of equal ones): where it comes from, its kind,
# output-buffer bytes and how many.
SIZE_COLUMNS = ["source", "phase", "kind", "size", "count"]


def default_cut(model: Model, gpus: int) -> Parallelism:
    """The cut Fig. 2 uses when no search result is given: one stage, the widest TP up to 8."""
    cuts = [p for p in parallelisms(model, gpus) if p.pp == 1 and p.tp <= 8]
    return max(cuts, key=lambda p: p.tp)


def model_collectives(
    model_name: str, gpus: int, phase: str, batch: int, seq: int, par: Parallelism | None = None
) -> pd.DataFrame:
    """The collectives one step of ``model_name`` issues: kind, output-buffer size, count."""
    model = load_model(model_name)
    settings = load_inference_settings()
    cut = par or default_cut(model, gpus)
    rows = [
        {
            "source": model_name,
            "phase": phase,
            "kind": c.kind,
            "size": _output_bytes(c.kind, c.size, c.gpus),
            "count": c.count,
        }
        for c in step_calls(model, Step(phase, batch, seq), cut, settings)
    ]
    return pd.DataFrame(rows, columns=SIZE_COLUMNS)


def _output_bytes(kind: str, size: int, gpus: int) -> int:
    """A collective's output buffer on one GPU from its full logical size."""
    return size // gpus if kind == "reducescatter" else size


def fig2_table(
    models: Iterable[str] | None = None,
    gpus: int | None = None,
    choices: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Fig. 2 (inference): the collectives of one prefill and one decode step of each model
    on ``gpus`` GPUs (the study's 64 by default). With ``choices`` (an ``llm_table`` or
    ``fig15_table``), each model and phase runs at its UA choice on those GPUs; otherwise
    at ``default_cut`` and the batch and sequence length of ``llm_study.yaml``."""
    study = load_study()
    n = gpus or int(study.fig2["gpus"])
    frames = []
    for name in models or model_names():
        for phase in PHASES:
            shape = study.fig2[phase]
            batch, seq, cut = int(shape["batch"]), int(shape["seq"]), None
            if choices is not None:
                row = choices[
                    (choices.model == name)
                    & (choices.phase == phase)
                    & (choices.gpus == n)
                    & (choices.configuration == "UA")
                ]
                if row.empty:
                    continue
                chosen = row.iloc[0]
                batch, seq = int(chosen.batch), int(chosen.seq)
                cut = Parallelism(int(chosen.tp), int(chosen.dp), int(chosen.pp))
            frames.append(model_collectives(name, n, phase, batch, seq, cut))
    if not frames:
        return pd.DataFrame(columns=SIZE_COLUMNS)
    return pd.concat(frames, ignore_index=True)


def trace_table(paths: Iterable[str | Path]) -> pd.DataFrame:
    """The collectives of execution traces: one row per collective (count 1)."""
    rows = []
    for path in paths:
        for c in read_trace(path):
            rows.append(
                {
                    "source": Path(path).name,
                    "phase": "trace",
                    "kind": c.kind,
                    "size": c.size,
                    "count": 1,
                }
            )
    return pd.DataFrame(rows, columns=SIZE_COLUMNS)


def size_cdf(
    table: pd.DataFrame, by: tuple[str, ...] = ("source", "phase", "kind")
) -> pd.DataFrame:
    """Cumulative distribution of sizes (weighted by count) per group: one row per distinct
    size with the fraction of collectives at or below it."""
    out = []
    for key, group in table.groupby(list(by), sort=False):
        sizes = group.groupby("size")["count"].sum().sort_index()
        fraction = sizes.cumsum() / sizes.sum()
        for size, frac in fraction.items():
            out.append(
                {**dict(zip(by, key, strict=True)), "size": int(size), "fraction": float(frac)}
            )
    return pd.DataFrame(out)
