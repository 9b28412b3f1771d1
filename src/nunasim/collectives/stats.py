"""Per-GPU figures of a plan: threadblocks, steps, data sent and received, peers."""

from __future__ import annotations

from collections import defaultdict

import pandas as pd

from nunasim.collectives.plan import Plan


def plan_table(plan: Plan, size: int) -> pd.DataFrame:
    """One row per GPU. Byte columns assume a collective of ``size`` bytes."""
    chunk = plan.chunk_bytes(size)
    sent: dict[int, int] = defaultdict(int)
    received: dict[int, int] = defaultdict(int)
    out_peers: dict[int, set[int]] = defaultdict(set)
    in_peers: dict[int, set[int]] = defaultdict(set)
    for transfer in plan.transfers:
        if transfer.dst_gpu == transfer.src.gpu:
            continue
        sent[transfer.src.gpu] += transfer.count
        received[transfer.dst_gpu] += transfer.count
        out_peers[transfer.src.gpu].add(transfer.dst_gpu)
        in_peers[transfer.dst_gpu].add(transfer.src.gpu)
    loaded: dict[int, int] = defaultdict(int)
    for sid, step in plan.steps():
        for remote in step.loads:
            if remote.gpu != sid.gpu:
                loaded[sid.gpu] += remote.chunks.count
                sent[remote.gpu] += remote.chunks.count
                out_peers[remote.gpu].add(sid.gpu)
                in_peers[sid.gpu].add(remote.gpu)
    rows = []
    for g, program in enumerate(plan.gpus):
        received_chunks = received[g] + loaded[g]
        rows.append(
            {
                "gpu": g,
                "threadblocks": len(program.threadblocks),
                "steps": sum(len(tb.steps) for tb in program.threadblocks),
                "input_chunks": program.input_chunks,
                "output_chunks": program.output_chunks,
                "scratch_chunks": program.scratch_chunks,
                "chunks_sent": sent[g],
                "chunks_received": received_chunks,
                "bytes_sent": sent[g] * chunk,
                "bytes_received": received_chunks * chunk,
                "peers_out": len(out_peers[g]),
                "peers_in": len(in_peers[g]),
            }
        )
    return pd.DataFrame(rows)
