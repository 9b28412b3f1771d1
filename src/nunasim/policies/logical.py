"""Algorithm 1's logical_allocation: threadblocks and their chunks into logical groups.

Threadblocks are visited GPU by GPU, in threadblock order. One whose grouping chunks are
all new starts a group; otherwise it joins the group with which it shares the most chunks (the
earliest such group on ties), and its new chunks join that group too. Groups are returned
largest first (most threadblocks; the earlier-formed on ties), the order in which
physical placement hands them round-robin to NAR domains.

Which chunks group threadblocks is a choice the paper leaves open ("the chunks it shares"):

- ``"all"`` (the default, the paper's rule: a threadblock's chunks ``C_tb`` are every chunk
  it accesses): local reads included. On a direct All-Gather with ``c`` chunks per peer
  this makes ``c`` groups, one per chunk index ``j``: the threadblocks of every GPU that
  read, send and receive chunk ``j`` of every block. Each group then reads its source,
  leaves through its domain's ports and lands in its domain's stacks on every peer, all
  near one another. With few threadblocks (one chunk per peer) everything is one group in
  one domain: too few threadblocks for many domains, the imbalance of the paper's Fig. 13;
  with many, the groups are as many as the chunks and fill fine domains evenly.
- ``"communication"``: only the chunks a threadblock exchanges with other GPUs (its remote
  stores and loads and what it receives). A local source read by many senders (an
  All-Gather's own block) does not chain the streams of a GPU together; the threadblocks
  sending one chunk to different peers then sit in different domains and all but one of
  them read it from afar (docs/policies.md gives the measured difference).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from nunasim.collectives.access import AccessSet, ChunkTuple


@dataclass
class LogicalGroup:
    members: list[tuple[int, int]] = field(default_factory=list)  # (gpu, tb)
    chunks: set[ChunkTuple] = field(default_factory=set)


GROUPINGS = ("communication", "all")


def logical_allocation(
    sets: dict[tuple[int, int], AccessSet], grouping: str = "communication"
) -> list[LogicalGroup]:
    if grouping not in GROUPINGS:
        raise ValueError(f"unknown grouping {grouping!r} (known: {', '.join(GROUPINGS)})")
    groups: list[LogicalGroup] = []
    owner: dict[ChunkTuple, int] = {}
    for key in sorted(sets):
        chunks = sets[key].communication if grouping == "communication" else sets[key].chunks
        shared = Counter(owner[c] for c in chunks if c in owner)
        if shared:
            best = max(shared.values())
            index = min(g for g, n in shared.items() if n == best)
        else:
            index = len(groups)
            groups.append(LogicalGroup())
        group = groups[index]
        group.members.append(key)
        for c in chunks:
            if c not in owner:
                owner[c] = index
                group.chunks.add(c)
    order = sorted(range(len(groups)), key=lambda g: (-len(groups[g].members), g))
    return [groups[g] for g in order]
