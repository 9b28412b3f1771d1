"""A scenario: hardware, plan, configuration, size and seed; ``run()`` gives a SimResult.

This is the one place where a concrete placement policy meets the engine, and so the one
place every command that places or simulates a plan goes through: it proves the plan
first (``prove_once``: once per plan object) and refuses one that fails with the
checker's located message, before anything is placed, run or written.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

from nunasim.collectives.builder import collector_paused
from nunasim.collectives.check import prove_once
from nunasim.collectives.plan import Plan
from nunasim.engine.base import AUTO, ENGINES, Engine, Job, PreparedRun
from nunasim.engine.result import RunInfo, SimResult
from nunasim.errors import ConfigError, quote
from nunasim.hardware import Pod, Preset
from nunasim.mapping.placement import Placement
from nunasim.policies.background import place_gemm
from nunasim.policies.configurations import (
    CONFIGURATIONS,
    NAR,
    PLACEMENT_POLICIES,
    configuration,
    uses_domains,
)
from nunasim.policies.place import place
from nunasim.units import as_whole, parse_size
from nunasim.workload import DTYPE_BYTES, GemmTile


@dataclass(frozen=True)
class Configuration:
    """One of the paper's eight configurations (UA, UA+NAR, NUMA, NUMA+NAR, NAP, NAP+NAR,
    NAP*, NAP*+NAR), checked when built.

    ``placement`` is where threadblocks and pages go (``UA``, ``NUMA``, ``NAP`` or ``NAP*``),
    ``nar`` whether stores route over their NAR domain's ports, and ``granularity`` the
    number of NAR domains the ports split into, or ``"auto"``: the placement policy picks
    one of the socket's (it is checked against the socket when placed).
    """

    placement: str = "UA"
    nar: bool = False
    granularity: int | str = "auto"

    def __post_init__(self) -> None:
        placements = list(PLACEMENT_POLICIES)
        if self.placement not in placements:
            raise ConfigError(
                f"unknown placement {self.placement!r} (known: {', '.join(placements)}; "
                "Configuration.parse takes a whole name such as 'NAP+NAR')"
            )
        if self.granularity != "auto" and not (
            isinstance(self.granularity, int)
            and not isinstance(self.granularity, bool)
            and self.granularity >= 1
        ):
            raise ConfigError(
                f"a NAR granularity is a number of domains or 'auto', not {self.granularity!r}"
            )
        if self.granularity not in ("auto", 1) and not self.uses_domains:
            raise ConfigError(
                f"{self.name} neither routes over NAR domains nor places by them, so a "
                f"granularity of {self.granularity} does not apply (use 'auto' or 1)"
            )

    @classmethod
    def parse(cls, name: str, granularity: int | str = "auto") -> Configuration:
        """The configuration called ``name`` (``"NAP+NAR"``); an unknown name is a
        ConfigError listing the eight."""
        configuration(name)  # refuses an unknown name, listing the known ones
        return cls(name.removesuffix(NAR), name.endswith(NAR), granularity)

    @classmethod
    def all(cls, granularity: int | str = "auto") -> tuple[Configuration, ...]:
        """Every configuration of the registered placement policies, the paper's eight
        first, in its order."""
        return tuple(cls.parse(name, granularity) for name in CONFIGURATIONS)

    @property
    def name(self) -> str:
        """The paper's name: ``placement``, with ``+NAR`` when it routes over domains."""
        return self.placement + (NAR if self.nar else "")

    @property
    def uses_domains(self) -> bool:
        """Whether its granularity changes anything (NAR routing or NAP's domains)."""
        return uses_domains(configuration(self.name))

    def describe_domains(self, granularity: int) -> str:
        """What ``granularity`` domains mean under this configuration, for a report."""
        if self.nar:
            return f"{granularity} NAR domains"
        if self.uses_domains:
            return f"{granularity} placement domains, baseline routing"
        return "baseline routing"

    def __str__(self) -> str:
        return self.name


def as_configuration(
    config: Configuration | str, granularity: int | str | None = None
) -> Configuration:
    """``config`` as a Configuration; ``granularity``, when given, replaces its own."""
    if isinstance(config, str):
        config = Configuration.parse(config)
    elif not isinstance(config, Configuration):
        raise ConfigError(
            f"a configuration is a Configuration or a name such as 'NAP+NAR', not {quote(config)}"
        )
    if granularity is not None and granularity != "auto":
        granularity = whole_number("granularity", granularity, at_least=1)
    return config if granularity is None else replace(config, granularity=granularity)


def whole_number(what: str, value: object, at_least: int | None = 0) -> int:
    """``value`` as an int (a NumPy integer too), or the ConfigError the command line's
    option of that name gives."""
    number = as_whole(value)
    if number is None:
        raise ConfigError(f"invalid value for {what}: {quote(value)} is not a valid integer")
    if at_least is not None and number < at_least:
        raise ConfigError(f"invalid value for {what}: {number} is not in the range x>={at_least}")
    return number


def check_background(gemm_tiles: int, gemm_tile: GemmTile | None) -> int:
    """Refuse a background GEMM of a negative number of tiles, or of tiles without a shape;
    the number of tiles, as an int."""
    gemm_tiles = whole_number("gemm_tiles", gemm_tiles, at_least=None)
    if gemm_tiles < 0:
        raise ConfigError(f"background GEMM tiles must not be negative; got {gemm_tiles}")
    if gemm_tiles and gemm_tile is None:
        raise ConfigError("a background GEMM needs a tile shape")
    return gemm_tiles


@dataclass(frozen=True, init=False)
class Scenario:
    """One run: a plan on a pod at a collective size under a configuration.

    ``pod`` may be a Preset, whose pod grows to the plan's GPUs (``Preset.fit``), or a Pod,
    used as given. ``size`` is bytes or a string such as ``"1MB"``. ``configuration`` is a
    Configuration or its name; ``granularity``, when given, replaces the configuration's.
    ``gemm_tiles`` background GEMM tiles per GPU of shape ``gemm_tile`` share the NoC and
    the stacks (the paper's section 6.6). ``layout`` puts chunks in pages: ``"aligned"`` or
    ``"packed"``. ``engine`` is the name of a registered engine (``nunasim.engine.base.
    ENGINES``: ``"packet"``, ``"flow"``, ...) or ``"auto"``, the registry's rule: the packet
    engine for a run within its message limit or with a background GEMM, the flow engine
    beyond.
    """

    pod: Pod
    plan: Plan
    size: int  # collective size in bytes
    configuration: Configuration
    seed: int
    dtype: str
    grouping: str
    layout: str
    gemm_tiles: int
    gemm_tile: GemmTile | None
    engine: str

    def __init__(
        self,
        pod: Pod | Preset,
        plan: Plan,
        size: int | str,
        configuration: Configuration | str = "UA",
        granularity: int | str | None = None,
        seed: int = 0,
        dtype: str = "bf16",
        grouping: str = "all",
        layout: str = "aligned",
        gemm_tiles: int = 0,
        gemm_tile: GemmTile | None = None,
        engine: str = AUTO,
    ) -> None:
        # The command line's checks, for a caller in Python: every argument of its type.
        if not isinstance(pod, Pod | Preset):
            raise ConfigError(f"pod is a Preset or a Pod (load_preset gives one), not {quote(pod)}")
        if not isinstance(plan, Plan):
            raise ConfigError(
                f"plan is a Plan (builtin_plan or load_plan gives one), not {quote(plan)}"
            )
        if not isinstance(dtype, str) or dtype not in DTYPE_BYTES:
            known = ", ".join(DTYPE_BYTES)
            raise ConfigError(f"unknown data type {quote(dtype)} (known: {known})")
        gemm_tiles = check_background(gemm_tiles, gemm_tile)
        ENGINES.check(engine, background=gemm_tiles > 0)
        # Frozen: the fields are set once, here, already in their one form.
        fields = {
            "pod": pod.fit(plan.ngpus).pod if isinstance(pod, Preset) else pod,
            "plan": plan,
            "size": parse_size(size),
            "configuration": as_configuration(configuration, granularity),
            "seed": whole_number("seed", seed),
            "dtype": dtype,
            "grouping": grouping,
            "layout": layout,
            "gemm_tiles": gemm_tiles,
            "gemm_tile": gemm_tile,
            "engine": engine,
        }
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def placement(self) -> Placement:
        """Where the plan's threadblocks and pages go (proves the plan first)."""
        with collector_paused():  # see ``prepare``
            return self._placement()

    def _placement(self) -> Placement:
        prove_once(self.plan)
        if self.pod.sockets < self.plan.ngpus:
            raise ConfigError(
                f"the plan needs {self.plan.ngpus} GPUs but the pod has {self.pod.sockets}"
            )
        socket = self.pod.socket
        self.engine_model.admit(self.plan, self.plan.chunk_bytes(self.size), socket)
        return place(
            self.plan,
            self.size,
            self.pod,
            self.configuration.name,
            self.configuration.granularity,
            self.seed,
            self.grouping,
            self.layout,
        )

    @cached_property
    def engine_model(self) -> Engine:
        """The engine ``run`` uses: ``engine``, or the one the registry's ``auto`` rule
        picks by the run's message count (``EngineRegistry.choose``)."""
        return ENGINES.choose(
            self.engine,
            self.plan,
            self.plan.chunk_bytes(self.size),
            self.pod.socket.line_bytes,
            background=self.gemm_tiles > 0,
        )

    @property
    def chosen_engine(self) -> str:
        """The name of the engine ``run`` uses (``engine_model``)."""
        return self.engine_model.name

    def run(self, placement: Placement | None = None) -> SimResult:
        """Simulate the scenario (at ``placement``, or its own) on its engine
        (``chosen_engine``)."""
        result = self.prepare(placement).run()
        assert result is not None  # only a deadline stops a run short
        return result

    def prepare(self, placement: Placement | None = None) -> PreparedRun:
        """The scenario ready to run, with its lower bound known: a search compares the
        bound with its best run so far and skips a run that cannot beat it.

        Proving, placing and lowering run with Python's cyclic collector paused: they make
        objects by the million that are their results or garbage without cycles, and the
        full collections they would set off walk every plan the process keeps (a 64-GPU
        plan is some 250,000 objects): placing a 64-GPU All-to-All at five threadblock counts
        from nothing took 12.9 s with it on, 9.2 s paused here (docs/engine-measured.md,
        "The collector and a plan's work")."""
        with collector_paused():
            return self._prepare(placement)

    def _prepare(self, placement: Placement | None) -> PreparedRun:
        prove_once(self.plan)
        placement = placement or self.placement()
        background = None
        if self.gemm_tiles and self.gemm_tile is not None:
            background = place_gemm(
                placement.address_map, self.plan.ngpus, self.gemm_tiles, self.gemm_tile, self.seed
            )
        job = Job(self.pod, self.plan, placement, self.dtype, background, self._info(placement))
        return self.engine_model.prepare(job)

    def _info(self, placement: Placement) -> RunInfo:
        return RunInfo(
            plan=self.plan.name,
            collective=str(self.plan.collective),
            gpus=self.plan.ngpus,
            threadblocks=max(self.plan.threadblocks_per_gpu),
            size_bytes=self.size,
            configuration=self.configuration.name,
            granularity=placement.granularity,
            seed=self.seed,
        )
