"""The collective-size distributions of Fig. 2: the collectives one step of a model issues
(derived from the model; nothing is simulated), those of execution traces, and their
cumulative distributions.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from nunasim.experiments.llm_search import load_study
from nunasim.io.models import load_inference_settings, load_model, model_names
from nunasim.io.traces import read_trace
from nunasim.llm.model import Model
from nunasim.llm.operators import PHASES, Step
from nunasim.llm.parallelism import Parallelism, parallelisms
from nunasim.llm.step_time import step_calls

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
