"""A placement as tables: one row per threadblock, one row per run of pages."""

from __future__ import annotations

import pandas as pd

from nunasim.mapping.placement import BUFFERS, Placement


def threadblock_table(placement: Placement) -> pd.DataFrame:
    """One row per threadblock: its CU, router, position and NAR domain."""
    socket = placement.socket
    rows = []
    for g, gpu in enumerate(placement.gpus):
        for tb, cu in enumerate(gpu.tb_cu):
            router = socket.cu_router(int(cu))
            x, y = socket.mesh.coord(router)
            rows.append(
                {
                    "gpu": g,
                    "tb": tb,
                    "cu": int(cu),
                    "router": router,
                    "x": x,
                    "y": y,
                    "domain": int(gpu.tb_domain[tb]),
                }
            )
    return pd.DataFrame(rows, columns=["gpu", "tb", "cu", "router", "x", "y", "domain"])


def page_table(placement: Placement) -> pd.DataFrame:
    """Runs of consecutive pages of one buffer in one region with consecutive frames."""
    amap = placement.address_map
    rows = []
    for g, gpu in enumerate(placement.gpus):
        for buffer in BUFFERS:
            pages = gpu.buffers[buffer]
            start = 0
            count = len(pages.region)
            for page in range(1, count + 1):
                if (
                    page < count
                    and pages.region[page] == pages.region[page - 1]
                    and (pages.frame[page] == pages.frame[page - 1] + 1)
                ):
                    continue
                region = amap.regions[int(pages.region[start])]
                rows.append(
                    {
                        "gpu": g,
                        "buffer": str(buffer),
                        "first_page": start,
                        "pages": page - start,
                        "region": int(pages.region[start]),
                        "stack": region.stack,
                        "segment": region.segment,
                        "domain": region.domain,
                        "first_frame": int(pages.frame[start]),
                    }
                )
                start = page
    return pd.DataFrame(
        rows,
        columns=[
            "gpu",
            "buffer",
            "first_page",
            "pages",
            "region",
            "stack",
            "segment",
            "domain",
            "first_frame",
        ],
    )
