"""Admission: whether a run fits in memory, decided from counts before anything is placed
or allocated.

The packet engine's memory grows with its messages (one per line a step fetches or
delivers, and one per flag), so a run's size is its message count times the memory one
message takes, measured (``BYTES_PER_MESSAGE``, see docs/limits.md). A run is admitted
when that estimate fits the *memory budget*: the bytes given by ``limit_memory`` (the
CLI's ``--max-memory``), else by the ``NUNASIM_MAX_MEMORY`` environment variable, else
half of the memory available to the process when the run is admitted.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from nunasim.collectives.per_plan import PerPlan
from nunasim.collectives.plan import Buffer, Plan
from nunasim.errors import ConfigError
from nunasim.mapping.accesses import PROTOCOLS, plan_accesses
from nunasim.units import format_memory, parse_size

# Growth of peak resident memory per message of a run, placement, lowering, engine and
# result tables included, beyond ``BYTES_PER_RUN``: at most 650 B on runs of 0.4 to 11.8
# million messages (benchmarks/admission_memory.py, docs/limits.md), rounded up so that the
# estimate errs on the side of refusing.
BYTES_PER_MESSAGE = 800
# Placement's tables per page of every buffer (its region, its stack, its domain).
BYTES_PER_PAGE = 32
# Growth a run needs whatever its size (fixed tables, the compiled engine's first load).
BYTES_PER_RUN = 128 << 20
# Of the memory available, the share a run may take by default: the rest is left to the
# machine's other work (a sweep often shares a machine).
AVAILABLE_SHARE = 0.5
MEMORY_ENV = "NUNASIM_MAX_MEMORY"
# Where available memory cannot be read (not Linux): assume a small machine.
FALLBACK_AVAILABLE_BYTES = 4 << 30

_BUDGET: ContextVar[Budget | None] = ContextVar("nunasim_memory_budget", default=None)


@dataclass(frozen=True)
class Budget:
    """Bytes a run may use, and where that figure comes from (for a refusal)."""

    nbytes: int
    origin: str


def packet_messages(plan: Plan, chunk_bytes: int, line_bytes: int) -> int:
    """The messages the packet engine would make for ``plan`` at ``chunk_bytes`` per chunk:
    one per wire line every step fetches or delivers, and one per flag. Exact (the count
    lowering makes, before any background work), from counts only, and in Python integers
    so that an absurd size gives an absurd count rather than an overflow."""
    return packet_lines(plan, chunk_bytes, line_bytes) + flag_messages(plan)


def packet_lines(plan: Plan, chunk_bytes: int, line_bytes: int) -> int:
    """The wire lines of ``packet_messages``: from the plan's access table, at once."""
    accesses = plan_accesses(plan)
    chunks = np.bincount(accesses.protocol, weights=accesses.count, minlength=len(PROTOCOLS))
    return sum(
        int(n) * protocol.lines(chunk_bytes, line_bytes)
        for protocol, n in zip(PROTOCOLS, chunks.astype(np.int64), strict=True)
    )


def flag_messages(plan: Plan) -> int:
    """The flags of ``packet_messages``: a loop over every send of the plan (about 1 s for a
    64-GPU plan of 1,008 threadblocks per GPU), so a caller that only compares the count
    with a limit counts the lines first. Counted once per plan object: a search asks for
    it three times a candidate (0.33 s of the 1.1 s that preparing a 64-GPU 100 kB
    All-Gather's five candidates took)."""
    return _FLAGS.get(plan, _count_flags)


_FLAGS: PerPlan[int] = PerPlan()


def _count_flags(plan: Plan) -> int:
    flagged = [t.receiver is not None and not t.protocol.data_polled for t in plan.transfers]
    # Straight over the steps (``plan.steps()`` makes a StepId for each, which is most of
    # the time here).
    return sum(
        flagged[x]
        for program in plan.gpus
        for tb in program.threadblocks
        for step in tb.steps
        for x in step.sends
    )


def packet_bytes(messages: int) -> int:
    """Estimated peak memory of a packet-engine run of ``messages`` messages."""
    return BYTES_PER_RUN + messages * BYTES_PER_MESSAGE


def admit(
    plan: Plan,
    chunk_bytes: int,
    line_bytes: int,
    budget: Budget | None = None,
    page_bytes: int | None = None,
) -> int:
    """The messages of ``plan`` at ``chunk_bytes``; a run whose memory estimate exceeds the
    budget is refused with the estimate, the budget and the size that would fit. With
    ``page_bytes``, so is a plan whose buffers have more pages to place than the budget
    holds (an imported plan may declare buffers far larger than what it moves)."""
    messages = packet_messages(plan, chunk_bytes, line_bytes)
    budget = budget or memory_budget()
    affordable = max(budget.nbytes - BYTES_PER_RUN, 0) // BYTES_PER_MESSAGE
    fits = plan.chunks_per_size * chunk_bytes * affordable // max(messages, 1)
    advice = (
        f"use a collective size of at most about {format_memory(fits)}, or fewer GPUs"
        if fits
        else f"give a budget of at least {format_memory(packet_bytes(messages))}"
    )
    refuse_beyond(messages, budget, advice)
    if page_bytes is not None:
        admit_pages(plan, chunk_bytes, page_bytes, budget)
    return messages


def admit_pages(
    plan: Plan, chunk_bytes: int, page_bytes: int, budget: Budget | None = None
) -> None:
    """Refuse a plan whose buffers have more pages to place than ``budget`` holds (whatever
    engine runs it, placement builds their page tables)."""
    _refuse_pages(buffer_pages(plan, chunk_bytes, page_bytes), budget or memory_budget())


def buffer_pages(plan: Plan, chunk_bytes: int, page_bytes: int) -> int:
    """Pages placement gives the plan's buffers at most (every chunk on its own pages)."""
    chunks = sum(gpu.buffer_chunks(buffer) for gpu in plan.gpus for buffer in Buffer)
    return chunks * -(-chunk_bytes // page_bytes)


def _refuse_pages(pages: int, budget: Budget) -> None:
    if pages * BYTES_PER_PAGE > budget.nbytes:
        raise ConfigError(
            f"this plan's buffers would hold {pages:,} pages, about "
            f"{format_memory(pages * BYTES_PER_PAGE)} of page tables, more than the limit of "
            f"{format_memory(budget.nbytes)} ({budget.origin}): use a smaller collective "
            "size, or a plan whose buffers have fewer chunks"
        )


def refuse_beyond(
    messages: int, budget: Budget, advice: str = "use a smaller collective size, or fewer GPUs"
) -> None:
    """Refuse a run of ``messages`` messages whose memory estimate exceeds ``budget``."""
    need = packet_bytes(messages)
    if need > budget.nbytes:
        raise ConfigError(
            f"this run would simulate {messages:,} messages (one per line for every source "
            f"and destination) in about {format_memory(need)} of arrays, more than the packet "
            f"engine's limit of {format_memory(budget.nbytes)} ({budget.origin}): {advice}; "
            "or the flow-level engine (--engine flow, or engine='flow' in Python)"
        )


@contextmanager
def limit_memory(nbytes: int) -> Iterator[None]:
    """Admit the runs made inside the ``with`` block against a budget of ``nbytes``."""
    if nbytes <= 0:
        raise ConfigError(f"a memory budget must be positive; got {nbytes:,} bytes")
    token = _BUDGET.set(Budget(nbytes, "the budget given"))
    try:
        yield
    finally:
        _BUDGET.reset(token)


def memory_budget() -> Budget:
    """The budget runs are admitted against now (see the module's documentation)."""
    given = _BUDGET.get()
    if given is not None:
        return given
    text = os.environ.get(MEMORY_ENV, "").strip()
    if text:
        try:
            nbytes = parse_size(text)
        except ConfigError as exc:
            raise ConfigError(exc.reason, source=f"${MEMORY_ENV}") from None
        if nbytes <= 0:
            raise ConfigError("a memory budget must be positive", source=f"${MEMORY_ENV}")
        return Budget(nbytes, f"${MEMORY_ENV}")
    available = available_memory()
    return Budget(
        int(available * AVAILABLE_SHARE),
        f"{AVAILABLE_SHARE:.0%} of the {format_memory(available)} available; --max-memory or "
        f"${MEMORY_ENV} to change it",
    )


def available_memory() -> int:
    """Bytes this process could still allocate: the least of the machine's available
    memory, its control group's headroom and its own address-space limit."""
    limits = [_meminfo_available(), _cgroup_headroom(), _address_space_headroom()]
    known = [limit for limit in limits if limit is not None]
    return max(min(known), 0) if known else FALLBACK_AVAILABLE_BYTES


def _meminfo_available() -> int | None:
    return _kib_field(Path("/proc/meminfo"), "MemAvailable:")


def _cgroup_headroom() -> int | None:
    # cgroup v2: a container's limit, which /proc/meminfo does not show.
    folder = Path("/sys/fs/cgroup")
    try:
        limit = (folder / "memory.max").read_text().strip()
        used = int((folder / "memory.current").read_text())
    except (OSError, ValueError):
        return None
    return None if limit == "max" or not limit.isdigit() else int(limit) - used


def _address_space_headroom() -> int | None:
    try:
        import resource  # Unix only
    except ImportError:
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    size = _kib_field(Path("/proc/self/status"), "VmSize:")
    return soft - (size or 0)


def _kib_field(path: Path, name: str) -> int | None:
    try:
        with path.open() as lines:
            for line in lines:
                if line.startswith(name):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None
