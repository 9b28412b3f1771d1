"""NAR domains on a socket: which HBM stacks back each domain, and distances to domains.

The rule that ties stacks to domains (written down, since the paper leaves it open):

- The distance from a router to domain ``d`` is the mean zero-load latency from that router
  to the routers of ``d``'s ports (one router per port, so a router with more of the
  domain's ports weighs more); die crossings count, as they do for the traffic.
- Every stack backs the domain nearest to it (ties: the lower domain number). A stack far
  from every port still backs its nearest domain, so every page of every stack has a domain
  and UA+NAR can keep UA's round-robin stacks.
- Every domain is also backed by its ``ceil(stacks / granularity)`` nearest stacks (ties:
  the lower stack number), its fair share of the memory, so that a domain is never served
  by one stack alone while others are near: at fine granularities several domains share
  the stacks between them (a stack then backs several domains, and its address range is
  split between them: ``AddressMap`` gives each (domain, stack) pair its own region).

Granularity 1 is the baseline: one domain of all ports, backed by every stack.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from nunasim.hardware import Socket


@dataclass(frozen=True)
class DomainLayout:
    """The NAR domains of one granularity: their ports and the stacks that back them."""

    granularity: int
    ports: tuple[range, ...]  # ports of each domain
    stacks: tuple[tuple[int, ...], ...]  # stacks backing each domain, nearest first
    stack_domains: tuple[tuple[int, ...], ...]  # domains each stack backs
    router_distance: np.ndarray  # [domain, router] mean latency (ps) to the domain's ports

    def cus_by_distance(self, socket: Socket, domain: int) -> np.ndarray:
        """CU numbers, nearest to ``domain``'s ports first (ties: lower CU number)."""
        distance = self.router_distance[domain][socket.router_of_cu]
        return np.lexsort((np.arange(len(distance)), distance))


@cache
def domain_layout(socket: Socket, granularity: int) -> DomainLayout:
    """The domains of ``granularity`` on ``socket``: their ports and the stacks backing them."""
    domains = tuple(socket.domain_ports(granularity, d) for d in range(granularity))
    latency = socket.router_paths.latency_ps
    port_routers = socket.port_routers
    distance = np.stack(
        [latency[:, port_routers[list(ports)]].mean(axis=1) for ports in domains]
    )  # [domain, router]
    stack_routers = socket.stack_routers.tolist()
    backing: list[list[int]] = [[] for _ in range(granularity)]
    for s, router in enumerate(stack_routers):
        nearest = int(np.argmin(distance[:, router]))  # argmin keeps the lowest on ties
        backing[nearest].append(s)
    share = -(-len(stack_routers) // granularity)
    for d in range(granularity):
        nearest = np.lexsort((np.arange(len(stack_routers)), distance[d, stack_routers]))
        for s in nearest[:share].tolist():
            if s not in backing[d]:
                backing[d].append(s)
    stacks = tuple(
        tuple(sorted(chosen, key=lambda s, d=d: (distance[d, stack_routers[s]], s)))
        for d, chosen in enumerate(backing)
    )
    stack_domains = tuple(
        tuple(d for d in range(granularity) if s in stacks[d]) for s in range(len(stack_routers))
    )
    return DomainLayout(granularity, domains, stacks, stack_domains, distance)
