"""The unaware (UA) threadblock dispatcher: round-robin over dies; in a die, the first CU
with the fewest threadblocks in the die's dispatch order. The dispatch order visits the
die's routers in a random order (from the given generator), one CU of each router per pass,
so that threadblocks spread over the whole die (the paper's baseline sees average-case
distances) rather than fill one corner."""

from __future__ import annotations

import numpy as np

from nunasim.hardware import Socket


def die_orders(socket: Socket, rng: np.random.Generator) -> list[list[int]]:
    """Each die's dispatch order of CUs (empty for a die without compute units)."""
    index = {r: i for i, r in enumerate(socket.cu_routers)}
    orders = []
    for d in range(len(socket.dies)):
        routers = [r for r in socket.cu_routers if socket.die_of_router[r] == d]
        routers = [routers[i] for i in rng.permutation(len(routers))] if routers else []
        orders.append(
            [
                index[r] * socket.cus_per_router + slot
                for slot in range(socket.cus_per_router)
                for r in routers
            ]
        )
    return orders


def ua_cus(socket: Socket, count: int, rng: np.random.Generator) -> np.ndarray:
    """CUs for ``count`` threadblocks, dispatched in order."""
    orders = [np.array(order, dtype=np.int64) for order in die_orders(socket, rng) if order]
    cus = np.empty(count, dtype=np.int64)
    # The dies' CUs are disjoint and each die's dispatcher takes its CUs in its order, one
    # more threadblock each per pass: the k-th threadblock a die receives goes to the k-th
    # CU of its order, cyclically.
    for d, order in enumerate(orders):
        received = np.arange(d, count, len(orders))
        cus[received] = order[np.arange(len(received)) % len(order)]
    return cus
