"""Corruptions of valid plans, for showing that the checker rejects them."""

from __future__ import annotations

from dataclasses import replace

from nunasim.collectives.plan import Chunks, Plan, Step, StepId


def _with_step(plan: Plan, sid: StepId, step: Step) -> Plan:
    gpus = list(plan.gpus)
    program = gpus[sid.gpu]
    tbs = list(program.threadblocks)
    steps = list(tbs[sid.tb].steps)
    steps[sid.step] = step
    tbs[sid.tb] = replace(tbs[sid.tb], steps=tuple(steps))
    gpus[sid.gpu] = replace(program, threadblocks=tuple(tbs))
    return replace(plan, gpus=tuple(gpus))


def drop_transfer(plan: Plan, x: int) -> Plan:
    """The plan without transfer ``x``: its store never happens and nobody waits for it."""

    def renumber(ids: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(i - (i > x) for i in ids if i != x)

    out = replace(plan, transfers=plan.transfers[:x] + plan.transfers[x + 1 :])
    for sid, step in plan.steps():
        if step.sends or step.recvs:
            out = _with_step(
                out, sid, replace(step, sends=renumber(step.sends), recvs=renumber(step.recvs))
            )
    return out


def move_read(plan: Plan, sid: StepId, position: int, index: int) -> Plan:
    """Step ``sid`` reads chunk ``index`` instead of its ``position``-th range."""
    step = plan.step(sid)
    reads = list(step.reads)
    old = reads[position]
    reads[position] = Chunks(old.buffer, index, old.count)
    return _with_step(plan, sid, replace(step, reads=tuple(reads)))


def drop_dep(plan: Plan, sid: StepId, position: int) -> Plan:
    step = plan.step(sid)
    deps = step.deps[:position] + step.deps[position + 1 :]
    return _with_step(plan, sid, replace(step, deps=deps))


def still_ordered(plan: Plan, sid: StepId, target: StepId) -> bool:
    """Whether ``target`` still happens before ``sid`` through other waits."""
    from nunasim.collectives.check import _predecessors

    seen = set()
    stack = [sid]
    while stack:
        current = stack.pop()
        for p in _predecessors(plan, current, plan.step(current)):
            if p == target:
                return True
            if p not in seen:
                seen.add(p)
                stack.append(p)
    return False
