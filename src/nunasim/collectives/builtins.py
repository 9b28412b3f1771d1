"""Built-in plans by name:
``COLLECTIVE[:ALGORITHM][:gpus=G][:tbs=T][:chunks=C][:inplace=0|1][:proto=P]``.

For example ``allgather:direct:gpus=8:tbs=56`` or ``allgather:direct:gpus=8:proto=LL``;
without an algorithm the collective's direct one (``allgather:gpus=8``). Parameters may also
be given as keywords (``builtin_plan("allgather", gpus=8)``). Every parameter but ``gpus``
has a default:

- ``proto``: the protocol of every transfer (``Simple``, ``LL``, ``LL128`` or ``packet``;
  see ``nunasim.collectives.plan.Protocol``), ``Simple`` by default;

- direct algorithms: ``tbs = gpus - 1`` (one threadblock per peer, the paper's
  low-parallelism point) and ``chunks`` (per peer block) just enough to give every
  threadblock work, ``ceil(tbs / (gpus - 1))``. One per peer is the best-performing count
  for 100 kB collectives on ``nextgen-4die`` under UA; at 1 MB two or four per peer do
  better, and NAP+NAR often prefers four or eight. The experiments
  therefore sweep the count per configuration, as the paper does;
- ``allreduce:onepass``: ``tbs = gpus - 1``, ``chunks = gpus`` (chunks of the whole buffer);
- ring algorithms: ``tbs = 1`` channel and ``chunks = tbs``.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace

from nunasim.collectives import direct, ring
from nunasim.collectives.builder import collector_paused
from nunasim.collectives.limits import MAX_CHUNKS, MAX_GPUS, MAX_POD_THREADBLOCKS
from nunasim.collectives.plan import Plan, Protocol
from nunasim.collectives.plan_admission import admit_builtin
from nunasim.errors import ConfigError
from nunasim.units import as_whole


@dataclass(frozen=True)
class Algorithm:
    build: Callable[..., Plan]
    default_tbs: Callable[[int], int]
    default_chunks: Callable[[int, int], int]
    extra: tuple[str, ...] = ()
    summary: str = ""
    rounds: int = 1  # all-pairs or ring rounds, for the size estimate before building


def _per_peer(gpus: int, tbs: int) -> int:
    return max(1, math.ceil(tbs / (gpus - 1)))


ALGORITHMS: dict[str, Algorithm] = {
    "allgather:direct": Algorithm(
        direct.allgather,
        lambda g: g - 1,
        _per_peer,
        ("inplace",),
        "every GPU stores its block into every peer (all-pairs)",
    ),
    "reducescatter:direct": Algorithm(
        direct.reducescatter,
        lambda g: g - 1,
        _per_peer,
        (),
        "block p to peer p's scratch, reduced on arrival",
    ),
    "allreduce:direct": Algorithm(
        direct.allreduce,
        lambda g: g - 1,
        _per_peer,
        (),
        "direct reduce-scatter, then direct all-gather",
        rounds=2,
    ),
    "allreduce:onepass": Algorithm(
        direct.allreduce_onepass,
        lambda g: g - 1,
        lambda g, t: g,
        (),
        "whole buffer to every peer's scratch, reduced locally",
    ),
    "alltoall:direct": Algorithm(
        direct.alltoall, lambda g: g - 1, _per_peer, (), "block p straight into peer p's output"
    ),
    "allgather:ring": Algorithm(
        ring.allgather, lambda g: 1, lambda g, t: t, (), "ring, one channel per threadblock"
    ),
    "allreduce:ring": Algorithm(
        ring.allreduce,
        lambda g: 1,
        lambda g, t: t,
        (),
        "ring reduce-scatter then ring all-gather",
        rounds=2,
    ),
}


# The collectives with a built-in algorithm, each named on its own in ALGORITHMS' order.
COLLECTIVES = tuple(dict.fromkeys(key.split(":")[0] for key in ALGORITHMS))

# The algorithm a name without one means: every collective has a direct algorithm, and it
# is the one the paper evaluates.
DEFAULT_ALGORITHM = "direct"


def _split(name: str) -> tuple[str, list[str]]:
    """``COLLECTIVE:ALGORITHM`` and the ``key=value`` parameters of a built-in's name."""
    parts = name.split(":")
    if len(parts) > 1 and "=" not in parts[1]:
        return ":".join(parts[:2]), parts[2:]
    return f"{parts[0]}:{DEFAULT_ALGORITHM}", parts[1:]


def builtin_parts(name: str) -> tuple[str, str, Protocol]:
    """The collective, algorithm and protocol a built-in's name says (``"allreduce:ring"``:
    allreduce, ring, Simple; ``"allgather:proto=LL"``: allgather, direct, LL)."""
    key, parts = _split(name)
    if key not in ALGORITHMS:
        known = ", ".join(ALGORITHMS)
        raise ConfigError(f"unknown built-in plan {key!r} (known: {known})", source=name)
    protocol = Protocol.SIMPLE
    for part in parts:
        k, _, v = part.partition("=")
        if k == "proto":
            protocol = _protocol(name, v)
    collective, algorithm = key.split(":")
    return collective, algorithm, protocol


def is_builtin_name(text: str) -> bool:
    """Whether ``text`` names a built-in algorithm (its parameters are checked on building)."""
    return _split(text)[0] in ALGORITHMS


def _integer(name: str, key: str, value: str) -> int:
    # ASCII digits only: int() would also take "١" (an Arabic-Indic one) and "0_1".
    if not (value.isascii() and value.removeprefix("-").isdigit()):
        raise ConfigError(f"{key}={value!r} is not a whole number", source=name)
    return int(value)


def _whole(name: str, key: str, value: object) -> int:
    """A keyword's value from Python: an int or a NumPy integer, not 8.5 or True."""
    whole = as_whole(value)
    if whole is None:
        raise ConfigError(f"{key}={value!r} is not a whole number", source=name)
    return whole


def _protocol(name: str, value: str) -> Protocol:
    try:
        return Protocol(value)
    except ValueError:
        known = ", ".join(p.value for p in Protocol)
        raise ConfigError(
            f"unknown protocol proto={value!r} (known: {known})", source=name
        ) from None


def builtin_plan(name: str, **overrides: int | None) -> Plan:
    """The built-in plan ``name`` (``"allgather"``, ``"allreduce:ring:gpus=8"``);
    ``overrides`` (``gpus``, ``tbs``, ``chunks``, ``inplace``) replace its parameters, and
    ``None`` leaves one as the name or the default has it."""
    key, parts = _split(name)
    if key not in ALGORITHMS:
        known = ", ".join(ALGORITHMS)
        raise ConfigError(f"unknown built-in plan {key!r} (known: {known})", source=name)
    algorithm = ALGORITHMS[key]
    keywords = ("gpus", "tbs", "chunks", *algorithm.extra)
    allowed = (*keywords, "proto")
    params: dict[str, int] = {}
    protocol = Protocol.SIMPLE
    for part in parts:
        k, sep, v = part.partition("=")
        if not sep or k not in allowed:
            raise ConfigError(
                f"unknown parameter {part!r} (known: {', '.join(allowed)})", source=name
            )
        if k == "proto":
            protocol = _protocol(name, v)
        else:
            params[k] = _integer(name, k, v)
    unknown = sorted(set(overrides) - set(keywords))
    if unknown:
        raise ConfigError(
            f"unknown keyword {unknown[0]!r} (known: {', '.join(keywords)})", source=name
        )
    params.update({k: _whole(name, k, v) for k, v in overrides.items() if v is not None})
    if "gpus" not in params:
        raise ConfigError("give the number of GPUs: ':gpus=8' or gpus=8", source=name)
    gpus = params["gpus"]
    if gpus < 2:
        raise ConfigError(f"a collective needs at least 2 GPUs; got gpus={gpus}", source=name)
    tbs = params.get("tbs", algorithm.default_tbs(gpus))
    chunks = params.get("chunks", algorithm.default_chunks(gpus, tbs))
    if tbs < 1 or chunks < 1:
        raise ConfigError("tbs and chunks must be at least 1", source=name)
    if gpus > MAX_GPUS:
        raise ConfigError(f"gpus={gpus} is more than {MAX_GPUS:,} GPUs", source=name)
    if gpus * tbs > MAX_POD_THREADBLOCKS:
        raise ConfigError(
            f"{gpus} GPUs x tbs={tbs} is more than {MAX_POD_THREADBLOCKS:,} threadblocks",
            source=name,
        )
    if chunks > MAX_CHUNKS:
        raise ConfigError(f"chunks={chunks} is more than {MAX_CHUNKS:,}", source=name)
    admit_builtin(name, algorithm.rounds, gpus, tbs, chunks)  # the limits together
    extra = {k: params[k] for k in algorithm.extra if k in params}
    if "inplace" in extra:
        if extra["inplace"] not in (0, 1):
            raise ConfigError("inplace is 0 or 1", source=name)
        extra["inplace"] = bool(extra["inplace"])
    recipe = (key, gpus, tbs, chunks, tuple(sorted(extra.items())), protocol)
    with _BUILT_LOCK:
        if recipe in _BUILT:
            _BUILT.move_to_end(recipe)
            return _BUILT[recipe]
    try:
        with collector_paused():
            plan = algorithm.build(gpus, tbs, chunks, **extra)
    except ValueError as exc:
        raise ConfigError(str(exc), source=name) from None
    if protocol is not Protocol.SIMPLE:
        plan = replace(plan.with_protocol(protocol), name=f"{plan.name}:proto={protocol}")
    _remember(recipe, plan)
    return plan


# Plans built so far, by recipe, most recently used last. Plans are frozen, and the work
# done on a plan (its structural proof, access table and placement facts) is kept per plan
# object, so handing back the same object saves a sweep that work at every other size and
# configuration: about 35 s of a 64-GPU All-Reduce search's 57 s (docs/engine-measured.md). Bounded
# by threadblocks, which the plan's memory and that work's grow with: about 3 KB each for
# an All-Reduce, so the bound holds a few hundred MB (every candidate count of a
# collective on 2-64 GPUs, 250 k threadblocks).
PLAN_MEMO_THREADBLOCKS = 400_000
_BUILT: OrderedDict[tuple, Plan] = OrderedDict()
_BUILT_LOCK = threading.Lock()


def _remember(recipe: tuple, plan: Plan) -> None:
    cost = sum(plan.threadblocks_per_gpu)
    if cost > PLAN_MEMO_THREADBLOCKS:
        return
    with _BUILT_LOCK:
        _BUILT[recipe] = plan
        _BUILT.move_to_end(recipe)
        while sum(sum(p.threadblocks_per_gpu) for p in _BUILT.values()) > PLAN_MEMO_THREADBLOCKS:
            _BUILT.popitem(last=False)
