"""Per-layer FLOPs, bytes and collectives against hand-computed values, and properties of
the roofline step model."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nunasim.io.models import load_model
from nunasim.llm.collectives import Call, layer_calls, pipeline_calls
from nunasim.llm.operators import Step, layer_ops
from nunasim.llm.parallelism import Parallelism, parallelisms
from nunasim.llm.settings import InferenceSettings
from nunasim.llm.step_time import Rates, step_breakdown, step_calls

SETTINGS = InferenceSettings(
    activation_bytes=2,
    kv_cache_bytes=2,
    dispatch_bytes=1 + 4 / 128,
    combine_bytes=2,
    compute_dtype="bf16",
    tp_style="allreduce",
    hbm_capacity_bytes=576 * 10**9,
)


def _ops(name, layer, step, par):
    return {op.name: op for op in layer_ops(load_model(name), layer, step, par, SETTINGS)}


def test_llama2_7b_prefill_layer_by_hand():
    # h 4096, 32 heads of 128 (MHA), FFN 11008; one sequence of 4 tokens on one GPU.
    ops = _ops("llama-2-7b", 0, Step("prefill", 1, 4), Parallelism(1, 1, 1))
    assert ops["qkv_proj"].flops == 2 * 4 * 4096 * (3 * 4096)  # 402,653,184
    assert ops["qkv_proj"].weight_bytes == 4096 * 3 * 4096 * 2
    # causal: the 4 tokens see 1 + 2 + 3 + 4 = 10 keys; QK^T and PV, 2 FLOPs a multiply-add
    assert ops["attention"].flops == 4 * 32 * 128 * 10
    assert ops["attention"].kv_bytes == 4 * 2 * 32 * 128 * 2  # 4 tokens' K and V written
    assert ops["o_proj"].flops == 2 * 4 * 4096 * 4096
    assert ops["ffn"].flops == 2 * 4 * 3 * 4096 * 11008  # 1,082,130,432
    assert ops["ffn"].weight_bytes == 3 * 4096 * 11008 * 2
    assert sum(op.flops for op in ops.values()) == 1_619_165_184


def test_llama2_7b_decode_reads_the_kv_cache():
    ops = _ops("llama-2-7b", 0, Step("decode", 8, 1000), Parallelism(2, 1, 1))
    # 16 of the 32 heads per TP rank; 8 sequences with 1000 cached tokens each
    assert ops["attention"].flops == 4 * 16 * 128 * 8 * 1000
    assert ops["attention"].kv_bytes == 8 * 1000 * 2 * 16 * 128 * 2
    assert ops["ffn"].flops == 2 * 8 * 3 * 4096 * 11008 / 2


def test_mixtral_decode_layer_by_hand():
    # TP 2 x DP 4: a stage of 8 GPUs, one expert each; 16 sequences per attention group.
    ops = _ops("mixtral-8x7b", 0, Step("decode", 16, 1000), Parallelism(2, 4, 1))
    assert ops["qkv_proj"].flops == 2 * 16 * 4096 * (16 + 2 * 4) * 128
    assert ops["attention"].flops == 4 * 16 * 128 * 16 * 1000
    assert ops["attention"].kv_bytes == 16 * 1000 * 2 * 4 * 128 * 2
    assert ops["o_proj"].flops == 2 * 16 * 2048 * 4096
    assert ops["router"].flops == 2 * 8 * 4096 * 8  # each TP rank routes 8 of the 16 tokens
    # 4 groups x 16 tokens x top-2 = 128 token-expert pairs over 8 GPUs
    assert ops["experts"].flops == 2 * 3 * 4096 * 14336 * 16
    touched = 1 - 0.75**64
    assert ops["experts"].weight_bytes == pytest.approx(3 * 4096 * 14336 * 2 * touched)


def test_mixtral_layer_collectives_follow_the_formulas():
    model = load_model("mixtral-8x7b")
    step, par = Step("decode", 16, 1000), Parallelism(2, 4, 1)
    calls = layer_calls(model, 0, step, par, SETTINGS)
    h, T, k = 4096, 16, 2
    t_loc = T // 2  # T_loc = T / tp
    assert calls == [
        Call("allreduce", T * h * 2, 2, 1, "attention"),  # M = T h b after o_proj
        Call("alltoall", round(t_loc * k * h * (1 + 4 / 128)), 8, 1, "dispatch"),
        Call("alltoall", t_loc * k * h * 2, 8, 1, "combine"),
        Call("allgather", T * h * 2, 2, 1, "moe gather"),
    ]


def test_dense_layer_issues_two_allreduces_or_rs_ag_pairs():
    model = load_model("llama-3.1-70b")
    step, par = Step("prefill", 1, 8192), Parallelism(8, 1, 1)
    size = 8192 * 8192 * 2  # 128 MiB, the notes' worked example
    assert [c.size for c in layer_calls(model, 3, step, par, SETTINGS)] == [size, size]
    assert sum(c.count for c in step_calls(model, step, par, SETTINGS)) == 160
    sp = InferenceSettings(**{**SETTINGS.__dict__, "tp_style": "rs-ag"})
    kinds = [c.kind for c in layer_calls(model, 3, step, par, sp)]
    assert kinds == ["reducescatter", "allgather"] * 2


def test_pipeline_messages_carry_v4_residual_streams():
    model = load_model("deepseek-v4-flash")
    step = Step("prefill", 2, 1024)
    calls = pipeline_calls(model, step, Parallelism(1, 8, 4), SETTINGS)
    assert calls == [Call("sendrecv", 2 * 1024 * 4096 * 4 * 2, 2, 3, "pipeline")]


def test_compute_matches_the_notes_magnitude():
    # Llama-3.1-70B, TP 8, 8k-token prefill at 25 PFLOPS: about 5.8 ms (2 x 70.6e9 x 8192 / 8).
    rates = Rates(25e15, 40e12)
    bd = step_breakdown(
        load_model("llama-3.1-70b"),
        Step("prefill", 1, 8192),
        Parallelism(8, 1, 1),
        SETTINGS,
        rates,
        lambda kind, size, gpus: 0,
    )
    assert 5.5e9 < bd.compute_ps < 6.5e9


@settings(max_examples=25, deadline=None)
@given(
    name=st.sampled_from(["llama-2-7b", "mixtral-8x7b", "deepseek-v3.2", "deepseek-v4-flash"]),
    gpus=st.sampled_from([2, 4, 8, 16, 64]),
)
def test_every_enumerated_cut_uses_every_gpu_and_divides_the_model(name, gpus):
    model = load_model(name)
    cuts = parallelisms(model, gpus)
    assert cuts  # one GPU per stage with all-DP always fits the shapes
    for par in cuts:
        assert par.tp * par.dp * par.pp == gpus
        assert model.num_attention_heads % par.tp == 0


@settings(max_examples=20, deadline=None)
@given(
    batch=st.integers(1, 32),
    seq=st.integers(1, 2048),
    tp=st.sampled_from([1, 2, 4, 8, 16, 32]),
)
def test_tensor_parallel_ranks_split_the_mha_layer_flops_exactly(batch, seq, tp):
    # MHA (32 KV heads): with tp dividing the heads nothing is replicated, so the ranks' FLOPs
    # add up to the one-GPU layer's.
    step = Step("prefill", batch, seq)
    one = sum(op.flops for op in _ops("llama-2-7b", 0, step, Parallelism(1, 1, 1)).values())
    split = sum(op.flops for op in _ops("llama-2-7b", 0, step, Parallelism(tp, 1, 1)).values())
    assert split * tp == pytest.approx(one, rel=1e-12)


@settings(max_examples=20, deadline=None)
@given(seq=st.integers(1, 4096), extra=st.integers(1, 4096))
def test_longer_context_never_costs_less(seq, extra):
    model = load_model("deepseek-v4-flash")
    rates = Rates(25e15, 40e12)
    par = Parallelism(1, 8, 1)

    def time(s):
        return step_breakdown(
            model, Step("decode", 4, s), par, SETTINGS, rates, lambda *a: 0
        ).compute_ps

    assert time(seq + extra) >= time(seq)
