"""End-to-end LLM inference under UA and NAP+NAR (paper section 6.7, Fig. 15) and the
collective-size distributions of Fig. 2.

Collective times come from the simulator: each distinct (collective, size, GPUs,
configuration) runs once through the sweep API and is remembered (in memory, and in the
sweeps' result cache when one is given); between the simulated grid's sizes the time is a
straight line in size. The search then tries every cut of the pod, batch and sequence length
and keeps the fastest step that meets a throughput floor, separately per configuration. Given
a runner of many points (``llm_table``'s ``run_many``, the sweeps' Dask cluster), the study
first finds the points its search needs, in rounds, and runs each round's together.

This module gathers the study's names; each concept lives in its own module:
``collective_timer`` (the collective times), ``llm_search`` (the study's parameters and the
parallelism search), ``llm_tables`` (Fig. 15's tables) and ``llm_sizes`` (Fig. 2's
collective sizes).
"""

from __future__ import annotations

from nunasim.experiments.collective_timer import (
    PLAN_COUNT,
    CollectiveTimer,
    Key,
    Progress,
    collective_point,
    collective_time,
)
from nunasim.experiments.llm_search import (
    Candidate,
    PhaseGrid,
    Pricer,
    Study,
    best,
    candidates,
    choice_within_grid,
    choose,
    contenders,
    fitting_steps,
    largest_collective,
    load_study,
    rates_for,
    study_threadblocks,
)
from nunasim.experiments.llm_sizes import (
    SIZE_COLUMNS,
    default_cut,
    fig2_table,
    model_collectives,
    size_cdf,
    trace_table,
)
from nunasim.experiments.llm_tables import (
    candidate_row,
    fig15_summary,
    fig15_table,
    llm_table,
    threadblocks_text,
)

__all__ = [
    "PLAN_COUNT",
    "SIZE_COLUMNS",
    "Candidate",
    "CollectiveTimer",
    "Key",
    "PhaseGrid",
    "Pricer",
    "Progress",
    "Study",
    "best",
    "candidate_row",
    "candidates",
    "choice_within_grid",
    "choose",
    "collective_point",
    "collective_time",
    "contenders",
    "default_cut",
    "fig2_table",
    "fig15_summary",
    "fig15_table",
    "fitting_steps",
    "largest_collective",
    "llm_table",
    "load_study",
    "model_collectives",
    "rates_for",
    "size_cdf",
    "study_threadblocks",
    "threadblocks_text",
    "trace_table",
]
