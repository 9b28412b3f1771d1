"""The LLM study's tables (paper section 6.7, Fig. 15): the chosen configuration per model,
GPU count, phase and configuration (UA, NAP+NAR), and Fig. 15's summary of them.

Given a runner of many points (``llm_table``'s ``run_many``, the sweeps' Dask cluster), the
study first finds the points its search needs, in rounds, and runs each round's together.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from nunasim.experiments.cache import ResultCache
from nunasim.experiments.collective_timer import (
    PLAN_COUNT,
    CollectiveTimer,
    Key,
    Progress,
)
from nunasim.experiments.llm_search import (
    Candidate,
    Pricer,
    Study,
    best,
    load_study,
    rates_for,
    study_execution,
)
from nunasim.experiments.sweep import Point
from nunasim.hardware import Preset
from nunasim.io.models import load_inference_settings, load_model, model_names
from nunasim.io.presets import load_preset
from nunasim.llm.operators import PHASES, Step
from nunasim.llm.settings import InferenceSettings
from nunasim.llm.step_time import Rates
from nunasim.units import ps_to_ms


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
        "time_ms": ps_to_ms(bd.total_ps),
        "compute_ms": ps_to_ms(bd.compute_ps),
        "communication_ms": ps_to_ms(bd.communication_ps),
        "tokens_per_s": c.tokens_per_s,
    }
    for kind in ("allreduce", "reducescatter", "allgather", "alltoall", "sendrecv"):
        row[f"{kind}_ms"] = ps_to_ms(bd.collective_ps.get(kind, 0))
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
    execution: str | None = None,
    search: str = "staged",
) -> pd.DataFrame:
    """The chosen configuration per model, GPU count, phase and configuration (UA,
    NAP+NAR): one row each with its breakdown. ``execution`` replaces the study's
    (``shared``: every configuration runs the plan the first one chooses; ``own``).
    ``threadblocks`` replaces the study's setting for the simulated collectives
    (``"auto"``: the paper's search, ``"plan"``: the plan's own count, a count; None: the
    study's), searched by ``search`` (``tbsearch.SEARCHES``); the table's ``attrs`` say
    which ran (``threadblocks``), how many simulations
    (``runs``) and what the points used took to compute (``points``, ``points_timed``,
    ``point_s``).

    Without ``run_many`` the search simulates each point when it first needs it, one at a
    time. With it (a runner of many points at once, such as ``run_points`` on a Dask
    cluster) the search runs in rounds on ``CollectiveTimer.planner``: each round's
    missing points are run together, and the round that misses none is the result, the
    same table as the one-at-a-time search gives."""
    study = load_study()
    if execution is not None:
        study = replace(study, execution=study_execution(execution))
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
        search=search,
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
    table.attrs["search"] = timer.search
    table.attrs["searches"] = dict(timer.searches)
    table.attrs["grid"] = [int(size) for size in timer.sizes]
    table.attrs["points"] = timer.times.points
    table.attrs["points_timed"] = timer.times.timed
    table.attrs["point_s"] = timer.times.seconds
    table.attrs["execution"] = study.execution
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
    """A row per model, GPU count, phase and configuration: under ``study.execution``
    ``shared`` the first configuration's chosen plan priced under each configuration's
    collectives, beside each one's own choice (``own_*``); under ``own`` each its own,
    beside the first's plan (``shared_*``)."""
    rows = []
    for name in models:
        model = load_model(name)
        for n in gpus:
            for phase in phases:
                reference: tuple[Candidate, bool] | None = None
                for configuration in study.configurations:
                    own = best(model, n, phase, configuration, timer, study, settings, rates)
                    reference = reference or own
                    pricer = Pricer(model, configuration, timer, settings, rates)
                    plan = reference[0]
                    shared = pricer.candidate(plan.parallelism, Step(phase, plan.batch, plan.seq))
                    # The first's choice holds for the others only as far as it holds for it.
                    shared_within = reference[1] and not shared.beyond_grid
                    chosen, within, other = (
                        (shared, shared_within, own[0])
                        if study.execution == "shared"
                        else (own[0], own[1], shared)
                    )
                    row = candidate_row(name, n, phase, configuration, chosen)
                    row["within_grid"] = within
                    if model.moe is None:
                        row["ep"] = 1  # a dense model has no experts to spread
                    # The first configuration's step priced under this one: the same
                    # collectives, so their speedup is not mixed with a change of cut.
                    row["reference_communication_ms"] = ps_to_ms(shared.breakdown.communication_ps)
                    row["execution"] = study.execution
                    prefix = "own" if study.execution == "shared" else "shared"
                    row[f"{prefix}_time_ms"] = ps_to_ms(other.breakdown.total_ps)
                    row[f"{prefix}_compute_ms"] = ps_to_ms(other.breakdown.compute_ps)
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
    search: str = "staged",
) -> pd.DataFrame:
    """Fig. 15 and the section 6.7 averages: every model on every GPU count of the study
    (``quick``: the quick subset on 8 GPUs, two simulated sizes), both phases, UA and
    NAP+NAR. The table's ``attrs`` hold the wall time and simulations run; ``run_many``
    and ``search`` are ``llm_table``'s."""
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
        search=search,
    )
    table.attrs["wall_s"] = time.perf_counter() - started
    return table


# Rounding room for the Amdahl check (a fraction of the step time).
AMDAHL_SLACK = 1e-9


def fig15_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per phase: geometric-mean and largest reduction of the step time (TTFT, TPOT) under
    NAP+NAR against UA, as the table chose their plans (``execution``), how many steps
    gain more than their communication's share of UA's time (``beyond_amdahl``), the same
    reductions with the plans chosen the other way, and the geometric-mean speedup of the
    collectives of UA's chosen step under NAP+NAR."""
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
        # Amdahl's law: with compute unchanged no step gains more than its communication.
        share = (a.communication_ms / a.time_ms).to_numpy()
        row: dict[str, Any] = {
            "phase": phase,
            "metric": "TTFT" if phase == "prefill" else "TPOT",
            "points": len(ratio),
            "geomean_reduction": 1 - float(np.exp(np.log(ratio).mean())),
            "max_reduction": 1 - float(ratio.min()),
            "beyond_amdahl": int((1 - ratio > share + AMDAHL_SLACK).sum()),
            "collective_speedup_geomean": float(np.exp(np.log(comm.to_numpy()).mean()))
            if len(comm)
            else float("nan"),
        }
        other = "own" if "own_time_ms" in table else "shared" if "shared_time_ms" in table else ""
        if other:  # the other way of choosing the plan, beside it
            mine = (b[f"{other}_time_ms"] / a[f"{other}_time_ms"]).to_numpy()
            row[f"{other}_geomean_reduction"] = 1 - float(np.exp(np.log(mine).mean()))
            row[f"{other}_max_reduction"] = 1 - float(mine.min())
        if "within_grid" in table:
            # choices (of either configuration) that could change were the collectives
            # beyond the simulated grid simulated rather than extrapolated
            both = table[table.phase == phase]
            row["beyond_grid"] = int((~both.within_grid.astype(bool)).sum())
        rows.append(row)
    return pd.DataFrame(rows)
