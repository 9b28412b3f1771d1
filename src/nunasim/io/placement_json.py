"""A placement as the JSON a runtime could consume (format ``nunasim-placement/1``).

Per GPU: each threadblock's CU and CU mask (a hexadecimal bit mask with the CU's bit set,
and ``hip_cu_mask``, the 32-bit words ``hipExtStreamCreateWithCUMask`` takes), the GPU's
CUs as an ``HSA_CU_MASK`` list (and the whole pod's ``HSA_CU_MASK`` value at the top), and
runs of pages of each buffer with the stack, segment and NAR domain that back them and the
first physical frame of the run in its region. The regions
list gives each region's base line address (``region << 40``) and the ports its lines may
leave through, so a driver can map the pages and program the address-to-port hash.
"""

from __future__ import annotations

import json
from pathlib import Path

from nunasim.io.cu_masks import cu_mask_words, hsa_cu_mask, id_list
from nunasim.io.files import check_output, write_atomically
from nunasim.mapping.address import REGION_SHIFT
from nunasim.mapping.placement import Placement
from nunasim.mapping.tables import page_table, threadblock_table

FORMAT = "nunasim-placement/1"


def placement_document(placement: Placement, plan_name: str, preset_name: str) -> dict:
    amap = placement.address_map
    tbs = threadblock_table(placement)
    pages = page_table(placement)
    total_cus = placement.socket.cus
    gpus, cus_per_gpu = [], {}
    for g in range(len(placement.gpus)):
        mine = tbs[tbs["gpu"] == g]
        cus_per_gpu[g] = {int(cu) for cu in mine["cu"]}
        gpus.append(
            {
                "gpu": g,
                "cus": id_list(cus_per_gpu[g]) if cus_per_gpu[g] else "",
                "threadblocks": [
                    {
                        "tb": int(r.tb),
                        "cu": int(r.cu),
                        "cu_mask": hex(1 << int(r.cu)),
                        "hip_cu_mask": cu_mask_words([int(r.cu)], total_cus),
                        "domain": int(r.domain),
                    }
                    for r in mine.itertuples()
                ],
                "pages": [
                    {k: (v if isinstance(v, str) else int(v)) for k, v in row.items() if k != "gpu"}
                    for row in pages[pages["gpu"] == g].to_dict(orient="records")
                ],
            }
        )
    return {
        "format": FORMAT,
        "plan": plan_name,
        "preset": preset_name,
        "config": placement.config.name,
        "threadblock_policy": placement.config.threadblocks,
        "page_policy": placement.config.pages,
        "routing": "NAR" if placement.config.nar and placement.granularity > 1 else "baseline",
        "granularity": placement.granularity,
        "size_bytes": placement.size,
        "chunk_bytes": placement.chunk_bytes,
        "page_bytes": placement.socket.page_bytes,
        "line_bytes": placement.socket.line_bytes,
        "seed": placement.seed,
        "cus_per_gpu": total_cus,
        "hsa_cu_mask": hsa_cu_mask(cus_per_gpu),
        "regions": [
            {
                "region": i,
                "segment": r.segment,
                "granularity": r.granularity,
                "domain": r.domain,
                "stack": r.stack,
                "first_port": r.first_port,
                "ports": r.ports,
                "base_line_address": i << REGION_SHIFT,
            }
            for i, r in enumerate(amap.regions)
        ],
        "gpus": gpus,
    }


def check_placement_path(path: str | Path) -> Path:
    """Refuse, before placing, a path ``write_placement`` could not write."""
    return check_output(path, (".json",), "a placement")


def write_placement(
    path: str | Path, placement: Placement, plan_name: str, preset_name: str
) -> None:
    text = json.dumps(placement_document(placement, plan_name, preset_name), indent=1)
    write_atomically(check_placement_path(path), lambda tmp: tmp.write_text(text + "\n"))
