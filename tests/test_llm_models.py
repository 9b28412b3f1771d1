"""Model shapes: the shipped models, Hugging Face configs, and refused records."""

from __future__ import annotations

import json

import pytest

from nunasim.errors import ConfigError
from nunasim.io.models import load_inference_settings, load_model, model_names
from nunasim.llm.hf_config import model_from_hf_config
from nunasim.llm.model import model_from_dict


def test_twelve_models_ship_and_load():
    names = model_names()
    assert len(names) == 12
    for name in names:
        assert load_model(name).name == name


def test_an_unknown_name_lists_the_shipped_ones():
    with pytest.raises(ConfigError, match=r"llama-3\.1-70b.*deepseek-v4-pro"):
        load_model("llama-9")


def _dense_params(name: str) -> float:
    model = load_model(name)
    h, hd = model.hidden_size, model.head_dim
    attention = h * hd * (2 * model.num_attention_heads + 2 * model.num_key_value_heads)
    assert model.intermediate_size is not None
    ffn = 3 * h * model.intermediate_size
    return model.num_layers * (attention + ffn) + 2 * h * model.vocab_size


@pytest.mark.parametrize(("name", "billions"), [("llama-3.1-70b", 70.6), ("llama-3.1-405b", 405.8)])
def test_dense_shapes_give_the_published_parameter_counts(name, billions):
    assert _dense_params(name) / 1e9 == pytest.approx(billions, abs=0.1)


def test_mixtral_total_parameters():
    model = load_model("mixtral-8x7b")
    h, hd, moe = model.hidden_size, model.head_dim, model.moe
    attention = h * hd * (2 * model.num_attention_heads + 2 * model.num_key_value_heads)
    experts = moe.num_experts * 3 * h * moe.moe_intermediate_size
    total = model.num_layers * (attention + experts) + 2 * h * model.vocab_size
    assert total / 1e9 == pytest.approx(46.7, abs=0.1)


def test_v4_compress_ratios_match_the_layer_counts():
    flash = load_model("deepseek-v4-flash").attention.compress_ratios
    assert (flash.count(0), flash.count(4), flash.count(128)) == (2, 21, 20)
    pro = load_model("deepseek-v4-pro").attention.compress_ratios
    assert (pro.count(0), pro.count(4), pro.count(128)) == (0, 30, 31)


LLAMA_70B_HF = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 8192,
    "intermediate_size": 28672,
    "num_attention_heads": 64,
    "num_hidden_layers": 80,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "rope_theta": 500000.0,
    "torch_dtype": "bfloat16",
}

QWEN3_30B_HF = {
    "model_type": "qwen3_moe",
    "hidden_size": 2048,
    "head_dim": 128,
    "intermediate_size": 6144,
    "moe_intermediate_size": 768,
    "num_attention_heads": 32,
    "num_hidden_layers": 48,
    "num_key_value_heads": 4,
    "num_experts": 128,
    "num_experts_per_tok": 8,
    "vocab_size": 151936,
    "use_sliding_window": False,
    "sliding_window": None,
}

GPT_OSS_20B_HF = {
    "model_type": "gpt_oss",
    "hidden_size": 2880,
    "head_dim": 64,
    "intermediate_size": 2880,
    "num_attention_heads": 64,
    "num_hidden_layers": 24,
    "num_key_value_heads": 8,
    "num_local_experts": 32,
    "num_experts_per_tok": 4,
    "experts_per_token": 4,
    "vocab_size": 201088,
    "sliding_window": 128,
    "layer_types": ["sliding_attention", "full_attention"] * 12,
    "quantization_config": {"quant_method": "mxfp4"},
}


DEEPSEEK_V32_HF = {
    "model_type": "deepseek_v32",
    "hidden_size": 7168,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "num_attention_heads": 128,
    "num_hidden_layers": 61,
    "num_key_value_heads": 128,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "num_experts_per_tok": 8,
    "first_k_dense_replace": 3,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "index_n_heads": 64,
    "index_head_dim": 128,
    "index_topk": 2048,
    "vocab_size": 129280,
    "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]},
}

DEEPSEEK_V4_FLASH_HF = {
    "model_type": "deepseek_v4",
    "hidden_size": 4096,
    "moe_intermediate_size": 2048,
    "num_attention_heads": 64,
    "num_hidden_layers": 43,
    "num_key_value_heads": 1,
    "head_dim": 512,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "num_experts_per_tok": 6,
    "q_lora_rank": 1024,
    "o_groups": 8,
    "o_lora_rank": 1024,
    "sliding_window": 128,
    "compress_ratios": [0, 0, *[4, 128] * 20, 4, 0],  # the last entry is the MTP layer's
    "hc_mult": 4,
    "index_n_heads": 64,
    "index_head_dim": 128,
    "index_topk": 512,
    "vocab_size": 129280,
    "expert_dtype": "fp4",
    "quantization_config": {"quant_method": "fp8"},
}


@pytest.mark.parametrize(
    ("name", "config"),
    [
        ("llama-3.1-70b", LLAMA_70B_HF),
        ("qwen3-30b-a3b", QWEN3_30B_HF),
        ("gpt-oss-20b", GPT_OSS_20B_HF),
        ("deepseek-v3.2", DEEPSEEK_V32_HF),
        ("deepseek-v4-flash", DEEPSEEK_V4_FLASH_HF),
    ],
)
def test_a_hugging_face_config_gives_the_shipped_shape(name, config, tmp_path):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    from_file = load_model(folder / "config.json")
    shipped = load_model(name)
    fields = ("hidden_size", "num_layers", "num_attention_heads", "num_key_value_heads")
    fields += ("head_dim", "intermediate_size", "vocab_size", "moe", "attention")
    fields += ("residual_streams", "weight_dtype")
    for field in fields:
        assert getattr(from_file, field) == getattr(shipped, field), field
    assert from_file.name == name
    assert from_file.expert_weight_dtype == shipped.expert_weight_dtype


def test_a_hugging_face_config_missing_a_key_is_refused():
    config = dict(LLAMA_70B_HF)
    del config["num_attention_heads"]
    with pytest.raises(ConfigError, match="num_attention_heads: missing"):
        model_from_hf_config(config, "x", "config.json")


def _record(name: str) -> dict:
    from importlib import resources

    text = resources.files("nunasim.llm").joinpath("models", "models.json").read_text()
    return next(r for r in json.loads(text) if r["name"] == name)


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda r: r.update(hidden=1), "hidden: unknown key"),
        (lambda r: r.pop("num_layers"), "num_layers: missing"),
        (lambda r: r.update(num_layers=0), "num_layers: expected a positive"),
        (lambda r: r.update(head_dim=-128), "head_dim: expected a positive"),
        (lambda r: r["moe"].update(num_experts=-8), "moe.num_experts: expected a positive"),
        (lambda r: r["moe"].update(top_k=2), "moe.top_k: unknown key"),
        (lambda r: r["attention"].update(kind="linear"), "attention.kind: unknown attention"),
        (lambda r: r.update(weight_dtype="int3"), "weight_dtype: unknown data type"),
    ],
)
def test_a_bad_record_is_refused_where_it_is_wrong(change, where, tmp_path):
    record = _record("mixtral-8x7b")
    change(record)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(record))
    with pytest.raises(ConfigError) as info:
        load_model(path)
    assert str(info.value).startswith(f"{path}: ")
    assert where in str(info.value)


def test_v4_ratios_must_cover_every_layer():
    record = _record("deepseek-v4-flash")
    record["attention"]["compress_ratios"] = [4] * 3
    with pytest.raises(ConfigError, match="3 compress ratios for 43 layers"):
        model_from_dict(record, "m.json")


def test_settings_ship_and_refuse_unknown_keys(tmp_path):
    settings = load_inference_settings()
    assert settings.activation_bytes == 2
    assert settings.dispatch_bytes == pytest.approx(1 + 4 / 128)
    bad = tmp_path / "s.yaml"
    bad.write_text("activation_bites: 2\n")
    with pytest.raises(ConfigError, match="activation_bites: unknown key"):
        load_inference_settings(bad)
