"""What an engine is, and the registry the scenario layer finds engines in.

An engine turns a ``Job`` (a plan placed on a pod) into a ``SimResult``. It says who it is
(``name``), which revision of its model it runs (``revision``: bumped whenever its results
change, so cached results of an earlier model are recomputed), whether it models a
background GEMM beside the collective, what it refuses before anything is allocated
(``admit``), how many messages a run makes (``messages``, which the ``auto`` rule reads),
and ``prepare``: the job ready to run, with a lower bound known before the run is paid for.

``ENGINES`` lists the engines by name, in order of fidelity: ``auto`` takes the first whose
``auto_messages`` admits the run's message count (with a background GEMM, the first that
models one). The
built-in engines are entered by where they live and imported when first asked for (the
flow engine's compiled modules cost a run address space it may not have), and any other
engine joins with ``ENGINES.register``: one package and one line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from nunasim.errors import ConfigError, quote
from nunasim.units import as_whole

if TYPE_CHECKING:
    from nunasim.collectives.plan import Plan
    from nunasim.engine.result import RunInfo, SimResult
    from nunasim.hardware import Pod, Socket
    from nunasim.mapping.placement import BackgroundLoad, Placement

AUTO = "auto"  # not an engine: the rule that picks one of them for each run


@dataclass(frozen=True, eq=False)
class Job:
    """What an engine runs: ``plan`` placed by ``placement`` on ``pod``, with ``background``
    work (a GEMM's loads) beside it, described for the result tables by ``info``."""

    pod: Pod
    plan: Plan
    placement: Placement
    dtype: str = "bf16"
    background: BackgroundLoad | None = None
    info: RunInfo | None = None

    @property
    def chunk_bytes(self) -> int:
        """Bytes of one chunk of the plan at the placement's collective size."""
        return self.placement.chunk_bytes


@dataclass(frozen=True)
class PreparedRun:
    """A job placed and lowered (or its flows' demands worked out), not yet run."""

    lower_bound_ps: int  # no run of it completes sooner
    _run: Callable[[int | None], SimResult | None]
    # No run completes sooner either: the lower bound, or a tighter one this engine's
    # model alone guarantees (not reported); a search skips a run that cannot win by it.
    skip_bound_ps: int = -1
    # A cheaper, approximate run, if the engine has one (its ``screens`` is then True):
    # given a deadline, an estimate of the completion that the engine's measured error
    # keeps at or below it (the approximate time less its error margin), or None once the
    # approximate run shows it would end after the deadline. Not a bound: a search that
    # trusts it skips the full run of a job it judges lost.
    screen: Callable[[int], int | None] | None = None

    def __post_init__(self) -> None:
        if self.skip_bound_ps < self.lower_bound_ps:
            object.__setattr__(self, "skip_bound_ps", self.lower_bound_ps)

    def run(self, deadline_ps: int | None = None) -> SimResult | None:
        """The run's result; with ``deadline_ps``, None instead once the run is found to
        complete after that time (it stops there: a search's losing runs cost less)."""
        if deadline_ps is not None:
            # The engines take -1 for "no deadline": a caller's -1 must not mean that.
            whole = as_whole(deadline_ps)
            if whole is None:
                raise ConfigError(f"a deadline is picoseconds or None, not {quote(deadline_ps)}")
            deadline_ps = whole
            if deadline_ps < 0:
                raise ConfigError(f"a deadline must not be negative; got {deadline_ps} ps")
        return self._run(deadline_ps)


@runtime_checkable
class Engine(Protocol):
    """The interface every engine gives (``nunasim.engine.packet.backend`` is one)."""

    name: str
    revision: int  # of its model; 0: as of the shared model (``nunasim.engine.MODEL_REVISION``)
    background: bool  # whether it models a background GEMM beside the collective
    # ``auto`` picks it for a run of at most this many messages; None: never.
    auto_messages: int | None

    def admit(self, plan: Plan, chunk_bytes: int, socket: Socket) -> None:
        """Refuse (ConfigError, with what would fit) a run this engine cannot hold."""
        ...

    def messages(self, plan: Plan, chunk_bytes: int, line_bytes: int) -> int:
        """The messages a run makes: exact up to ``auto_messages``; beyond it, a count
        already past it (the rest need not be counted to decide)."""
        ...

    def prepare(self, job: Job) -> PreparedRun:
        """``job`` ready to run, its lower bound known."""
        ...


class EngineRegistry:
    """Engines by name, in order of fidelity. Built-in ones are entered as
    ``"module:attribute"`` and imported when first looked up."""

    def __init__(self, builtin: dict[str, str]) -> None:
        self._entries: dict[str, Engine | str] = dict(builtin)

    def register(self, engine: Engine, *, before: str | None = None) -> None:
        """Add ``engine`` (last, or just before the engine named ``before``): a name taken
        or the name ``auto`` is a ConfigError."""
        if not isinstance(engine, Engine):
            raise ConfigError(f"{engine!r} does not have the Engine interface")
        if engine.name == AUTO or engine.name in self._entries:
            raise ConfigError(f"an engine named {engine.name!r} is already registered")
        entries = list(self._entries.items())
        at = len(entries) if before is None else self.names().index(before)
        entries.insert(at, (engine.name, engine))
        self._entries = dict(entries)

    def unregister(self, name: str) -> None:
        """Remove the engine called ``name``."""
        self[name]  # refuses an unknown name
        del self._entries[name]

    def names(self) -> tuple[str, ...]:
        """The engines' names, in order of fidelity."""
        return tuple(self._entries)

    def choices(self) -> tuple[str, ...]:
        """What a user may ask for: ``auto`` or an engine's name."""
        return (AUTO, *self._entries)

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __getitem__(self, name: str) -> Engine:
        entry = self._entries.get(name)
        if entry is None:
            raise ConfigError(f"unknown engine {name!r} (known: {', '.join(self.choices())})")
        if isinstance(entry, str):
            module, attribute = entry.split(":")
            entry = getattr(import_module(module), attribute)
            self._entries[name] = entry
        return entry

    def check(self, requested: str, background: bool) -> None:
        """Refuse an unknown engine, or one that does not model a background GEMM the run
        has."""
        if requested == AUTO:
            return
        engine = self[requested]
        if background and not engine.background:
            raise ConfigError(
                f"the {requested} engine does not model a background GEMM: use one that does "
                f"({', '.join(n for n in self if self[n].background)})"
            )

    def choose(
        self, requested: str, plan: Plan, chunk_bytes: int, line_bytes: int, background: bool
    ) -> Engine:
        """The engine a run takes: ``requested``, or for ``auto`` the first engine that
        admits the run's messages by its ``auto_messages`` (with a background GEMM: the
        first that models one; beyond every limit, the one with the largest). The run's
        counts alone decide, never this machine's memory: the same scenario takes the same
        engine everywhere."""
        self.check(requested, background)
        if requested != AUTO:
            return self[requested]
        eligible = [
            self[name]
            for name in self
            if self[name].auto_messages is not None and (self[name].background or not background)
        ]
        if not eligible:
            raise ConfigError("no registered engine takes part in 'auto': name one")
        for engine in eligible:
            # A background GEMM is the packet-level question of section 6.6: the first
            # engine that models it takes the run at any size (or refuses it when admitted).
            if background or engine.messages(plan, chunk_bytes, line_bytes) <= (
                engine.auto_messages or 0
            ):
                return engine
        # Beyond every limit: the engine of the largest one, whose admission then refuses
        # the run with what would fit.
        return max(eligible, key=lambda engine: engine.auto_messages or 0)


ENGINES = EngineRegistry(
    {
        "packet": "nunasim.engine.packet.backend:PACKET",
        "flow": "nunasim.engine.flow.backend:FLOW",
        "analytic": "nunasim.engine.analytic.backend:ANALYTIC",
    }
)
