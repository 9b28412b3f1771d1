"""Lowering a background GEMM (paper section 6.6): every tile is a threadblock of three
steps, load its inputs (a local read per line), compute, store its output (a local write
per line), each line a line operation of its own."""

from __future__ import annotations

import numpy as np

from nunasim.engine.lowering.messages import READ, WRITE, Messages
from nunasim.engine.lowering.program import Program
from nunasim.hardware import Pod
from nunasim.mapping.address import AddressMap
from nunasim.mapping.placement import BackgroundLoad
from nunasim.units import s_to_ps
from nunasim.workload import GemmTile

STEPS_PER_TILE = 3  # load, compute, store


def gemm_ps(pod: Pod, tile: GemmTile) -> int:
    """A tile's compute time on one CU, at its share of the socket's rate for the dtype."""
    socket = pod.socket
    return max(1, round(s_to_ps(tile.flops / (socket.flops_for(tile.dtype) / socket.cus))))


def lower_background(
    pod: Pod,
    amap: AddressMap,
    background: BackgroundLoad,
    ngpus: int,
    first: tuple[int, int, int, int],
) -> Program:
    """``background`` on ``ngpus`` GPUs; ``first`` numbers its first threadblock, step,
    line operation and message (``Program.next_numbers``)."""
    first_tb, first_step, first_lineop, first_message = first
    socket = pod.socket
    tiles = len(background.inputs)
    loads = np.array([len(a) for a in background.inputs], dtype=np.int64)
    stores = np.array([len(a) for a in background.outputs], dtype=np.int64)
    # One GPU's lines, tile by tile: the inputs it loads, then the output it stores.
    pairs = zip(background.inputs, background.outputs, strict=True)
    one_gpu = np.concatenate([lines for pair in pairs for lines in pair])
    writes_one = np.concatenate(
        [np.repeat([False, True], [n_in, n_out]) for n_in, n_out in zip(loads, stores, strict=True)]
    )
    tile_one = np.repeat(np.arange(tiles), loads + stores)

    gpu = np.repeat(np.arange(ngpus), len(one_gpu))
    tile = np.tile(tile_one, ngpus) + gpu * tiles  # tiles numbered over the pod
    writes = np.tile(writes_one, ngpus)
    address = np.tile(one_gpu, ngpus)
    tb_cu = np.concatenate(background.tb_cu).astype(np.int64)  # per tile
    count = len(address)
    message = first_message + np.arange(count)
    messages = Messages(
        kind=np.where(writes, WRITE, READ),
        lineop=first_lineop + np.arange(count),
        gpu=gpu,
        cu=gpu * socket.cus + tb_cu[tile],
        router=socket.router_of_cu[tb_cu[tile]],
        target=np.full(count, -1),
        data_bytes=np.full(count, socket.line_bytes),
        memory_gpu=gpu,
        address=address,
        port=np.full(count, -1),
        stack=amap.stacks_of(address),
    )
    # a read is the source of its operation, a write the sink: nothing is combined
    lineop_msgs = np.stack([message, message + (~writes), message + 1], axis=1)
    steps = first_step + STEPS_PER_TILE * np.arange(ngpus * tiles)
    return Program(
        tb_cu=np.repeat(np.arange(ngpus), tiles) * socket.cus + tb_cu,
        tb_gpu=np.repeat(np.arange(ngpus), tiles),
        step_tb=np.repeat(first_tb + np.arange(ngpus * tiles), STEPS_PER_TILE),
        step_wait=np.tile([0, 1, 1], ngpus * tiles),
        step_compute_ps=np.tile([0, gemm_ps(pod, background.tile), 0], ngpus * tiles),
        step_background=np.ones(STEPS_PER_TILE * len(steps), dtype=bool),
        step_lineops=np.tile(
            np.stack([loads, np.zeros_like(loads), stores], axis=1).ravel(), ngpus
        ),
        step_flags=np.zeros(STEPS_PER_TILE * len(steps), dtype=np.int64),
        succ=[x for s in steps.tolist() for x in ([s + 1], [s + 2], [])],
        lineop_step=steps[tile] + np.where(writes, 2, 0),
        lineop_compute_ps=np.zeros(count, dtype=np.int64),
        lineop_msgs=lineop_msgs,
        flag_msg=np.zeros(0, dtype=np.int64),
        messages=messages,
        arrival_lines=np.zeros(0, dtype=np.int64),
        releases=[],
    )
