"""Pairing the synchronisation of parsed MSCCL++ ops into IR transfers and dependencies.

Signals with waits (per channel pair, in FIFO order), packet stores with the steps that
poll them, barrier rounds, and semaphore acquires with the releases they are certain to
follow (see the package docstring for the rules). Separate from the op parser because it
works on every parsed op of a plan at once, not on one op: it runs after all ops are read.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from nunasim.collectives.builder import PlanBuilder
from nunasim.collectives.plan import Chunks, Protocol, StepId
from nunasim.errors import ConfigError
from nunasim.io.mscclpp.plan_model import _Channel, _GpuTables, _Location, _Op, _Store


def _fail(source: str, where: str, reason: str) -> ConfigError:
    return ConfigError(reason, source=source, where=where)


# --- pairing: signals and waits -------------------------------------------------------------


def _partner(tables: list[_GpuTables], g: int, channel: _Channel) -> tuple[int, int | None]:
    """The peer of g's channel and the channel of the peer that shares its semaphore: the
    k-th channel of a type from g to p pairs with the k-th one of that type from p to g."""
    ctype, c = channel
    peers = tables[g].channels[ctype]
    p = peers[c]
    k = peers[:c].count(p)
    back = [i for i, q in enumerate(tables[p].channels[ctype]) if q == g]
    return p, (back[k] if k < len(back) else None)


def _one_threadblock(queue: list[_Op], verb: str, channel: str, source: str) -> None:
    tbs = {op.sid.tb for op in queue}
    if len(tbs) > 1:
        other = next(op for op in queue if op.sid.tb != queue[0].sid.tb)
        raise _fail(
            source,
            other.where,
            f"{verb} on {channel}, as threadblock {queue[0].sid.tb} also does; the pairing of "
            "signals and waits on a channel used by several threadblocks is ambiguous",
        )


def _pair_signals(
    builder: PlanBuilder, ops: list[_Op], tables: list[_GpuTables], source: str
) -> None:
    """Flag transfers from each signal (or port pws/pwsf) to the matching wait."""
    sent: dict[tuple[int, _Channel], list[tuple[_Op, _Store | None]]] = defaultdict(list)
    waited: dict[tuple[int, _Channel], list[_Op]] = defaultdict(list)
    for op in ops:
        g = op.sid.gpu
        for channel in op.signals:
            sent[(g, channel)].append((op, None))
        for store in op.stores:
            if store.signal is not None:
                sent[(g, store.signal)].append((op, store))
        for channel in op.waits:
            waited[(g, channel)].append(op)

    def name(g: int, channel: _Channel) -> str:
        return f"gpu {g} {channel[0]} channel {channel[1]}"

    for (g, channel), queue in waited.items():
        _one_threadblock(queue, "waits", name(g, channel), source)
    paired: set[tuple[int, _Channel]] = set()
    for (g, channel), queue in sorted(sent.items()):
        _one_threadblock([op for op, _ in queue], "signals", name(g, channel), source)
        p, back = _partner(tables, g, channel)
        if back is None:
            raise _fail(
                source,
                queue[0][0].where,
                f"signals over {name(g, channel)} to gpu {p}, but gpu {p} has no matching "
                f"{channel[0]} channel back to gpu {g} to wait on",
            )
        waits = waited.get((p, (channel[0], back)), [])
        paired.add((p, (channel[0], back)))
        if len(queue) > len(waits):
            raise _fail(
                source,
                queue[len(waits)][0].where,
                f"signal {len(waits) + 1} over {name(g, channel)} is never waited for: gpu "
                f"{p} waits on its matching {channel[0]} channel {back} {len(waits)} time(s)",
            )
        if len(waits) > len(queue):
            raise _fail(
                source,
                waits[len(queue)].where,
                f"wait {len(queue) + 1} on {name(p, (channel[0], back))} is never signalled: "
                f"gpu {g} signals on its matching channel {channel[1]} {len(queue)} time(s)",
            )
        for (op, store), receiver in zip(queue, waits, strict=True):
            chunks = store.chunks if store is not None else None
            own = store.source if store is not None else None
            builder.transfer(op.sid, p, chunks, receiver.sid, source=own)
    for (p, channel), waits in waited.items():
        if (p, channel) not in paired:
            g, back = _partner(tables, p, channel)
            why = (
                f"gpu {g} has no matching {channel[0]} channel back to gpu {p}"
                if back is None
                else f"gpu {g} never signals on its matching channel {back}"
            )
            raise _fail(
                source, waits[0].where, f"wait 1 on {name(p, channel)} is never signalled: {why}"
            )


# --- pairing: packets -------------------------------------------------------------------------


def _pair_packets(builder: PlanBuilder, ops: list[_Op], source: str, notes: list[str]) -> None:
    """Packet stores are received by the steps that read them (see the package docstring)."""
    writers: dict[_Location, _Op] = {}

    def claim(gpu: int, chunks: Chunks, op: _Op, where: str) -> None:
        for k in chunks.indices():
            prior = writers.setdefault((gpu, chunks.buffer, k), op)
            if prior is not op:
                raise _fail(
                    source,
                    where,
                    f"writes packets to gpu {gpu} {chunks.buffer}[{k}], which {prior.where} "
                    "also writes; a packet location holds one write per run (flags cannot "
                    "tell two apart)",
                )

    for op in ops:
        for store in op.stores:
            if store.packet:
                claim(store.gpu, store.chunks, op, store.where)
        for chunks in op.packet_writes:
            claim(op.sid.gpu, chunks, op, op.where)

    readers: dict[_Location, list[_Op]] = defaultdict(list)
    for op in ops:
        for chunks in op.packet_reads:
            for k in chunks.indices():
                where = (op.sid.gpu, chunks.buffer, k)
                writer = writers.get(where)
                if writer is None or writer is op:
                    raise _fail(
                        source,
                        op.where,
                        f"reads packets at gpu {op.sid.gpu} {chunks.buffer}[{k}], which no "
                        "other op writes in packet format (the read would never complete)",
                    )
                if op not in readers[where]:
                    readers[where].append(op)

    def reading(gpu: int, chunks: Chunks) -> list[_Op]:
        found = {id(r): r for k in chunks.indices() for r in readers[(gpu, chunks.buffer, k)]}
        return sorted(found.values(), key=lambda r: (r.sid.tb, r.sid.step))

    for op in ops:
        for store in op.stores:
            if not store.packet:
                continue
            receivers = reading(store.gpu, store.chunks)
            if not receivers:
                builder.transfer(
                    op.sid, store.gpu, store.chunks, None, Protocol.PACKET, store.source
                )
                notes.append(
                    f"{op.where} writes packets to gpu {store.gpu} {store.chunks} that no op "
                    "reads; imported as a plain put"
                )
                continue
            builder.transfer(
                op.sid, store.gpu, store.chunks, receivers[0].sid, Protocol.PACKET, store.source
            )
            for extra in receivers[1:]:  # polls the same packets: no message of its own
                builder.transfer(op.sid, store.gpu, None, extra.sid, Protocol.PACKET)
        for chunks in op.packet_writes:
            for reader in reading(op.sid.gpu, chunks):
                if reader.sid.tb == op.sid.tb and reader.sid.step > op.sid.step:
                    continue  # program order already
                builder.add_dep(reader.sid, op.sid)


# --- pairing: barriers and semaphores --------------------------------------------------------


def _by_threadblock(ops: Iterator[tuple[int, _Op]]) -> dict[int, dict[int, list[_Op]]]:
    """{key: {threadblock: ops in step order}} from (key, op) pairs in (tb, step) order."""
    table: dict[int, dict[int, list[_Op]]] = defaultdict(lambda: defaultdict(list))
    for key, op in ops:
        table[key][op.sid.tb].append(op)
    return table


def _pair_barriers(builder: PlanBuilder, ops: list[_Op], source: str) -> None:
    """Each member of a barrier round depends on the step before the barrier in every other
    member (one GPU's ops)."""
    arrivals = _by_threadblock((op.barrier[0], op) for op in ops if op.barrier is not None)
    for bid, by_tb in sorted(arrivals.items()):
        for r in range(max(len(v) for v in by_tb.values())):
            members = [seq[r] for _, seq in sorted(by_tb.items()) if r < len(seq)]
            for member in members:
                assert member.barrier is not None
                if member.barrier[1] != len(members):
                    raise _fail(
                        source,
                        member.where,
                        f"barrier {bid} is reached by {len(members)} threadblock(s) in its "
                        f"round {r + 1}, but num_threadblocks is {member.barrier[1]}",
                    )
            for member in members:
                for other in members:
                    if other is not member and other.sid.step > 0:
                        before = StepId(other.sid.gpu, other.sid.tb, other.sid.step - 1)
                        builder.add_dep(member.sid, before)


def _pair_semaphores(
    builder: PlanBuilder, ops: list[_Op], inits: list[int], source: str, notes: list[str]
) -> None:
    """Each acquire depends on the releases it is certain to follow (one GPU's ops)."""
    releases = _by_threadblock((sem, op) for op in ops for sem in op.releases)
    acquires = _by_threadblock((sem, op) for op in ops for sem in op.acquires)
    for sem in sorted(set(releases) | set(acquires)):
        start, released = inits[sem], releases.get(sem, {})
        total = sum(len(seq) for seq in released.values())
        taken = 0
        for tb, seq in sorted(acquires.get(sem, {}).items()):
            for n, op in enumerate(seq, start=1):
                taken += 1
                if n - start > total or taken > start + total:
                    raise _fail(
                        source,
                        op.where,
                        f"sem_acquire of semaphore {sem} can never succeed: it starts at "
                        f"{start} and is released {total} time(s), but is acquired more often",
                    )
                for rel in _certain_releases(n - start, total, released):
                    if not (rel.sid.tb == tb and rel.sid.step < op.sid.step):
                        builder.add_dep(op.sid, rel.sid)
        if taken != total:
            notes.append(
                f"gpu {ops[0].sid.gpu} semaphore {sem} is acquired {taken} and released "
                f"{total} time(s): it ends a run at a different value than it starts"
            )


def _certain_releases(need: int, total: int, released: dict[int, list[_Op]]) -> list[_Op]:
    """The latest release of each threadblock that every ``need`` releases must include
    (releases of one threadblock happen in order)."""
    if need <= 0:
        return []
    found = []
    for seq in released.values():
        j = need - total + len(seq)  # the j-th release of this TB is certain
        if j >= 1:
            found.append(seq[j - 1])
    return found
