"""The step graph: what each step waits for, what its completion releases, and its flags.

A step waits for the previous step of its threadblock, for the steps whose signals release
its dependencies (``Plan.signaller``; a plan with a dependency nothing releases would never
finish, and is refused), and for the flags of the transfers it receives. A step completes
when all its messages are done and acknowledged; it then releases its successors and sends
a flag for each ``Simple`` transfer with a receiver: a one-line store to the flag page of
the receiving threadblock. A data-polled transfer has no flag: the last of its lines to
land releases the receiver (one of no lines releases it when its step completes).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from nunasim.collectives.per_plan import PerPlan
from nunasim.collectives.plan import Plan, Step, StepId
from nunasim.engine.lowering.messages import FLAG, Messages
from nunasim.errors import ConfigError
from nunasim.mapping.accesses import polled_data
from nunasim.mapping.placement import Placement


class StepGraph(NamedTuple):
    """Threadblocks and steps in ``Plan.steps`` order, and the flags the steps send."""

    tb_cu: list[int]  # CU of each threadblock, numbered over the pod
    tb_gpu: list[int]
    step_tb: list[int]
    wait: list[int]  # waits before a step may start (program order, deps, flags)
    succ: list[list[int]]  # per step: steps whose waits its completion satisfies
    flags: Messages  # in the order the steps send them
    flag_step: np.ndarray  # per flag: the step that sends it
    releases: list[list[int]]  # per arrival counter: steps its last line releases


def step_graph(
    plan: Plan, placement: Placement, arrival_lines: np.ndarray, arrival_transfer: np.ndarray
) -> StepGraph:
    """The step graph of ``plan``; a data-polled transfer's arrival counter is the one whose
    ``arrival_transfer`` it is, and ``arrival_lines`` its lines."""
    skeleton = _skeleton(plan)
    cus = placement.socket.cus
    tb_cu = np.concatenate(
        [g * cus + np.asarray(gpu.tb_cu, dtype=np.int64) for g, gpu in enumerate(placement.gpus)]
    ).tolist()
    counter = {x: c for c, x in enumerate(arrival_transfer.tolist())}
    releases: list[list[int]] = [[] for _ in counter]
    succ = skeleton.succ
    for s, data, rx in skeleton.polled:
        if arrival_lines[counter[data]]:
            releases[counter[data]].append(rx)
        else:  # a transfer of no lines lands when its step completes
            if succ is skeleton.succ:
                succ = list(succ)  # the skeleton's lists are shared: copy what changes
            succ[s] = [*succ[s], rx]
    sender = skeleton.flags[:, 0]
    flags = np.column_stack(
        [
            sender,
            skeleton.flags[:, 1],
            np.asarray(tb_cu, dtype=np.int64)[np.asarray(skeleton.step_tb, dtype=np.int64)[sender]],
            skeleton.flags[:, 2],
            skeleton.flags[:, 3],
        ]
    )
    flag_step, flag_messages = _flag_messages(placement, flags, skeleton.step_tb)
    return StepGraph(
        tb_cu,
        skeleton.tb_gpu,
        skeleton.step_tb,
        skeleton.wait,
        succ,
        flag_messages,
        flag_step,
        releases,
    )


class _Skeleton(NamedTuple):
    """What of the step graph depends on the plan alone (shared: never changed)."""

    tb_gpu: list[int]
    step_tb: list[int]
    wait: list[int]
    succ: list[list[int]]
    flags: np.ndarray  # per flag: sending step, its GPU, receiving GPU, receiving step
    polled: list[tuple[int, int, int]]  # sending step, data transfer, receiving step


# Skeletons so far: a threadblock search or a sweep runs one plan under many placements,
# and this part is most of the graph's cost (about 0.4 s of a 64-GPU candidate).
_SKELETONS: PerPlan[_Skeleton] = PerPlan()


def _skeleton(plan: Plan) -> _Skeleton:
    return _SKELETONS.get(plan, _build_skeleton)


def _build_skeleton(plan: Plan) -> _Skeleton:
    step_base, tb_gpu, step_tb = _threadblocks(plan)
    wait = [0] * len(step_tb)
    succ: list[list[int]] = [[] for _ in step_tb]
    flags: list[tuple[int, int, int, int]] = []
    polled: list[tuple[int, int, int]] = []
    steps = (
        (StepId(g, b, k), step)
        for g, program in enumerate(plan.gpus)
        for b, tb in enumerate(program.threadblocks)
        for k, step in enumerate(tb.steps)
    )
    for s, (sid, step) in enumerate(steps):  # numbered as ``_threadblocks`` does
        if step.deps:
            preds = _predecessors(plan, sid, step, step_base)
        else:  # the previous step of its threadblock, if any (most steps of most plans)
            preds = {s - 1} if sid.step else set()
        for p in preds:
            succ[p].append(s)
        wait[s] = len(preds) + len(step.recvs)
        for x in step.sends:
            t = plan.transfers[x]
            if t.receiver is None:
                continue
            rx = step_base[(t.receiver.gpu, t.receiver.tb)] + t.receiver.step
            if not t.protocol.data_polled:
                flags.append((s, sid.gpu, t.dst_gpu, rx))
                continue
            data = x if t.dst is not None else polled_data(plan, x)
            if data is None:
                raise ConfigError(
                    f"a {t.protocol} flag alone to gpu {t.dst_gpu} follows no {t.protocol} "
                    "data transfer of its step to that GPU, so it has nothing to poll",
                    source=plan.source,
                    where=str(sid),
                )
            polled.append((s, data, rx))
    table = np.array(flags, dtype=np.int64).reshape(-1, 4)
    return _Skeleton(tb_gpu, step_tb, wait, succ, table, polled)


def _threadblocks(plan: Plan) -> tuple[dict[tuple[int, int], int], list[int], list[int]]:
    """The number of each (GPU, threadblock)'s first step, and per threadblock its GPU,
    and per step its threadblock."""
    step_base: dict[tuple[int, int], int] = {}
    tb_gpu, steps, first = [], [], 0
    for g, program in enumerate(plan.gpus):
        for t, tb in enumerate(program.threadblocks):
            step_base[(g, t)] = first
            tb_gpu.append(g)
            steps.append(len(tb.steps))
            first += len(tb.steps)
    step_tb = np.repeat(np.arange(len(steps)), steps)
    return step_base, tb_gpu, step_tb.tolist()


def _predecessors(
    plan: Plan, sid: StepId, step: Step, step_base: dict[tuple[int, int], int]
) -> set[int]:
    """The steps whose completion a step waits for: the previous step of its threadblock
    and the steps whose signals release its dependencies."""
    s = step_base[(sid.gpu, sid.tb)] + sid.step
    preds = {s - 1} if sid.step else set()
    for dep in step.deps:
        by = plan.signaller(sid.gpu, dep)
        if by is None:
            raise ConfigError(
                f"waits for gpu {sid.gpu} tb {dep[0]} step {dep[1]}, which never signals "
                "its dependants, nor does any later step of its threadblock: the run "
                "would never finish",
                source=plan.source or plan.name,
                where=str(sid),
            )
        preds.add(step_base[(by.gpu, by.tb)] + by.step)
    return preds


def _flag_messages(
    placement: Placement, flags: np.ndarray, step_tb: list[int]
) -> tuple[np.ndarray, Messages]:
    """The sending step of each flag, and the flags as messages: each to the flag page of
    its receiving step's threadblock (``flags``: per flag, sending step, GPU and CU,
    receiving GPU and step)."""
    columns = flags.T
    step, gpu, cu, memory_gpu, target = columns
    amap, socket = placement.address_map, placement.socket
    # the flag pages of every threadblock, in the steps' threadblock order
    region = np.concatenate([np.asarray(g.flags.region, dtype=np.int64) for g in placement.gpus])
    frame = np.concatenate([np.asarray(g.flags.frame, dtype=np.int64) for g in placement.gpus])
    receiver = np.asarray(step_tb, dtype=np.int64)[target]
    per_page = socket.page_bytes // socket.line_bytes
    address = amap.line_address(region[receiver], frame[receiver] * per_page)
    return step, Messages(
        kind=np.full(len(step), FLAG),
        lineop=np.full(len(step), -1),
        gpu=gpu,
        cu=cu,
        router=socket.router_of_cu[cu % socket.cus],
        target=target,
        data_bytes=np.zeros(len(step), dtype=np.int64),
        memory_gpu=memory_gpu,
        address=address,
        port=np.where(memory_gpu == gpu, -1, amap.ports_of(address)),
        stack=amap.stacks_of(address),
    )
