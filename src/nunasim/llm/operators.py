"""The operators of one layer on one GPU: FLOPs and HBM bytes (weights, KV cache,
activations), from which a roofline gives the layer's compute time.

A step is one forward pass of ``batch`` sequences per attention group: ``seq`` new tokens
each in prefill (causal attention over themselves), one token each in decode (attending to a
context of ``seq`` cached tokens). Norms, rotary embeddings, softmax and the MLA/V4
compressors are left out: they are small next to the matrices and the attention products.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from nunasim.llm.model import Model
from nunasim.llm.parallelism import Parallelism
from nunasim.llm.settings import InferenceSettings
from nunasim.workload import DTYPE_BYTES

PHASES = ("prefill", "decode")


@dataclass(frozen=True)
class Op:
    """One operator on one GPU: ``flops`` and the HBM bytes it reads and writes."""

    name: str
    flops: float
    weight_bytes: float = 0.0
    kv_bytes: float = 0.0
    activation_bytes: float = 0.0

    @property
    def bytes(self) -> float:
        return self.weight_bytes + self.kv_bytes + self.activation_bytes


@dataclass(frozen=True)
class Step:
    """What one step processes per attention group: ``tokens`` new tokens, and, summed over
    those tokens, the keys each attends to under each attention pattern."""

    phase: str
    batch: int
    seq: int

    @property
    def tokens(self) -> int:
        return self.batch * self.seq if self.phase == "prefill" else self.batch

    def positions(self) -> np.ndarray:
        """Context length (keys in view, itself included) of every new token of a sequence."""
        if self.phase == "prefill":
            return np.arange(1, self.seq + 1, dtype=np.int64)
        return np.array([self.seq], dtype=np.int64)


def layer_ops(
    model: Model, layer: int, step: Step, par: Parallelism, settings: InferenceSettings
) -> list[Op]:
    """The operators of ``layer`` on one GPU of its stage."""
    return [
        *attention_ops(model, layer, step, par, settings),
        *ffn_ops(model, layer, step, par, settings),
    ]


# --- attention ----------------------------------------------------------------------------


def attention_ops(
    model: Model, layer: int, step: Step, par: Parallelism, settings: InferenceSettings
) -> list[Op]:
    kind = model.attention.kind
    if kind == "mla":
        return _mla_ops(model, step, par, settings)
    if kind == "v4":
        return _v4_ops(model, layer, step, par, settings)
    return _gqa_ops(model, layer, step, par, settings)


def _linear(name: str, tokens: float, n_in: float, n_out: float, wb: float, ab: float) -> Op:
    return Op(
        name,
        flops=2.0 * tokens * n_in * n_out,
        weight_bytes=n_in * n_out * wb,
        activation_bytes=tokens * (n_in + n_out) * ab,
    )


def _keys(step: Step, window: int | None) -> float:
    """Keys attended, summed over one sequence's new tokens, within a sliding ``window``."""
    ctx = step.positions()
    return float(np.minimum(ctx, window).sum() if window else ctx.sum())


def _cached_entries(step: Step, window: int | None) -> float:
    """Cached entries one sequence reads (decode) or writes (prefill)."""
    if step.phase == "prefill":
        return float(step.seq)
    return float(min(step.seq, window) if window else step.seq)


def _gqa_ops(
    model: Model, layer: int, step: Step, par: Parallelism, s: InferenceSettings
) -> list[Op]:
    att, hd, h = model.attention, model.head_dim, model.hidden_size
    wb, ab, T = DTYPE_BYTES[model.weight_dtype], s.activation_bytes, step.tokens
    q_heads = model.num_attention_heads / par.tp
    # KV heads are replicated when TP exceeds them (vLLM's QKVParallelLinear).
    kv_heads = max(model.num_key_value_heads / par.tp, 1.0)
    window = att.sliding_window if _slides(att.sliding_layers, layer) else None
    keys = step.batch * _keys(step, window)
    entries = step.batch * _cached_entries(step, window)
    return [
        _linear("qkv_proj", T, h, (q_heads + 2 * kv_heads) * hd, wb, ab),
        Op(
            "attention",
            flops=4.0 * q_heads * hd * keys,  # QK^T and PV
            kv_bytes=entries * 2 * kv_heads * hd * s.kv_cache_bytes,
            activation_bytes=2.0 * T * q_heads * hd * ab,
        ),
        _linear("o_proj", T, q_heads * hd, h, wb, ab),
    ]


def _slides(pattern: str, layer: int) -> bool:
    return pattern == "all" or (pattern == "even") == (layer % 2 == 0)


def _mla_ops(model: Model, step: Step, par: Parallelism, s: InferenceSettings) -> list[Op]:
    """DeepSeek MLA with its sparse indexer: queries attend to at most ``index_topk``
    latents. Prefill expands the latents to heads; decode absorbs the up-projections into
    the query and output (the usual kernels), attending over the 512 + 64 latent."""
    att, h = model.attention, model.hidden_size
    wb, ab, T = DTYPE_BYTES[model.weight_dtype], s.activation_bytes, step.tokens
    heads = model.num_attention_heads / par.tp
    qk = att.qk_nope_head_dim + att.qk_rope_head_dim
    latent = att.kv_lora_rank + att.qk_rope_head_dim
    keys = step.batch * _keys(step, att.index_topk)
    all_keys = step.batch * _keys(step, None)
    entries = step.batch * (float(step.seq))
    ops = [
        _linear("q_a_proj", T, h, att.q_lora_rank, wb, ab),
        _linear("q_b_proj", T, att.q_lora_rank, heads * qk, wb, ab),
        _linear("kv_a_proj", T, h, latent, wb, ab),
    ]
    if step.phase == "prefill":
        ops.append(
            _linear(
                "kv_b_proj",
                T,
                att.kv_lora_rank,
                heads * (att.qk_nope_head_dim + att.v_head_dim),
                wb,
                ab,
            )
        )
        core = 2.0 * heads * (qk + att.v_head_dim) * keys
    else:
        ops.append(_linear("q_absorb", T, heads * att.qk_nope_head_dim, att.kv_lora_rank, wb, ab))
        ops.append(_linear("v_absorb", T, heads * att.kv_lora_rank, att.v_head_dim, wb, ab))
        core = 2.0 * heads * (latent + att.kv_lora_rank) * keys
    index_bytes = 0.0
    if att.index_n_heads:
        core += 2.0 * att.index_n_heads * att.index_head_dim * all_keys  # indexer scores all
        index_bytes = entries * att.index_head_dim * s.kv_cache_bytes
    ops.append(
        Op(
            "attention",
            flops=core,
            kv_bytes=entries * latent * s.kv_cache_bytes + index_bytes,
            activation_bytes=2.0 * T * heads * qk * ab,
        )
    )
    ops.append(_linear("o_proj", T, heads * att.v_head_dim, h, wb, ab))
    return ops


def _v4_ops(
    model: Model, layer: int, step: Step, par: Parallelism, s: InferenceSettings
) -> list[Op]:
    """DeepSeek V4: one shared 512-wide KV head (K = V), a sliding-window branch on every
    layer plus, by the layer's compress ratio, CSA (4:1 compression, top-``index_topk``
    selection) or HCA (128:1, dense over the compressed entries); grouped low-rank output."""
    att, hd, h = model.attention, model.head_dim, model.hidden_size
    wb, ab, T = DTYPE_BYTES[model.weight_dtype], s.activation_bytes, step.tokens
    heads = model.num_attention_heads / par.tp
    ratio = att.compress_ratios[layer]
    ctx = step.positions()
    keys_per_pos = np.minimum(ctx, att.sliding_window).astype(np.float64)
    index_per_pos = np.zeros_like(keys_per_pos)
    compressed = np.ceil(ctx / ratio) if ratio else np.zeros_like(keys_per_pos)
    if ratio == 4:
        keys_per_pos += np.minimum(compressed, att.index_topk)
        index_per_pos = compressed
    elif ratio:
        keys_per_pos += compressed
    keys = step.batch * float(keys_per_pos.sum())
    if step.phase == "prefill":
        entries = step.batch * (step.seq + float(compressed[-1]))
    else:
        entries = step.batch * float(min(step.seq, att.sliding_window) + compressed[-1])
    core = 4.0 * heads * hd * keys
    core += 2.0 * att.index_n_heads * att.index_head_dim * step.batch * float(index_per_pos.sum())
    index_bytes = step.batch * float(compressed[-1]) * att.index_head_dim if ratio == 4 else 0.0
    groups = att.o_groups / par.tp
    return [
        _linear("q_a_proj", T, h, att.q_lora_rank, wb, ab),
        _linear("q_b_proj", T, att.q_lora_rank, heads * hd, wb, ab),
        _linear("kv_proj", T, h, hd, wb, ab),
        Op(
            "attention",
            flops=core,
            kv_bytes=(entries * hd + index_bytes) * s.kv_cache_bytes,
            activation_bytes=2.0 * T * heads * hd * ab,
        ),
        # Block-diagonal: each output group maps its own heads to o_lora_rank.
        Op(
            "o_a_proj",
            flops=2.0 * T * heads * hd * att.o_lora_rank,
            weight_bytes=heads * hd * att.o_lora_rank * wb,
            activation_bytes=T * (heads * hd + groups * att.o_lora_rank) * ab,
        ),
        _linear("o_b_proj", T, groups * att.o_lora_rank, h, wb, ab),
    ]


# --- feed-forward -------------------------------------------------------------------------


def ffn_ops(
    model: Model, layer: int, step: Step, par: Parallelism, s: InferenceSettings
) -> list[Op]:
    h, T = model.hidden_size, step.tokens
    wb, ab = DTYPE_BYTES[model.weight_dtype], s.activation_bytes
    if not model.is_moe_layer(layer):
        assert model.intermediate_size is not None
        return [_swiglu("ffn", T, h, model.intermediate_size / par.tp, wb, ab)]
    moe = model.moe
    assert moe is not None
    ewb = DTYPE_BYTES[model.expert_weight_dtype]
    local_tokens = math.ceil(T / par.tp)  # each TP rank routes its share of the tokens
    # Token-expert pairs of the whole stage, spread evenly over its GPUs (uniform routing).
    pairs = par.dp * T * moe.experts_per_token / par.ep
    held = max(moe.num_experts / par.ep, 1.0)
    # Expected fraction of an expert's weights a step reads: the chance at least one of the
    # stage's tokens picks it.
    touched = 1.0 - (1.0 - moe.experts_per_token / moe.num_experts) ** (par.dp * T)
    width = moe.moe_intermediate_size
    ops = [
        _linear("router", local_tokens, h, moe.num_experts, wb, ab),
        Op(
            "experts",
            flops=2.0 * 3 * h * width * pairs,
            weight_bytes=held * touched * 3 * h * width * ewb,
            activation_bytes=pairs * (2 * h + width) * ab,
        ),
    ]
    if moe.num_shared_experts:
        shared = moe.num_shared_experts * moe.shared_expert_intermediate_size
        ops.append(_swiglu("shared_expert", local_tokens, h, shared, wb, ab))
    return ops


def _swiglu(name: str, tokens: float, h: int, width: float, wb: float, ab: float) -> Op:
    """Gate, up and down projections of a SwiGLU FFN ``width`` wide."""
    return Op(
        name,
        flops=2.0 * tokens * 3 * h * width,
        weight_bytes=3 * h * width * wb,
        activation_bytes=tokens * (2 * h + 2 * width) * ab,
    )


def head_ops(model: Model, step: Step, par: Parallelism, s: InferenceSettings) -> list[Op]:
    """The LM head on the last stage: logits of one position per sequence."""
    wb = DTYPE_BYTES[model.weight_dtype]
    return [
        _linear(
            "lm_head",
            step.batch,
            model.hidden_size,
            model.vocab_size / par.tp,
            wb,
            s.activation_bytes,
        )
    ]
