"""The inference model's assumptions that are not the model's or the hardware's: data
types, the MoE dispatch format, how TP reduces, and the HBM capacity a configuration must fit.
The shipped values are in ``inference.yaml`` beside this module (``nunasim.io.models``)."""

from __future__ import annotations

from dataclasses import dataclass

TP_STYLES = ("allreduce", "rs-ag")


@dataclass(frozen=True)
class InferenceSettings:
    """``activation_bytes``: per element of activations, TP collectives and PP messages;
    ``dispatch_bytes`` / ``combine_bytes``: per element of the MoE All-to-Alls (FP8 dispatch
    carries its block scales: 1 + 4/128); ``tp_style``: one All-Reduce per TP reduction, or a
    Reduce-Scatter and an All-Gather (sequence parallelism)."""

    activation_bytes: float
    kv_cache_bytes: float
    dispatch_bytes: float
    combine_bytes: float
    compute_dtype: str
    tp_style: str
    hbm_capacity_bytes: int
