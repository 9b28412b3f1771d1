"""A ``Model`` from a Hugging Face ``config.json`` (Llama, Mixtral, Qwen3-MoE, gpt-oss,
DeepSeek V3.2 and V4 layouts). The config holds far more than the inference model needs, so
unknown keys are ignored here; a missing or bad needed key is refused by its name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nunasim.errors import ConfigError
from nunasim.llm.model import Model, model_from_dict
from nunasim.workload import DTYPE_BYTES

# Weights that ship quantised, by the config's quantisation method: all of them (FP8
# block-scaled checkpoints) or only the experts (gpt-oss's MXFP4).
_QUANTISED_WEIGHTS = {"fp8": "fp8"}
_QUANTISED_EXPERTS = {"mxfp4": "fp4"}


def model_from_hf_config(config: Mapping[str, Any], name: str, source: str = "") -> Model:
    """The model a Hugging Face ``config.json`` describes, named ``name``."""
    if not isinstance(config, Mapping):
        raise ConfigError("a config.json holds one JSON object", source=source)

    def get(*keys: str, default: Any = ...) -> Any:
        for key in keys:
            if config.get(key) is not None:
                return config[key]
        if default is ...:
            raise ConfigError("missing", source=source, where=" or ".join(keys))
        return default

    hidden = get("hidden_size")
    heads = get("num_attention_heads")
    record: dict[str, Any] = {
        "name": name,
        "hidden_size": hidden,
        "num_layers": get("num_hidden_layers"),
        "num_attention_heads": heads,
        "num_key_value_heads": get("num_key_value_heads", default=heads),
        "vocab_size": get("vocab_size"),
        "source": source,
    }
    experts = get("n_routed_experts", "num_local_experts", "num_experts", default=None)
    if "kv_lora_rank" in config and config.get("kv_lora_rank"):
        record["attention"] = _mla(config, get)
        record["head_dim"] = record["attention"]["qk_nope_head_dim"] + config["qk_rope_head_dim"]
    elif "compress_ratios" in config:
        record["attention"] = _v4(config, get, record["num_layers"])
        record["head_dim"] = get("head_dim")
        record["residual_streams"] = get("hc_mult", default=1)
    else:
        record["attention"] = _gqa(config)
        default_head = hidden // heads if isinstance(hidden, int) and isinstance(heads, int) else 0
        record["head_dim"] = get("head_dim", default=default_head)
    if experts:
        dense = get("first_k_dense_replace", default=0)
        shared = get("n_shared_experts", default=0)
        width = get("moe_intermediate_size", "intermediate_size")
        record["moe"] = {
            "num_experts": experts,
            "experts_per_token": get("num_experts_per_tok", "experts_per_token"),
            "moe_intermediate_size": width,
            "num_shared_experts": shared,
            "first_k_dense_layers": dense,
        }
        if shared:
            record["moe"]["shared_expert_intermediate_size"] = width * shared
            record["moe"]["num_shared_experts"] = 1  # n shared experts act as one n-wide FFN
        # A MoE config's intermediate_size is the dense layers' width only if it has some.
        record["intermediate_size"] = get("intermediate_size") if dense else None
    else:
        record["intermediate_size"] = get("intermediate_size")
    method = (config.get("quantization_config") or {}).get("quant_method")
    if method in _QUANTISED_WEIGHTS:
        record["weight_dtype"] = record["expert_weight_dtype"] = _QUANTISED_WEIGHTS[method]
    if method in _QUANTISED_EXPERTS:
        record["expert_weight_dtype"] = _QUANTISED_EXPERTS[method]
    if config.get("expert_dtype") in DTYPE_BYTES:  # DeepSeek V4: FP4 experts
        record["expert_weight_dtype"] = config["expert_dtype"]
    return model_from_dict(record, source)


def _gqa(config: Mapping[str, Any]) -> dict[str, Any]:
    window = config.get("sliding_window")
    types = config.get("layer_types")
    if not window or config.get("use_sliding_window") is False:
        return {"kind": "gqa"}
    if isinstance(types, list) and types:
        sliding = [i for i, kind in enumerate(types) if kind == "sliding_attention"]
        if not sliding:
            return {"kind": "gqa"}
        if sliding == list(range(0, len(types), 2)):
            return {"kind": "gqa", "sliding_window": window, "sliding_layers": "even"}
        if sliding == list(range(1, len(types), 2)):
            return {"kind": "gqa", "sliding_window": window, "sliding_layers": "odd"}
    return {"kind": "gqa", "sliding_window": window, "sliding_layers": "all"}


def _mla(config: Mapping[str, Any], get: Any) -> dict[str, Any]:
    keys = ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")
    attention: dict[str, Any] = {"kind": "mla", **{key: get(key) for key in keys}}
    for key in ("index_n_heads", "index_head_dim", "index_topk"):
        if config.get(key):
            attention[key] = config[key]
    return attention


def _v4(config: Mapping[str, Any], get: Any, layers: Any) -> dict[str, Any]:
    ratios = get("compress_ratios")
    if isinstance(ratios, list) and isinstance(layers, int) and len(ratios) > layers:
        ratios = ratios[:layers]  # the trailing entries belong to the MTP layers
    keys = ("sliding_window", "q_lora_rank", "o_groups", "o_lora_rank")
    keys += ("index_n_heads", "index_head_dim", "index_topk")
    return {"kind": "v4", **{key: get(key) for key in keys}, "compress_ratios": ratios}
