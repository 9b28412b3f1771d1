"""Admission for building and proving plans: the cost estimated from counts before the
work, and a refusal with the estimate and what would fit, as a simulation's admission
does (``engine.lowering.admission``). Each limit passes alone for numbers that together
would run for minutes and take gigabytes (256 GPUs of 65,536 chunks each).

Calibrated on this project's 2-core machine (built-in direct plans of 64 GPUs at 1,008
threadblocks; an MSCCL All-Gather of 2 GPUs and 1,048,576 chunks): building and proving a
plan costs about 30 us and 1.1 kB per step, and the proof about 5 us and 350 B per chunk
it tracks (each GPU's buffer slots and each chunk moved), twice that for a collective
that reduces (a slot holds a set of contributions)."""

from __future__ import annotations

from nunasim.errors import ConfigError
from nunasim.units import PS_PER_S, PS_PER_US, format_memory

# Four times the paper's largest plan (the 64-GPU direct All-Reduce at 1,008 threadblocks,
# 259,072 steps), about 1.2 GB and half a minute to build and prove.
MAX_PLAN_STEPS = 1 << 20
# The proof's chunks (buffer slots plus chunks moved, doubled for a reduction): about
# 0.7 GB and 10 s at the limit; the paper's largest plan tracks 518,144 (259,072 doubled).
MAX_CHECKED_CHUNKS = 1 << 21
US_PER_STEP = 30
BYTES_PER_STEP = 1_100
US_PER_CHECKED_CHUNK = 5
BYTES_PER_CHECKED_CHUNK = 350


def builtin_steps(rounds: int, gpus: int, tbs: int, chunks: int) -> int:
    """An upper bound on the steps of a built-in of ``rounds`` all-pairs or ring rounds:
    at most two steps per (GPU, GPU, chunk) of a round (a store and a receive to every
    peer; the one-pass All-Reduce's local reductions too), plus each threadblock's own
    steps (tests/test_plans.py checks the bound against built plans)."""
    return rounds * (2 * gpus * gpus * chunks + 2 * gpus * tbs)


def admit_builtin(name: str, rounds: int, gpus: int, tbs: int, chunks: int) -> None:
    """Refuse, before building, a built-in beyond ``MAX_PLAN_STEPS``."""
    steps = builtin_steps(rounds, gpus, tbs, chunks)
    if steps <= MAX_PLAN_STEPS:
        return
    room = MAX_PLAN_STEPS // rounds - 2 * gpus * tbs
    fits = room // (2 * gpus * gpus)
    advice = f"at most chunks={fits} here" if fits >= 1 else "fewer GPUs or threadblocks"
    raise ConfigError(
        f"would build about {steps:,} steps, about {_cost(steps, US_PER_STEP, BYTES_PER_STEP)}"
        f" (at most {MAX_PLAN_STEPS:,} steps): {advice}",
        source=name,
    )


def checked_chunks(buffer_chunks: int, moved_chunks: int, reduces: bool) -> int:
    """The chunks a proof tracks: every buffer slot and every chunk moved, twice for a
    collective that reduces."""
    return (buffer_chunks + moved_chunks) * (2 if reduces else 1)


def admit_check(source: str, buffer_chunks: int, moved_chunks: int, reduces: bool) -> None:
    """Refuse, before proving, a plan whose proof would track more than
    ``MAX_CHECKED_CHUNKS``."""
    tracked = checked_chunks(buffer_chunks, moved_chunks, reduces)
    if tracked <= MAX_CHECKED_CHUNKS:
        return
    cost = _cost(tracked, US_PER_CHECKED_CHUNK, BYTES_PER_CHECKED_CHUNK)
    raise ConfigError(
        f"proving it would track {tracked:,} chunks ({buffer_chunks:,} buffer slots and "
        f"{moved_chunks:,} chunks moved{', doubled for a reduction' if reduces else ''}), "
        f"about {cost} (at most {MAX_CHECKED_CHUNKS:,}): fewer chunks per buffer "
        "(nchunksperloop, i_chunks, o_chunks, s_chunks) or fewer GPUs",
        source=source,
    )


def _cost(count: int, us_each: int, bytes_each: int) -> str:
    seconds = max(1, count * us_each * PS_PER_US // PS_PER_S)  # wall time, not simulated
    return f"{seconds:,} s and {format_memory(count * bytes_each)}"
