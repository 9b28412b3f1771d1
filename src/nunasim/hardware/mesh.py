"""A 2-D mesh of routers: coordinates, directed links and dimension-order paths.

Routers are numbered ``r = y * width + x``. Every router owns four output link slots, one
per direction, numbered ``link = 4 * r + direction``; slots that would leave the mesh do not
exist (``has_link`` is False). The numbering is flat on purpose: the engine indexes
per-link arrays with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np

Coord = tuple[int, int]


class Direction(IntEnum):
    EAST = 0  # +x
    WEST = 1  # -x
    SOUTH = 2  # +y (rows are numbered top to bottom)
    NORTH = 3  # -y


_STEP = {
    Direction.EAST: (1, 0),
    Direction.WEST: (-1, 0),
    Direction.SOUTH: (0, 1),
    Direction.NORTH: (0, -1),
}

ROUTING_ORDERS = ("xy", "yx")


@dataclass(frozen=True)
class Mesh:
    width: int
    height: int

    @property
    def routers(self) -> int:
        return self.width * self.height

    @property
    def link_slots(self) -> int:
        """Size of a per-link array indexed by link id (includes slots off the mesh)."""
        return 4 * self.routers

    def contains(self, x: int, y: int) -> bool:
        return 0 <= x < self.width and 0 <= y < self.height

    def router(self, x: int, y: int) -> int:
        if not self.contains(x, y):
            raise ValueError(f"({x}, {y}) is off the {self.width} x {self.height} mesh")
        return y * self.width + x

    def coord(self, router: int) -> Coord:
        if not 0 <= router < self.routers:
            raise ValueError(f"router {router} does not exist on a mesh of {self.routers}")
        return router % self.width, router // self.width

    def check(self, *routers: int) -> None:
        """Refuse a router that is not on the mesh (``ValueError``)."""
        for router in routers:
            self.coord(router)

    def hops(self, a: int, b: int) -> int:
        """Hop count of a minimal path, which dimension-order routing always takes."""
        ax, ay = self.coord(a)
        bx, by = self.coord(b)
        return abs(ax - bx) + abs(ay - by)

    def neighbour(self, router: int, direction: Direction) -> int | None:
        x, y = self.coord(router)
        dx, dy = _STEP[direction]
        if not self.contains(x + dx, y + dy):
            return None
        return self.router(x + dx, y + dy)

    def neighbours(self, router: int) -> list[int]:
        found = (self.neighbour(router, d) for d in Direction)
        return [n for n in found if n is not None]

    def has_link(self, link: int) -> bool:
        return (
            0 <= link < self.link_slots
            and self.neighbour(link // 4, Direction(link % 4)) is not None
        )

    def link(self, src: int, dst: int) -> int:
        """Id of the directed link from router ``src`` to its neighbour ``dst``."""
        for direction in Direction:
            if self.neighbour(src, direction) == dst:
                return 4 * src + direction
        raise ValueError(f"routers {src} and {dst} are not neighbours")

    def link_ends(self, link: int) -> tuple[int, int]:
        if not self.has_link(link):
            raise ValueError(f"link {link} does not exist on this mesh")
        src = link // 4
        dst = self.neighbour(src, Direction(link % 4))
        assert dst is not None
        return src, dst

    def links(self) -> list[int]:
        """Every directed link that exists, in id order."""
        return [link for link in range(self.link_slots) if self.has_link(link)]

    def path(self, src: int, dst: int, order: str = "xy") -> list[int]:
        """Directed links of the dimension-order route from ``src`` to ``dst``.

        ``order="xy"`` moves along x first, then y; ``"yx"`` the reverse.
        """
        self.check(src, dst)
        _, links = self.paths(np.array([src]), np.array([dst]), order)
        return links.tolist()

    def paths(
        self, src: np.ndarray, dst: np.ndarray, order: str = "xy"
    ) -> tuple[np.ndarray, np.ndarray]:
        """The dimension-order routes of many router pairs at once, flattened: pair ``i``
        crosses ``links[start[i]:start[i + 1]]``, in order (``path`` for one pair)."""
        if order not in ROUTING_ORDERS:
            raise ValueError(
                f"unknown routing order {order!r} (known: {', '.join(ROUTING_ORDERS)})"
            )
        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        x, y = src % self.width, src // self.width
        tx, ty = dst % self.width, dst // self.width
        along_x, along_y = np.abs(tx - x), np.abs(ty - y)
        start = np.zeros(len(src) + 1, dtype=np.int64)
        np.cumsum(along_x + along_y, out=start[1:])
        pair = np.repeat(np.arange(len(src)), np.diff(start))
        t = np.arange(start[-1]) - start[pair]  # links already crossed on the pair's path
        x, y, tx, ty = x[pair], y[pair], tx[pair], ty[pair]
        step_x, step_y = np.where(tx > x, 1, -1), np.where(ty > y, 1, -1)
        if order == "xy":  # along the source's row, then along the destination's column
            moving_x = t < along_x[pair]
            at_x = np.where(moving_x, x + step_x * t, tx)
            at_y = np.where(moving_x, y, y + step_y * (t - along_x[pair]))
        else:  # along the source's column, then along the destination's row
            moving_x = t >= along_y[pair]
            at_x = np.where(moving_x, x + step_x * (t - along_y[pair]), x)
            at_y = np.where(moving_x, ty, y + step_y * t)
        direction = np.where(
            moving_x,
            np.where(step_x > 0, Direction.EAST, Direction.WEST),
            np.where(step_y > 0, Direction.SOUTH, Direction.NORTH),
        )
        return start, 4 * (at_y * self.width + at_x) + direction

    def bisection_links(self) -> int:
        """Directed links across the narrower straight cut that halves the mesh.

        For a W x H mesh with W >= H this is the cut between columns W//2 - 1 and W//2:
        H links each way. A 1 x 1 mesh has none.
        """
        if self.width >= self.height:
            return 2 * self.height if self.width > 1 else 0
        return 2 * self.width if self.height > 1 else 0

    def connected(self, routers: set[int]) -> bool:
        """Whether ``routers`` form one 4-connected region of the mesh."""
        if not routers:
            return False
        start = next(iter(routers))
        seen = {start}
        frontier = [start]
        while frontier:
            current = frontier.pop()
            for n in self.neighbours(current):
                if n in routers and n not in seen:
                    seen.add(n)
                    frontier.append(n)
        return seen == routers
