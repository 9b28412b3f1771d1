"""A socket's floorplan as tables, the form that plots and result files read."""

from __future__ import annotations

import pandas as pd

from nunasim.hardware.socket import Socket


def floorplan_tables(socket: Socket, granularity: int | None = None) -> dict[str, pd.DataFrame]:
    """Tables ``dies``, ``routers``, ``links``, ``stacks`` and ``ports`` of ``socket``.

    With ``granularity`` the ``ports`` table carries each port's NAR domain; without it
    the domain column is -1.
    """
    mesh = socket.mesh
    if granularity is not None:
        socket.domain_ports(granularity, 0)  # refuses an invalid granularity early
    cu_count = {r: 0 for r in range(mesh.routers)}
    for router in socket.cu_routers:
        cu_count[router] = socket.cus_per_router
    routers = pd.DataFrame(
        {
            "router": list(range(mesh.routers)),
            "x": [mesh.coord(r)[0] for r in range(mesh.routers)],
            "y": [mesh.coord(r)[1] for r in range(mesh.routers)],
            "die": list(socket.die_of_router),
            "cus": [cu_count[r] for r in range(mesh.routers)],
        }
    )
    dies = pd.DataFrame(
        [
            {"die": i, "x0": d.x0, "y0": d.y0, "x1": d.x1, "y1": d.y1}
            for i, d in enumerate(socket.dies)
        ]
    )
    link_rows = []
    for link in mesh.links():
        src, dst = mesh.link_ends(link)
        link_rows.append(
            {
                "link": link,
                "src": src,
                "dst": dst,
                "x0": mesh.coord(src)[0],
                "y0": mesh.coord(src)[1],
                "x1": mesh.coord(dst)[0],
                "y1": mesh.coord(dst)[1],
                "crosses_dies": socket.crosses_dies(link),
            }
        )
    links = pd.DataFrame(link_rows)
    stacks = pd.DataFrame(
        [
            {
                "stack": i,
                "router": s.router,
                "x": mesh.coord(s.router)[0],
                "y": mesh.coord(s.router)[1],
                "bandwidth": s.bandwidth,
                "latency_ps": s.latency_ps,
            }
            for i, s in enumerate(socket.stacks)
        ]
    )
    ports = pd.DataFrame(
        [
            {
                "port": i,
                "router": p.router,
                "x": mesh.coord(p.router)[0],
                "y": mesh.coord(p.router)[1],
                "domain": -1 if granularity is None else socket.port_domain(granularity, i),
            }
            for i, p in enumerate(socket.ports)
        ]
    )
    return {"dies": dies, "routers": routers, "links": links, "stacks": stacks, "ports": ports}
