"""How a model is cut over a pod: tensor (``tp``), attention-data (``dp``) and pipeline
(``pp``) parallelism, with the experts of a MoE layer spread over each stage's ``tp * dp``
GPUs (expert parallelism ``ep``)."""

from __future__ import annotations

from dataclasses import dataclass

from nunasim.errors import ConfigError
from nunasim.llm.model import Model


@dataclass(frozen=True)
class Parallelism:
    """``tp`` GPUs share every attention and dense-FFN matrix; ``dp`` such groups serve
    their own sequences side by side; ``pp`` stages each hold a contiguous run of layers. A
    stage's ``tp * dp`` GPUs form the expert-parallel group of its MoE layers."""

    tp: int
    dp: int
    pp: int

    @property
    def gpus(self) -> int:
        return self.tp * self.dp * self.pp

    @property
    def ep(self) -> int:
        """GPUs of one stage: the MoE layers' expert-parallel group."""
        return self.tp * self.dp

    def __str__(self) -> str:
        return f"TP{self.tp} DP{self.dp} PP{self.pp} EP{self.ep}"


def check_parallelism(model: Model, par: Parallelism) -> None:
    """Refuse a cut the model does not allow, naming the constraint."""
    for name in ("tp", "dp", "pp"):
        if getattr(par, name) < 1:
            raise ConfigError(f"{name} must be at least 1", where=name)
    if model.num_attention_heads % par.tp:
        raise ConfigError(
            f"tp {par.tp} does not divide {model.num_attention_heads} attention heads", where="tp"
        )
    if model.attention.kind == "v4" and model.attention.o_groups % par.tp:
        raise ConfigError(
            f"tp {par.tp} does not divide V4's {model.attention.o_groups} output groups",
            where="tp",
        )
    if par.pp > model.num_layers:
        raise ConfigError(f"pp {par.pp} exceeds {model.num_layers} layers", where="pp")
    if model.moe is not None:
        experts = model.moe.num_experts
        if experts % par.ep and par.ep % experts:
            raise ConfigError(
                f"a stage of {par.ep} GPUs cannot split {experts} experts evenly", where="ep"
            )


def parallelisms(model: Model, gpus: int) -> list[Parallelism]:
    """Every cut of ``gpus`` GPUs the model allows, in (tp, pp) order."""
    found = []
    for tp in _divisors(gpus):
        for pp in _divisors(gpus // tp):
            par = Parallelism(tp=tp, dp=gpus // (tp * pp), pp=pp)
            try:
                check_parallelism(model, par)
            except ConfigError:
                continue
            found.append(par)
    return found


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]
