"""The collectives a step issues, with their sizes: the full logical tensor each operates on
(the All-Reduce buffer, the gathered All-Gather output, the Reduce-Scatter input, one rank's
whole All-to-All send buffer, a point-to-point message), as the simulator's ``size`` takes it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from nunasim.llm.model import Model
from nunasim.llm.operators import Step
from nunasim.llm.parallelism import Parallelism
from nunasim.llm.settings import InferenceSettings

KINDS = ("allreduce", "reducescatter", "allgather", "alltoall", "sendrecv")


@dataclass(frozen=True)
class Call:
    """``count`` collectives of one kind, each ``size`` bytes over ``gpus`` GPUs; ``why``
    names the layer part that issues them."""

    kind: str
    size: int
    gpus: int
    count: int
    why: str


def layer_calls(
    model: Model, layer: int, step: Step, par: Parallelism, s: InferenceSettings
) -> list[Call]:
    """The collectives ``layer`` issues (once each, on every group of the pod at once)."""
    h, T = model.hidden_size, step.tokens
    full = math.ceil(T * h * s.activation_bytes)
    calls = _tp_reduction(full, par, s, "attention")  # after o_proj (row-parallel)
    if not model.is_moe_layer(layer):
        return calls + _tp_reduction(full, par, s, "ffn")  # after down_proj
    moe = model.moe
    assert moe is not None
    if par.ep > 1:
        # Each TP rank dispatches its 1/tp share of the tokens, one copy per chosen expert.
        local = math.ceil(T / par.tp) * moe.experts_per_token * h
        calls.append(Call("alltoall", math.ceil(local * s.dispatch_bytes), par.ep, 1, "dispatch"))
        calls.append(Call("alltoall", math.ceil(local * s.combine_bytes), par.ep, 1, "combine"))
    if par.tp > 1:
        # The combined shares are gathered back onto every TP rank.
        calls.append(Call("allgather", full, par.tp, 1, "moe gather"))
    return calls


def _tp_reduction(size: int, par: Parallelism, s: InferenceSettings, why: str) -> list[Call]:
    if par.tp == 1:
        return []
    if s.tp_style == "rs-ag":  # sequence parallelism: same wire bytes, two collectives
        return [
            Call("reducescatter", size, par.tp, 1, why),
            Call("allgather", size, par.tp, 1, why),
        ]
    return [Call("allreduce", size, par.tp, 1, why)]


def pipeline_calls(model: Model, step: Step, par: Parallelism, s: InferenceSettings) -> list[Call]:
    """The stage-to-stage messages of one step: the residual stream, ``pp - 1`` times."""
    if par.pp == 1:
        return []
    size = math.ceil(step.tokens * model.hidden_size * model.residual_streams * s.activation_bytes)
    return [Call("sendrecv", size, 2, par.pp - 1, "pipeline")]


def wire_factor(kind: str, gpus: int) -> float:
    """Bytes one GPU puts on the wire per byte of the collective's size (NCCL's bus-bandwidth
    factors): an All-Reduce moves ``2(n-1)/n``, an All-Gather, Reduce-Scatter or All-to-All
    ``(n-1)/n``, a point-to-point message all of it."""
    if kind == "sendrecv":
        return 1.0
    share = (gpus - 1) / gpus
    return 2 * share if kind == "allreduce" else share
