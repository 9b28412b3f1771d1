"""Proving that a plan implements its collective.

``check_plan`` establishes, in order:

1. **Structure**: every index, count, dependency and transfer endpoint is in range and
   consistent.
2. **No deadlock**: steps wait only on same-GPU dependencies, on their predecessor in the
   threadblock, and on the flags of transfers whose stores go to dedicated locations (a
   store never waits for the receiver). A dependency waits for the step that signals it
   (``Plan.signaller``); one that no step signals never ends. So a plan can deadlock
   exactly when such a dependency exists or this wait-for graph has a cycle; the check
   finds one or proves there is none.
3. **No race**: every two accesses to one chunk, at least one a write, are ordered by the
   happens-before relation of that graph (vector clocks, as in FastTrack). A race-free
   plan computes the same values in every execution order.
4. **Postcondition**: one execution, in a topological order of the graph, with chunk
   values as multisets of input chunks; every result chunk on every GPU must hold exactly
   the right contributions, each once.

Every failure raises ``PlanError`` naming the GPU, threadblock, step and chunk.
"""

from __future__ import annotations

import weakref
from collections import Counter, deque
from dataclasses import dataclass

from nunasim.collectives.layout import Location, describe_atom, inputs, outputs
from nunasim.collectives.plan import Buffer, Chunks, Collective, Plan, Step, StepId
from nunasim.collectives.plan_admission import admit_check
from nunasim.errors import ConfigError


class PlanError(ConfigError):
    """A plan that is malformed or does not implement its collective."""


@dataclass(frozen=True)
class CheckReport:
    steps: int
    transfers: int
    threadblocks: int
    critical_path_steps: int  # longest chain of waiting steps


def _fail(plan: Plan, reason: str, where: StepId | str | None = None) -> PlanError:
    text = "" if where is None else str(where)
    return PlanError(reason, source=plan.source or plan.name, where=text)


def _op(plan: Plan, sid: StepId) -> str:
    return f"{sid} ({plan.step(sid).op})"


# --- 1. structure ------------------------------------------------------------------------


def validate_structure(plan: Plan) -> None:
    if plan.ngpus < 1:
        raise _fail(plan, "a plan needs at least one GPU")
    if plan.chunks_per_size < 1:
        raise _fail(
            plan, f"chunks per collective size must be positive, not {plan.chunks_per_size}"
        )
    if not 0 <= plan.root < plan.ngpus:
        raise _fail(plan, f"root {plan.root} is not one of the {plan.ngpus} GPUs")

    def in_buffer(gpu: int, chunks: Chunks, sid: StepId | str, what: str) -> None:
        program = plan.gpus[gpu]
        size = program.buffer_chunks(chunks.buffer)
        if chunks.count < 1 or chunks.index < 0 or chunks.index + chunks.count > size:
            raise _fail(
                plan,
                f"{what} gpu {gpu} {chunks} is outside its {size}-chunk "
                f"{Buffer(chunks.buffer).name.lower()} buffer",
                sid,
            )

    for g, program in enumerate(plan.gpus):
        for name in ("input_chunks", "output_chunks", "scratch_chunks"):
            if getattr(program, name) < 0:
                raise _fail(plan, f"gpu {g} has a negative {name.replace('_', ' ')}")

    for sid, step in plan.steps():
        tbs = plan.gpus[sid.gpu].threadblocks
        ranges = [*step.reads, *(r.chunks for r in step.loads), *step.writes]
        for chunks in step.reads:
            in_buffer(sid.gpu, chunks, sid, "reads")
        for chunks in step.writes:
            in_buffer(sid.gpu, chunks, sid, "writes")
        for remote in step.loads:
            if not 0 <= remote.gpu < plan.ngpus:
                raise _fail(plan, f"loads from gpu {remote.gpu}, which does not exist", sid)
            in_buffer(remote.gpu, remote.chunks, sid, "loads")
        if len({c.count for c in ranges}) > 1:
            raise _fail(plan, "its chunk ranges have different lengths", sid)
        # Stores of the step's combined value (a store with its own source copies that).
        stores_value = any(
            plan.transfers[x].dst is not None and plan.transfers[x].source is None
            for x in step.sends
            if 0 <= x < len(plan.transfers)
        )
        if (step.writes or stores_value) and not step.combines:
            raise _fail(plan, "writes or sends data but reads nothing", sid)
        if step.combines and not (step.writes or step.sends):
            raise _fail(plan, "reads data but neither writes nor sends it", sid)
        for tb, s in step.deps:
            if not 0 <= tb < len(tbs) or not 0 <= s < len(tbs[tb].steps):
                raise _fail(plan, f"depends on tb {tb} step {s}, which does not exist", sid)
            if (tb, s) == (sid.tb, sid.step):
                raise _fail(plan, "depends on itself", sid)
        for x in (*step.sends, *step.recvs):
            if not 0 <= x < len(plan.transfers):
                raise _fail(plan, f"refers to transfer {x}, which does not exist", sid)

    senders: Counter[int] = Counter(x for _, step in plan.steps() for x in step.sends)
    receivers: Counter[int] = Counter(x for _, step in plan.steps() for x in step.recvs)
    for x, transfer in enumerate(plan.transfers):
        src = transfer.src
        if not (
            0 <= src.gpu < plan.ngpus
            and 0 <= src.tb < len(plan.gpus[src.gpu].threadblocks)
            and 0 <= src.step < len(plan.gpus[src.gpu].threadblocks[src.tb].steps)
        ):
            raise _fail(plan, f"transfer {x} comes from {src}, which does not exist")
        if senders[x] != 1 or x not in plan.step(src).sends:
            raise _fail(plan, f"transfer {x} is not sent exactly once, by {src}", src)
        if not 0 <= transfer.dst_gpu < plan.ngpus:
            raise _fail(plan, f"sends to gpu {transfer.dst_gpu}, which does not exist", src)
        if transfer.source is not None:
            if transfer.dst is None:
                raise _fail(plan, f"transfer {x} has a source but no destination chunks", src)
            in_buffer(src.gpu, transfer.source, src, "sends from")
        if transfer.dst is not None:
            in_buffer(transfer.dst_gpu, transfer.dst, src, "sends to")
            moved = (transfer.source or plan.step(src)).count
            if transfer.dst.count != moved:
                raise _fail(plan, f"sends {transfer.dst.count} chunks but moves {moved}", src)
        if transfer.receiver is None:
            if receivers[x]:
                raise _fail(plan, f"transfer {x} has no receiving step but is waited for", src)
            if transfer.dst is None:
                raise _fail(plan, "sends a flag that no step waits for", src)
            continue
        rx = transfer.receiver
        if rx.gpu != transfer.dst_gpu:
            raise _fail(plan, f"sends to gpu {transfer.dst_gpu} but {rx} waits for it", src)
        if not (
            0 <= rx.tb < len(plan.gpus[rx.gpu].threadblocks)
            and 0 <= rx.step < len(plan.gpus[rx.gpu].threadblocks[rx.tb].steps)
        ):
            raise _fail(plan, f"transfer {x} is received by {rx}, which does not exist", src)
        if receivers[x] != 1 or x not in plan.step(rx).recvs:
            raise _fail(plan, f"transfer {x} is not received exactly once, by {rx}", src)


# --- 2. the wait-for graph and deadlock ------------------------------------------------------


def _released_by(plan: Plan, sid: StepId, step: Step) -> list[StepId]:
    """The steps whose signals release ``step``'s dependencies (see ``Plan.signaller``);
    ``_unreleased`` has ruled out dependencies that nothing releases."""
    found = (plan.signaller(sid.gpu, dep) for dep in step.deps)
    return [by for by in found if by is not None]


def _predecessors(plan: Plan, sid: StepId, step: Step) -> list[StepId]:
    before = [StepId(sid.gpu, sid.tb, sid.step - 1)] if sid.step else []
    before += _released_by(plan, sid, step)
    before += [plan.transfers[x].src for x in step.recvs]
    return before


def _unreleased(plan: Plan) -> None:
    """A dependency on a step that never signals, with no later signalling step in its
    threadblock, is never released: its step, and everything after it, never runs."""
    for sid, step in plan.steps():
        for tb, s in step.deps:
            if plan.signaller(sid.gpu, (tb, s)) is None:
                target = StepId(sid.gpu, tb, s)
                raise _fail(
                    plan,
                    f"deadlock: waits for {_op(plan, target)}, which never signals the steps "
                    f'that depend on it (it lacks hasdep="1") and no later step of tb {tb} '
                    "signals either, so the wait never ends",
                    sid,
                )


def execution_order(plan: Plan) -> list[StepId]:
    """A topological order of the wait-for graph, or PlanError describing a deadlock."""
    _unreleased(plan)
    waiting: dict[StepId, int] = {}
    successors: dict[StepId, list[StepId]] = {}
    for sid, step in plan.steps():
        preds = set(_predecessors(plan, sid, step))
        waiting[sid] = len(preds)
        for p in preds:
            successors.setdefault(p, []).append(sid)
    ready = deque(sid for sid, count in waiting.items() if count == 0)
    order: list[StepId] = []
    while ready:
        sid = ready.popleft()
        order.append(sid)
        for nxt in successors.get(sid, ()):
            waiting[nxt] -= 1
            if waiting[nxt] == 0:
                ready.append(nxt)
    if len(order) < len(waiting):
        raise _deadlock(plan, {sid for sid, count in waiting.items() if count > 0})
    return order


def _deadlock(plan: Plan, stuck: set[StepId]) -> PlanError:
    start = min(stuck, key=lambda s: (s.gpu, s.tb, s.step))
    chain: list[StepId] = []
    seen: dict[StepId, int] = {}
    sid = start
    while sid not in seen:
        seen[sid] = len(chain)
        chain.append(sid)
        sid = next(p for p in _predecessors(plan, sid, plan.step(sid)) if p in stuck)
    cycle = [*chain[seen[sid] :], sid]
    story = ", which waits for ".join(_op(plan, s) for s in cycle)
    return _fail(plan, f"deadlock: {len(stuck)} steps can never run; {story}", cycle[0])


def critical_path(plan: Plan, order: list[StepId]) -> int:
    depth: dict[StepId, int] = {}
    for sid in order:
        preds = _predecessors(plan, sid, plan.step(sid))
        depth[sid] = 1 + max((depth[p] for p in preds), default=0)
    return max(depth.values(), default=0)


# --- 3 and 4. symbolic execution with race detection ------------------------------------------


@dataclass
class _Access:
    tb: int  # global threadblock index
    clock: int
    sid: StepId


class _Memory:
    """Chunk values and the epochs of the last write and the reads since."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.values: dict[Location, tuple[int, ...]] = {}
        self.last_write: dict[Location, _Access] = {}
        self.reads: dict[Location, dict[int, _Access]] = {}

    def _ordered(self, earlier: _Access, clock: dict[int, int]) -> bool:
        return clock.get(earlier.tb, 0) >= earlier.clock

    def read(self, where: Location, now: _Access, clock: dict[int, int]) -> tuple[int, ...]:
        writer = self.last_write.get(where)
        if writer is not None and not self._ordered(writer, clock):
            raise _race(self.plan, now.sid, "reads", where, writer.sid)
        if where not in self.values:
            raise _fail(self.plan, f"reads {where} before anything is written there", now.sid)
        self.reads.setdefault(where, {})[now.tb] = now
        return self.values[where]

    def write(
        self, where: Location, value: tuple[int, ...], now: _Access, clock: dict[int, int]
    ) -> None:
        writer = self.last_write.get(where)
        if writer is not None and not self._ordered(writer, clock):
            raise _race(self.plan, now.sid, "writes", where, writer.sid)
        for reader in self.reads.get(where, {}).values():
            if not self._ordered(reader, clock):
                raise _race(self.plan, now.sid, "writes", where, reader.sid, reader_side=True)
        self.values[where] = value
        self.last_write[where] = now
        self.reads[where] = {}


def _race(
    plan: Plan, sid: StepId, verb: str, where: Location, other: StepId, reader_side: bool = False
) -> PlanError:
    other_verb = "reads" if reader_side else "writes"
    return _fail(
        plan,
        f"{verb} {where}, which {_op(plan, other)} {other_verb}, with nothing ordering the "
        "two (a missing dependency or flag)",
        sid,
    )


def _describe(plan: Plan, atoms: tuple[int, ...]) -> str:
    if not atoms:
        return "nothing"
    counts = Counter(atoms)
    parts = [
        describe_atom(plan, a) + (f" x{n}" if n > 1 else "") for a, n in sorted(counts.items())
    ]
    if len(parts) > 4:
        parts = [*parts[:3], f"... ({len(atoms)} contributions)"]
    return "{" + ", ".join(parts) + "}"


def _difference(plan: Plan, got: tuple[int, ...], want: tuple[int, ...]) -> str:
    have, need = Counter(got), Counter(want)
    missing = sorted((need - have).elements())
    extra = sorted((have - need).elements())
    words = []
    if missing:
        words.append(f"lacks {_describe(plan, tuple(missing))}")
    if extra:
        words.append(f"has {_describe(plan, tuple(extra))} too many")
    return " and ".join(words)


def execute(plan: Plan, order: list[StepId]) -> _Memory:
    """Run the plan symbolically in ``order``, detecting races; returns the final memory."""
    memory = _Memory(plan)
    for where, value in inputs(plan):
        memory.values[where] = (value,)
    base = [0]
    for program in plan.gpus:
        base.append(base[-1] + len(program.threadblocks))
    clocks: list[dict[int, int]] = [{} for _ in range(base[-1])]
    snapshot: dict[StepId, dict[int, int]] = {}
    needed = {by for sid, step in plan.steps() for by in _released_by(plan, sid, step)}
    needed |= {t.src for t in plan.transfers}

    for sid in order:
        step = plan.step(sid)
        tb = base[sid.gpu] + sid.tb
        clock = clocks[tb]
        for by in _released_by(plan, sid, step):
            _join(clock, snapshot[by])
        for x in step.recvs:
            _join(clock, snapshot[plan.transfers[x].src])
        clock[tb] = sid.step + 1
        now = _Access(tb, sid.step + 1, sid)

        count = step.count
        for k in range(count):
            sources: list[tuple[int, ...]] = []
            for chunks in step.reads:
                sources.append(
                    memory.read(Location(sid.gpu, chunks.buffer, chunks.index + k), now, clock)
                )
            for remote in step.loads:
                where = Location(remote.gpu, remote.chunks.buffer, remote.chunks.index + k)
                sources.append(memory.read(where, now, clock))
            value = tuple(sorted(a for source in sources for a in source))
            for chunks in step.writes:
                memory.write(Location(sid.gpu, chunks.buffer, chunks.index + k), value, now, clock)
            for x in step.sends:
                transfer = plan.transfers[x]
                if transfer.dst is not None and transfer.source is None:
                    where = Location(transfer.dst_gpu, transfer.dst.buffer, transfer.dst.index + k)
                    memory.write(where, value, now, clock)
        for x in step.sends:  # stores of their own source: a copy each
            transfer = plan.transfers[x]
            if transfer.source is None or transfer.dst is None:
                continue
            for k in range(transfer.source.count):
                here = Location(sid.gpu, transfer.source.buffer, transfer.source.index + k)
                copied = memory.read(here, now, clock)
                where = Location(transfer.dst_gpu, transfer.dst.buffer, transfer.dst.index + k)
                memory.write(where, copied, now, clock)
        if sid in needed:
            snapshot[sid] = dict(clock)
    return memory


def _join(into: dict[int, int], other: dict[int, int]) -> None:
    for tb, c in other.items():
        if into.get(tb, 0) < c:
            into[tb] = c


def check_postcondition(plan: Plan, memory: _Memory) -> None:
    for where, want in outputs(plan):
        got = memory.values.get(where, ())
        if got != want:
            writer = memory.last_write.get(where)
            by = f"; last written by {_op(plan, writer.sid)}" if writer else "; never written"
            raise _fail(
                plan,
                f"{where} ends holding {_describe(plan, got)} but must hold "
                f"{_describe(plan, want)}: it {_difference(plan, got, want)}{by}",
                writer.sid if writer else f"gpu {where.gpu}",
            )


def check_plan(plan: Plan) -> CheckReport:
    """Prove that ``plan`` is well formed, deadlock-free, race-free and correct."""
    validate_structure(plan)
    admit_check(
        plan.source or plan.name,
        sum(g.input_chunks + g.output_chunks + g.scratch_chunks for g in plan.gpus),
        sum(t.count for t in plan.transfers),
        plan.collective in REDUCING,
    )
    try:
        list(outputs(plan))
    except ValueError as exc:
        raise _fail(plan, str(exc)) from None
    order = execution_order(plan)
    memory = execute(plan, order)
    check_postcondition(plan, memory)
    return CheckReport(
        steps=plan.step_count,
        transfers=len(plan.transfers),
        threadblocks=sum(plan.threadblocks_per_gpu),
        critical_path_steps=critical_path(plan, order),
    )


# Collectives whose chunks hold sets of contributions, which the proof tracks.
REDUCING = frozenset({Collective.ALLREDUCE, Collective.REDUCESCATTER, Collective.REDUCE})

# Plans proved so far, by object: a sweep runs one plan at many sizes and configurations.
_PROVED: dict[int, weakref.ref[Plan]] = {}


def prove_once(plan: Plan) -> None:
    """Refuse (PlanError) a plan that must not run; every place or run of a plan calls this.

    A plan from a file or built in Python is proved in full (``check_plan``); a built-in
    (``source == "builtin"``), which the test suite proves for every size it can take, gets
    the structural checks only, since a full proof of a 64-GPU built-in takes seconds. The
    outcome is remembered per plan object for as long as it lives, so a sweep proves its
    plan once."""
    key = id(plan)
    known = _PROVED.get(key)
    if known is not None and known() is plan:
        return
    if plan.source == "builtin":
        validate_structure(plan)
    else:
        check_plan(plan)
    _PROVED[key] = weakref.ref(plan, lambda _, key=key: _PROVED.pop(key, None))
