"""The floorplan picture: mesh, dies, CUs, HBM stacks, I/O ports and NAR domains.

Drawn from the tables of ``nunasim.hardware.tables.floorplan_tables`` only. Rows run top to
bottom (y = 0 is the top edge), as port numbering does. Every drawn element carries a
``gid`` (``die``, ``router``, ``cu``, ``link``, ``stack``, ``port``) so that tests and
scripts can find what was drawn.
"""

from __future__ import annotations

import math
from collections import defaultdict

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

TILE = 0.78  # router tile side, in mesh units
_PORT_DEPTH = 0.55  # how far a port strip stands out from the mesh edge
_STACK_DEPTH = 0.7


def _edge(x: int, y: int, width: int, height: int, prefer_rows: bool) -> str:
    """Which outer edge an element at router (x, y) is drawn on, or "" for inside."""
    rows = "N" if y == 0 else "S" if y == height - 1 else ""
    cols = "W" if x == 0 else "E" if x == width - 1 else ""
    first, second = (rows, cols) if prefer_rows else (cols, rows)
    return first or second


def cu_position(x: int, y: int, k: int, cus: int) -> tuple[float, float, float]:
    """Centre and pitch of the k-th CU square of a router tile at (x, y) with ``cus`` CUs."""
    side = math.ceil(math.sqrt(cus))
    pitch = TILE / (side + 1)
    return x - TILE / 2 + pitch * (1 + k % side), y - TILE / 2 + pitch * (1 + k // side), pitch


def domain_colour(domain: int, domains: int) -> tuple[float, float, float, float]:
    """A distinct colour per NAR domain (cycling through 20 when there are more)."""
    from matplotlib import colormaps

    palette = colormaps["tab20"] if domains > 10 else colormaps["tab10"]
    size = 20 if domains > 10 else 10
    return palette(domain % size)


def draw_floorplan(tables: dict[str, pd.DataFrame], title: str) -> Figure:
    routers, dies, links = tables["routers"], tables["dies"], tables["links"]
    stacks, ports = tables["stacks"], tables["ports"]
    width = int(routers["x"].max()) + 1
    height = int(routers["y"].max()) + 1

    fig = Figure(figsize=(max(6.0, 0.55 * width + 2.5), max(3.5, 0.55 * height + 2.8)))
    ax = fig.add_subplot()
    ax.set_aspect("equal")
    ax.axis("off")

    for row in links.itertuples():
        if row.src < row.dst:  # one line per pair of opposite links
            ax.plot(
                [row.x0, row.x1], [row.y0, row.y1], color="#b0b0b0", lw=0.8, zorder=1, gid="link"
            )

    for row in dies.itertuples():
        ax.add_patch(
            Rectangle(
                (row.x0 - 0.5, row.y0 - 0.5),
                row.x1 - row.x0 + 1,
                row.y1 - row.y0 + 1,
                fill=False,
                lw=2.2,
                ec="#303030",
                zorder=4,
                gid="die",
            )
        )
        ax.text(
            (row.x0 + row.x1) / 2,
            row.y1 + 0.5 + _STACK_DEPTH + 0.75,
            f"die {row.die}",
            ha="center",
            va="center",
            fontsize=8,
            color="#303030",
        )

    for row in routers.itertuples():
        ax.add_patch(
            Rectangle(
                (row.x - TILE / 2, row.y - TILE / 2),
                TILE,
                TILE,
                fc="#eef1f5",
                ec="#9aa5b1",
                lw=0.5,
                zorder=2,
                gid="router",
            )
        )
        for k in range(row.cus):
            cx, cy, pitch = cu_position(row.x, row.y, k, row.cus)
            ax.add_patch(
                Rectangle(
                    (cx - pitch * 0.32, cy - pitch * 0.32),
                    pitch * 0.64,
                    pitch * 0.64,
                    fc="#5b7083",
                    lw=0,
                    zorder=3,
                    gid="cu",
                )
            )

    per_router: dict[int, int] = defaultdict(int)
    for row in stacks.itertuples():
        slot = per_router[row.router]
        per_router[row.router] += 1
        edge = _edge(row.x, row.y, width, height, prefer_rows=True)
        w, h = (TILE, _STACK_DEPTH) if edge in ("N", "S", "") else (_STACK_DEPTH, TILE)
        if edge == "N":
            x0, y0 = row.x - w / 2, -0.5 - h - 0.08 - slot * (h + 0.05)
        elif edge == "S":
            x0, y0 = row.x - w / 2, height - 0.5 + 0.08 + slot * (h + 0.05)
        elif edge == "W":
            x0, y0 = -0.5 - w - 0.08 - slot * (w + 0.05), row.y - h / 2
        elif edge == "E":
            x0, y0 = width - 0.5 + 0.08 + slot * (w + 0.05), row.y - h / 2
        else:
            x0, y0 = row.x - w / 2, row.y - h / 2
        ax.add_patch(
            Rectangle((x0, y0), w, h, fc="#e0a040", ec="#8a5a10", lw=0.8, zorder=5, gid="stack")
        )
        ax.text(
            x0 + w / 2, y0 + h / 2, f"{row.stack}", ha="center", va="center", fontsize=6, zorder=6
        )

    domains = int(ports["domain"].max()) + 1 if (ports["domain"] >= 0).any() else 0
    by_router = ports.groupby("router", sort=False)
    for _, group in by_router:
        count = len(group)
        first = group.iloc[0]
        edge = _edge(int(first.x), int(first.y), width, height, prefer_rows=False)
        for k, row in enumerate(group.itertuples()):
            colour = domain_colour(row.domain, domains) if domains else "#4a7fb0"
            step = TILE / count
            if edge in ("W", "E", ""):
                x0 = {"W": -0.5 - _PORT_DEPTH, "E": width - 0.5, "": row.x - TILE / 2}[edge]
                rect = (x0, row.y - TILE / 2 + k * step, _PORT_DEPTH, step * 0.85)
            else:
                y0 = -0.5 - _PORT_DEPTH if edge == "N" else height - 0.5
                rect = (row.x - TILE / 2 + k * step, y0, step * 0.85, _PORT_DEPTH)
            ax.add_patch(
                Rectangle(rect[:2], rect[2], rect[3], fc=colour, lw=0, zorder=5, gid="port")
            )

    ax.set_xlim(-0.5 - _PORT_DEPTH - _STACK_DEPTH - 0.4, width - 0.5 + _PORT_DEPTH + 0.9)
    ax.set_ylim(height - 0.5 + _STACK_DEPTH + 1.1, -0.5 - _STACK_DEPTH - 0.5)
    ax.set_title(title, fontsize=10)

    handles = [
        Patch(fc="#5b7083", label="compute unit"),
        Patch(fc="#e0a040", ec="#8a5a10", label="HBM stack"),
    ]
    if domains:
        if domains <= 24:
            for d in range(domains):
                span = ports[ports["domain"] == d]["port"]
                handles.append(
                    Patch(
                        fc=domain_colour(d, domains),
                        label=f"NAR domain {d}: ports {span.min()}-{span.max()}",
                    )
                )
        else:
            handles.append(Patch(fc=domain_colour(0, domains), label=f"{domains} NAR domains"))
    else:
        handles.append(Patch(fc="#4a7fb0", label="I/O port"))
    ax.legend(
        handles=handles,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.02),
        fontsize=7,
        ncol=min(4, len(handles)),
        frameon=False,
    )
    fig.tight_layout()
    return fig
