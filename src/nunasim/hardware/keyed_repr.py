"""Reprs that keep result-cache keys stable as the hardware model grows."""

from __future__ import annotations

from dataclasses import fields


def repr_without(obj: object, neutral: dict[str, object]) -> str:
    """The dataclass repr of ``obj`` without the fields that hold their ``neutral`` value.

    Result caches key on a pod's repr: a field added to the model with a neutral default
    (one that changes nothing) must leave every existing preset's key as it was."""
    shown = [
        f"{f.name}={getattr(obj, f.name)!r}"
        for f in fields(obj)  # type: ignore[arg-type]
        if f.repr and not (f.name in neutral and getattr(obj, f.name) == neutral[f.name])
    ]
    return f"{type(obj).__name__}({', '.join(shown)})"
