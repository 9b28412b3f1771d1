"""A placement on the floorplan: one GPU's threadblocks on their CUs and its pages on their
stacks, coloured by NAR domain (grey where the policy used no domains).

Reads the floorplan tables and the placement's threadblock and page tables only.
"""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Circle

from nunasim.plotting.floorplan import cu_position, domain_colour, draw_floorplan

_NO_DOMAIN = "#303030"


def draw_placement(
    floorplan: dict[str, pd.DataFrame],
    threadblocks: pd.DataFrame,
    pages: pd.DataFrame,
    gpu: int,
    domains: int,
    title: str,
) -> Figure:
    figure = draw_floorplan(floorplan, title)
    ax = figure.axes[0]
    routers = floorplan["routers"].set_index("router")
    mine = threadblocks[threadblocks["gpu"] == gpu]
    per_router_cus = int(routers["cus"].max())
    for cu, group in mine.groupby("cu"):
        router = int(group["router"].iloc[0])
        row = routers.loc[router]
        k = int(cu) % per_router_cus
        cx, cy, pitch = cu_position(int(row.x), int(row.y), k, int(row.cus))
        domain = int(group["domain"].iloc[0])
        colour = domain_colour(domain, domains) if domain >= 0 and domains > 1 else _NO_DOMAIN
        ax.add_patch(
            Circle(
                (cx, cy), pitch * 0.45, fc=colour, ec="white", lw=0.4, zorder=7, gid="threadblock"
            )
        )
        if len(group) > 1:
            ax.text(
                cx,
                cy,
                str(len(group)),
                ha="center",
                va="center",
                fontsize=4,
                color="white",
                zorder=8,
            )
    stack_patches = [p for p in ax.patches if p.get_gid() == "stack"]
    placed = pages[pages["gpu"] == gpu].groupby(["stack", "domain"])["pages"].sum()
    for stack, per_domain in placed.groupby(level=0):
        patch = stack_patches[int(stack)]
        total = int(per_domain.sum())
        main_domain = int(per_domain.droplevel(0).idxmax())
        if main_domain >= 0 and domains > 1:
            patch.set_edgecolor(domain_colour(main_domain, domains))
            patch.set_linewidth(2.5)
        ax.text(
            patch.get_x() + patch.get_width() / 2,
            patch.get_y() + patch.get_height() * 0.22,
            f"{total}p",
            ha="center",
            va="center",
            fontsize=5,
            zorder=8,
            gid="stack-pages",
        )
    return figure
