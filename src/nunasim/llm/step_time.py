"""One inference step's time: roofline compute of every operator plus the collectives,
run one after the other (no overlap, as the paper models it)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from nunasim.llm.collectives import Call, layer_calls, pipeline_calls
from nunasim.llm.model import Model
from nunasim.llm.operators import Op, Step, head_ops, layer_ops
from nunasim.llm.parallelism import Parallelism
from nunasim.llm.settings import InferenceSettings
from nunasim.units import transfer_ps
from nunasim.workload import DTYPE_BYTES

# Prices one collective: (kind, size in bytes, GPUs) -> picoseconds.
CollectiveTime = Callable[[str, int, int], int]


@dataclass(frozen=True)
class Rates:
    """What the roofline divides by: FLOP/s of the compute data type, HBM bytes/s."""

    flops: float
    hbm_bandwidth: float

    def op_ps(self, op: Op) -> int:
        return max(
            transfer_ps(round(op.flops), self.flops),
            transfer_ps(round(op.bytes), self.hbm_bandwidth),
        )


@dataclass(frozen=True)
class Breakdown:
    """A step's time in picoseconds: ``compute_ps``, and per collective kind the time of
    all its calls (``collective_ps``) and their number (``collective_counts``)."""

    compute_ps: int
    collective_ps: dict[str, int] = field(default_factory=dict)
    collective_counts: dict[str, int] = field(default_factory=dict)

    @property
    def communication_ps(self) -> int:
        return sum(self.collective_ps.values())

    @property
    def total_ps(self) -> int:
        return self.compute_ps + self.communication_ps


def step_calls(model: Model, step: Step, par: Parallelism, s: InferenceSettings) -> list[Call]:
    """Every collective of one step: the layers', one entry per distinct call with its count
    over all layers, then the pipeline's."""
    counts: Counter[Call] = Counter()
    for layers in layer_kinds(model).values():
        for call in layer_calls(model, layers[0], step, par, s):
            counts[call] += call.count * len(layers)
    merged = [replace(call, count=count) for call, count in counts.items()]
    return merged + pipeline_calls(model, step, par, s)


def layer_kinds(model: Model) -> dict[tuple[object, ...], list[int]]:
    """The layers grouped by what their cost depends on (MoE or dense, sliding window, V4
    compression), so that each group is priced once."""
    kinds: dict[tuple[object, ...], list[int]] = {}
    att = model.attention
    for layer in range(model.num_layers):
        ratio = att.compress_ratios[layer] if att.compress_ratios else None
        parity = layer % 2 if att.sliding_layers != "all" else 0
        kinds.setdefault((model.is_moe_layer(layer), parity, ratio), []).append(layer)
    return kinds


def _sum_over_layers(model: Model, price: Callable[[int], float]) -> float:
    return sum(price(layers[0]) * len(layers) for layers in layer_kinds(model).values())


def step_compute_ps(
    model: Model, step: Step, par: Parallelism, s: InferenceSettings, rates: Rates
) -> int:
    """Compute time of one step on the GPUs it passes through (one per stage, in turn)."""
    layers = _sum_over_layers(
        model, lambda layer: sum(rates.op_ps(op) for op in layer_ops(model, layer, step, par, s))
    )
    return int(layers) + sum(rates.op_ps(op) for op in head_ops(model, step, par, s))


def step_breakdown(
    model: Model,
    step: Step,
    par: Parallelism,
    s: InferenceSettings,
    rates: Rates,
    collective_time: CollectiveTime,
) -> Breakdown:
    """The step's compute and, per collective kind, communication time."""
    times: Counter[str] = Counter()
    counts: Counter[str] = Counter()
    for call in step_calls(model, step, par, s):
        times[call.kind] += call.count * collective_time(call.kind, call.size, call.gpus)
        counts[call.kind] += call.count
    return Breakdown(step_compute_ps(model, step, par, s, rates), dict(times), dict(counts))


def weight_bytes_per_gpu(model: Model, par: Parallelism, s: InferenceSettings) -> float:
    """Weights one GPU holds: its stage's share of the layers, all of its own experts."""
    step = Step("decode", 1, 1)  # one token reads every dense weight once

    def layer_bytes(layer: int) -> float:
        dense = sum(
            op.weight_bytes for op in layer_ops(model, layer, step, par, s) if op.name != "experts"
        )
        return dense + (expert_bytes_held(model, par) if model.is_moe_layer(layer) else 0.0)

    return _sum_over_layers(model, layer_bytes) / par.pp


def expert_bytes_held(model: Model, par: Parallelism) -> float:
    """Routed-expert weights of one MoE layer on one GPU of the stage."""
    moe = model.moe
    assert moe is not None
    held = max(moe.num_experts / par.ep, 1.0)
    width = moe.moe_intermediate_size
    return held * 3 * model.hidden_size * width * DTYPE_BYTES[model.expert_weight_dtype]


def kv_bytes_per_gpu(model: Model, step: Step, par: Parallelism, s: InferenceSettings) -> float:
    """KV cache one GPU holds for a decode step's context (its stage's layers)."""
    decode = Step("decode", step.batch, step.seq)

    def layer_bytes(layer: int) -> float:
        return sum(op.kv_bytes for op in layer_ops(model, layer, decode, par, s))

    return _sum_over_layers(model, layer_bytes) / par.pp
