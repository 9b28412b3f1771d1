"""Where the traffic went: one GPU's link and port utilisation drawn on its floorplan.

Reads the floorplan tables and a run's ``resources`` table (kind, gpu, index, utilisation).
Each directed link is drawn as an arrow offset to its side of the mesh line, coloured by
utilisation; each port by its egress utilisation; each stack by its utilisation.
"""

from __future__ import annotations

import pandas as pd
from matplotlib import colormaps
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from matplotlib.figure import Figure

from nunasim.plotting.floorplan import draw_floorplan


def draw_heatmap(
    floorplan: dict[str, pd.DataFrame], resources: pd.DataFrame, gpu: int, title: str
) -> Figure:
    figure = draw_floorplan(floorplan, title)
    ax = figure.axes[0]
    mine = resources[resources["gpu"] == gpu]
    peak = float(mine["utilisation"].max()) if len(mine) else 0.0
    norm = Normalize(0.0, max(peak, 1e-9))
    cmap = colormaps["inferno_r"]

    links = floorplan["links"].set_index("link")
    used = mine[mine["kind"] == "link"].set_index("index")["utilisation"]
    for link, row in links.iterrows():
        value = float(used.get(link, 0.0))
        if value <= 0:
            continue
        dx, dy = row.x1 - row.x0, row.y1 - row.y0
        side = 0.12  # two directions of one mesh line, side by side
        ox, oy = -dy * side, dx * side
        ax.annotate(
            "",
            xy=(row.x1 - dx * 0.3 + ox, row.y1 - dy * 0.3 + oy),
            xytext=(row.x0 + dx * 0.3 + ox, row.y0 + dy * 0.3 + oy),
            arrowprops={"arrowstyle": "-|>", "color": cmap(norm(value)), "lw": 2.0},
            zorder=6,
            gid="link-load",
        )
    port_patches = [p for p in ax.patches if p.get_gid() == "port"]
    egress = mine[mine["kind"] == "port"].set_index("index")["utilisation"]
    for port, patch in enumerate(port_patches):
        patch.set_facecolor(cmap(norm(float(egress.get(port, 0.0)))))
    stack_patches = [p for p in ax.patches if p.get_gid() == "stack"]
    stacks = mine[mine["kind"] == "stack"].set_index("index")["utilisation"]
    for stack, patch in enumerate(stack_patches):
        patch.set_facecolor(cmap(norm(float(stacks.get(stack, 0.0)))))
    bar = figure.colorbar(ScalarMappable(norm, cmap), ax=ax, fraction=0.025, pad=0.01)
    bar.set_label("utilisation over the collective", fontsize=8)
    return figure
