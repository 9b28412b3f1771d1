"""Language models: the shipped ones by name, or a file (a record like the shipped ones, or a
Hugging Face ``config.json``)."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from nunasim.errors import ConfigError, quote
from nunasim.io.files import read_text
from nunasim.io.presets import load_yaml
from nunasim.llm.hf_config import model_from_hf_config
from nunasim.llm.model import Model, model_from_dict
from nunasim.llm.settings import TP_STYLES, InferenceSettings
from nunasim.units import parse_size
from nunasim.workload import DTYPE_BYTES

_SHIPPED = "models.json"


@cache
def _shipped_records() -> dict[str, Any]:
    text = resources.files("nunasim.llm").joinpath("models", _SHIPPED).read_text("utf-8")
    return {record["name"]: record for record in json.loads(text)}


def model_names() -> list[str]:
    """The shipped models' names, in the order of the paper's Fig. 15."""
    return list(_shipped_records())


def load_model(name_or_path: str | Path) -> Model:
    """A shipped model by name (``"llama-3.1-70b"``), or the model a JSON file describes: a
    record with the shipped models' keys, or a Hugging Face ``config.json`` (recognised by
    its ``num_hidden_layers``), named after the file's folder."""
    text = str(name_or_path)
    records = _shipped_records()
    if text in records:
        return model_from_dict(records[text], f"builtin:{text}")
    path = Path(text)
    if not path.is_file():
        raise ConfigError(f"no shipped model or file {quote(text)} (shipped: {', '.join(records)})")
    try:
        data = json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"not JSON: {exc}", source=str(path)) from None
    if isinstance(data, dict) and "num_hidden_layers" in data:
        name = path.parent.name if path.name == "config.json" else path.stem
        return model_from_hf_config(data, name or path.stem, str(path))
    return model_from_dict(data, str(path))


_SETTINGS_KEYS = (
    "activation_bytes",
    "kv_cache_bytes",
    "dispatch_bytes",
    "combine_bytes",
    "compute_dtype",
    "tp_style",
    "hbm_capacity",
)


def load_inference_settings(path: str | Path | None = None) -> InferenceSettings:
    """The inference model's assumptions: the shipped ``inference.yaml``, or a file like it."""
    if path is None:
        source = "builtin:inference.yaml"
        text = resources.files("nunasim.llm").joinpath("inference.yaml").read_text("utf-8")
    else:
        source, text = str(path), read_text(path)
    data = load_yaml(text, source)
    if not isinstance(data, dict):
        raise ConfigError("expected a mapping of settings", source=source)
    for key in data:
        if key not in _SETTINGS_KEYS:
            raise ConfigError(
                f"unknown key (known: {', '.join(_SETTINGS_KEYS)})", source=source, where=str(key)
            )
    for key in _SETTINGS_KEYS:
        if key not in data:
            raise ConfigError("missing", source=source, where=key)
    numbers = {}
    for key in ("activation_bytes", "kv_cache_bytes", "dispatch_bytes", "combine_bytes"):
        value = data[key]
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise ConfigError(
                f"expected a positive number, got {quote(value)}", source=source, where=key
            )
        numbers[key] = float(value)
    if data["tp_style"] not in TP_STYLES:
        raise ConfigError(
            f"one of {', '.join(TP_STYLES)}, not {quote(data['tp_style'])}",
            source=source,
            where="tp_style",
        )
    if data["compute_dtype"] not in DTYPE_BYTES:
        raise ConfigError(
            f"unknown data type {quote(data['compute_dtype'])}",
            source=source,
            where="compute_dtype",
        )
    try:
        capacity = parse_size(data["hbm_capacity"])
    except ConfigError as exc:
        raise exc.located(source, "hbm_capacity") from None
    if capacity <= 0:
        raise ConfigError("must be positive", source=source, where="hbm_capacity")
    return InferenceSettings(
        compute_dtype=data["compute_dtype"],
        tp_style=data["tp_style"],
        hbm_capacity_bytes=capacity,
        **numbers,
    )
