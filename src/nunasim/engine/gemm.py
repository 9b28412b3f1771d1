"""Lowering a background GEMM (paper section 6.6): every tile is a threadblock of three
steps, load its inputs (a local read per line), compute, store its output (a local write
per line), each line a line operation of its own."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from nunasim.engine.messages import READ, WRITE, Messages
from nunasim.hardware import Pod
from nunasim.mapping.address import AddressMap
from nunasim.mapping.placement import BackgroundLoad
from nunasim.workload import GemmTile

STEPS_PER_TILE = 3  # load, compute, store


class BackgroundProgram(NamedTuple):
    """The GEMM's threadblocks, steps, line operations and messages, numbered after the
    collective's."""

    tb_cu: np.ndarray  # global CU of each tile's threadblock
    tb_gpu: np.ndarray
    step_tb: np.ndarray
    step_wait: np.ndarray
    step_compute_ps: np.ndarray
    step_lineops: np.ndarray  # line operations of each step
    succ: list[list[int]]  # per step: the steps its completion releases
    lineop_step: np.ndarray
    lineop_msgs: np.ndarray  # [line op, 3]: first source, first sink, end
    messages: Messages


def gemm_ps(pod: Pod, tile: GemmTile) -> int:
    """A tile's compute time on one CU, at its share of the socket's rate for the dtype."""
    socket = pod.socket
    return max(1, round(tile.flops / (socket.flops_for(tile.dtype) / socket.cus) * 1e12))


def lower_background(
    pod: Pod,
    amap: AddressMap,
    background: BackgroundLoad,
    ngpus: int,
    first: tuple[int, int, int, int],
) -> BackgroundProgram:
    """``background`` on ``ngpus`` GPUs; ``first`` numbers its first threadblock, step,
    line operation and message."""
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
    return BackgroundProgram(
        tb_cu=np.repeat(np.arange(ngpus), tiles) * socket.cus + tb_cu,
        tb_gpu=np.repeat(np.arange(ngpus), tiles),
        step_tb=np.repeat(first_tb + np.arange(ngpus * tiles), STEPS_PER_TILE),
        step_wait=np.tile([0, 1, 1], ngpus * tiles),
        step_compute_ps=np.tile([0, gemm_ps(pod, background.tile), 0], ngpus * tiles),
        step_lineops=np.tile(
            np.stack([loads, np.zeros_like(loads), stores], axis=1).ravel(), ngpus
        ),
        succ=[x for s in steps.tolist() for x in ([s + 1], [s + 2], [])],
        lineop_step=steps[tile] + np.where(writes, 2, 0),
        lineop_msgs=lineop_msgs,
        messages=messages,
    )
