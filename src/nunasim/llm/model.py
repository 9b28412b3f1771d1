"""A language model's shape, as the inference model needs it, checked when built."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nunasim.errors import ConfigError, quote
from nunasim.workload import DTYPE_BYTES

ATTENTION_KINDS = ("gqa", "mla", "v4")

# The keys each attention kind takes: GQA/MHA needs none beyond the model's heads, MLA
# (DeepSeek V3.2) its low ranks and sparse indexer, V4 its grouped output and per-layer
# KV compression ratios.
_ATTENTION_KEYS: dict[str, dict[str, bool]] = {
    "gqa": {"sliding_window": False, "sliding_layers": False},
    "mla": {
        "q_lora_rank": True,
        "kv_lora_rank": True,
        "qk_nope_head_dim": True,
        "qk_rope_head_dim": True,
        "v_head_dim": True,
        "index_n_heads": False,
        "index_head_dim": False,
        "index_topk": False,
    },
    "v4": {
        "sliding_window": True,
        "q_lora_rank": True,
        "o_groups": True,
        "o_lora_rank": True,
        "index_n_heads": True,
        "index_head_dim": True,
        "index_topk": True,
        "compress_ratios": True,
    },
}
SLIDING_LAYERS = ("all", "even", "odd")

_MOE_KEYS = {
    "num_experts": True,
    "experts_per_token": True,
    "moe_intermediate_size": True,
    "num_shared_experts": False,
    "shared_expert_intermediate_size": False,
    "first_k_dense_layers": False,
}

_MODEL_KEYS = {
    "name": True,
    "hidden_size": True,
    "num_layers": True,
    "num_attention_heads": True,
    "num_key_value_heads": True,
    "head_dim": True,
    "attention": True,
    "intermediate_size": False,
    "vocab_size": True,
    "moe": False,
    "residual_streams": False,
    "weight_dtype": False,
    "expert_weight_dtype": False,
    "display_name": False,
    "hf_id": False,
    "params_total_b": False,
    "params_active_b": False,
    "source": False,
}


@dataclass(frozen=True)
class Attention:
    """How a layer attends: ``kind`` is ``gqa`` (MHA/GQA/MQA), ``mla`` or ``v4``.

    ``sliding_window`` limits the keys a query sees (on the layers ``sliding_layers`` names,
    for GQA; on every layer's window branch, for V4). ``index_topk`` is the sparse
    attention's selection (MLA's DSA, V4's CSA layers); ``compress_ratios`` gives V4's KV
    compression per layer (0: window only, 4: CSA, 128: HCA)."""

    kind: str
    sliding_window: int | None = None
    sliding_layers: str = "all"
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    index_n_heads: int = 0
    index_head_dim: int = 0
    index_topk: int | None = None
    o_groups: int = 0
    o_lora_rank: int = 0
    compress_ratios: tuple[int, ...] = ()


@dataclass(frozen=True)
class Moe:
    """Routed experts (each ``moe_intermediate_size`` wide, ``experts_per_token`` per token),
    shared experts beside them, and the dense layers before the first MoE layer."""

    num_experts: int
    experts_per_token: int
    moe_intermediate_size: int
    num_shared_experts: int = 0
    shared_expert_intermediate_size: int = 0
    first_k_dense_layers: int = 0


@dataclass(frozen=True)
class Model:
    """One model's shape. ``intermediate_size`` is the dense FFN width (``None``: every layer
    is MoE); ``residual_streams`` is the width of the residual stream in hidden vectors
    (DeepSeek V4's hyper-connections keep 4), which sizes pipeline messages."""

    name: str
    hidden_size: int
    num_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    attention: Attention
    vocab_size: int
    intermediate_size: int | None = None
    moe: Moe | None = None
    residual_streams: int = 1
    weight_dtype: str = "bf16"
    expert_weight_dtype: str = "bf16"
    display_name: str = ""
    source: str = ""

    def is_moe_layer(self, layer: int) -> bool:
        return self.moe is not None and layer >= self.moe.first_k_dense_layers

    @property
    def moe_layers(self) -> int:
        return 0 if self.moe is None else self.num_layers - self.moe.first_k_dense_layers


def model_from_dict(data: Any, source: str = "") -> Model:
    """A ``Model`` from a record of the shipped models file (or one like it); an unknown,
    missing or non-positive value is refused with its key."""
    record = _mapping(data, "", source)
    _check_keys(record, _MODEL_KEYS, "", source)
    attention = _attention(record["attention"], source)
    moe = None if record.get("moe") is None else _moe(record["moe"], source)
    ints = {
        key: _positive(record, key, "", source)
        for key in (
            "hidden_size",
            "num_layers",
            "num_attention_heads",
            "num_key_value_heads",
            "head_dim",
            "vocab_size",
        )
    }
    intermediate = record.get("intermediate_size")
    if intermediate is not None:
        intermediate = _positive(record, "intermediate_size", "", source)
    if intermediate is None and (moe is None or moe.first_k_dense_layers):
        raise ConfigError(
            "a model with dense layers needs intermediate_size", source=source, where="moe"
        )
    if ints["num_attention_heads"] % ints["num_key_value_heads"]:
        raise ConfigError(
            "num_attention_heads must be a multiple of num_key_value_heads",
            source=source,
            where="num_key_value_heads",
        )
    if moe is not None and moe.first_k_dense_layers >= ints["num_layers"]:
        raise ConfigError(
            "first_k_dense_layers leaves no MoE layer",
            source=source,
            where="moe.first_k_dense_layers",
        )
    ratios = attention.compress_ratios
    if attention.kind == "v4" and len(ratios) != ints["num_layers"]:
        raise ConfigError(
            f"{len(ratios)} compress ratios for {ints['num_layers']} layers",
            source=source,
            where="attention.compress_ratios",
        )
    dtypes = {}
    for key in ("weight_dtype", "expert_weight_dtype"):
        value = record.get(key, "bf16")
        if value not in DTYPE_BYTES:
            raise ConfigError(
                f"unknown data type {quote(value)} (known: {', '.join(DTYPE_BYTES)})",
                source=source,
                where=key,
            )
        dtypes[key] = value
    name = record["name"]
    if not isinstance(name, str) or not name:
        raise ConfigError("a model needs a name", source=source, where="name")
    return Model(
        name=name,
        attention=attention,
        intermediate_size=intermediate,
        moe=moe,
        residual_streams=(
            _positive(record, "residual_streams", "", source) if "residual_streams" in record else 1
        ),
        display_name=str(record.get("display_name") or name),
        source=str(record.get("source") or source),
        **ints,
        **dtypes,
    )


def _attention(data: Any, source: str) -> Attention:
    record = _mapping(data, "attention", source)
    kind = record.get("kind")
    if kind not in _ATTENTION_KEYS:
        raise ConfigError(
            f"unknown attention kind {quote(kind)} (known: {', '.join(ATTENTION_KINDS)})",
            source=source,
            where="attention.kind",
        )
    _check_keys(record, {"kind": True, **_ATTENTION_KEYS[kind]}, "attention", source)
    values: dict[str, Any] = {"kind": kind}
    for key in _ATTENTION_KEYS[kind]:
        if key not in record or record[key] is None:
            continue
        if key == "sliding_layers":
            if record[key] not in SLIDING_LAYERS:
                known = ", ".join(SLIDING_LAYERS)
                raise ConfigError(
                    f"sliding_layers is one of {known}, not {quote(record[key])}",
                    source=source,
                    where="attention.sliding_layers",
                )
            values[key] = record[key]
        elif key == "compress_ratios":
            ratios = record[key]
            if not isinstance(ratios, list) or any(
                not isinstance(r, int) or isinstance(r, bool) or r < 0 for r in ratios
            ):
                raise ConfigError(
                    "compress_ratios is a list of whole numbers >= 0 (0: no compression)",
                    source=source,
                    where="attention.compress_ratios",
                )
            values[key] = tuple(ratios)
        else:
            values[key] = _positive(record, key, "attention", source)
    return Attention(**values)


def _moe(data: Any, source: str) -> Moe:
    record = _mapping(data, "moe", source)
    _check_keys(record, _MOE_KEYS, "moe", source)
    values = {}
    for key in _MOE_KEYS:
        if record.get(key) is None:
            continue
        optional_zero = key in ("num_shared_experts", "first_k_dense_layers")
        values[key] = _positive(record, key, "moe", source, allow_zero=optional_zero)
    if values["experts_per_token"] > values["num_experts"]:
        raise ConfigError(
            "experts_per_token exceeds num_experts", source=source, where="moe.experts_per_token"
        )
    if values.get("num_shared_experts") and "shared_expert_intermediate_size" not in values:
        raise ConfigError(
            "shared experts need shared_expert_intermediate_size",
            source=source,
            where="moe.shared_expert_intermediate_size",
        )
    return Moe(**values)


def _mapping(data: Any, where: str, source: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise ConfigError(f"expected a mapping, got {quote(data)}", source=source, where=where)
    return data


def _check_keys(record: Mapping[str, Any], keys: dict[str, bool], where: str, source: str) -> None:
    prefix = f"{where}." if where else ""
    for key in record:
        if key not in keys:
            known = ", ".join(keys)
            raise ConfigError(
                f"unknown key (known: {known})", source=source, where=prefix + str(key)
            )
    for key, required in keys.items():
        if required and record.get(key) is None:
            raise ConfigError("missing", source=source, where=prefix + key)


def _positive(
    record: Mapping[str, Any], key: str, where: str, source: str, allow_zero: bool = False
) -> int:
    value = record.get(key)
    low = 0 if allow_zero else 1
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        what = "a whole number >= 0" if allow_zero else "a positive whole number"
        place = f"{where}.{key}" if where else key
        raise ConfigError(f"expected {what}, got {quote(value)}", source=source, where=place)
    return value
