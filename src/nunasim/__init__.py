"""nunasim: collective communication on pods of multi-die GPUs, and what NUNA costs.

The public API (docs/api.md)::

    import nunasim as ns

    preset = ns.load_preset("nextgen-4die")
    plan = ns.builtin_plan("allgather", gpus=8, tbs=56)
    row = ns.Scenario(preset, plan, "1MB", ns.Configuration.parse("NAP+NAR")).run().to_row()
    table = ns.sweep({"collective": "allgather", "gpus": 8, "size": "100kB",
                      "configuration": ["UA", "NAP+NAR"], "threadblocks": 56})

Each name is imported from its module on first use, so ``import nunasim`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Each public name and the module it lives in.
_EXPORTS = {
    "ENGINES": "nunasim.engine.base",
    "ConfigError": "nunasim.errors",
    "Engine": "nunasim.engine.base",
    "Job": "nunasim.engine.base",
    "Configuration": "nunasim.scenario",
    "NunasimError": "nunasim.errors",
    "Plan": "nunasim.collectives.plan",
    "Pod": "nunasim.hardware",
    "Preset": "nunasim.hardware",
    "Scenario": "nunasim.scenario",
    "SimResult": "nunasim.engine.result",
    "builtin_plan": "nunasim.collectives.builtins",
    "load_plan": "nunasim.io.plans",
    "load_preset": "nunasim.io.presets",
    "sweep": "nunasim.experiments.sweep",
}

__all__ = [
    "ENGINES",
    "ConfigError",
    "Configuration",
    "Engine",
    "Job",
    "NunasimError",
    "Plan",
    "Pod",
    "Preset",
    "Scenario",
    "SimResult",
    "__version__",
    "builtin_plan",
    "load_plan",
    "load_preset",
    "sweep",
]

if TYPE_CHECKING:
    from nunasim.collectives.builtins import builtin_plan
    from nunasim.collectives.plan import Plan
    from nunasim.engine.base import ENGINES, Engine, Job
    from nunasim.engine.result import SimResult
    from nunasim.errors import ConfigError, NunasimError
    from nunasim.experiments.sweep import sweep
    from nunasim.hardware import Pod, Preset
    from nunasim.io.plans import load_plan
    from nunasim.io.presets import load_preset
    from nunasim.scenario import Configuration, Scenario


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'nunasim' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
