"""``nunasim preset list`` and ``nunasim preset show``."""

from __future__ import annotations

import json

import click

from nunasim.cli.options import json_option
from nunasim.hardware import Preset
from nunasim.hardware.summary import HopStats, summarise
from nunasim.io.presets import list_presets, load_preset
from nunasim.units import format_bandwidth, format_flops, format_frequency, format_time


@click.group()
def preset() -> None:
    """Hardware presets: the shipped ones, or your own YAML file."""


@preset.command("list")
def list_command() -> None:
    """List the shipped presets."""
    for item in list_presets():
        s = item.socket
        click.echo(
            f"{item.name:<14} {s.mesh.width} x {s.mesh.height} mesh, {len(s.dies)} dies, "
            f"{s.cus} CUs, {len(s.stacks)} HBM stacks, {len(s.ports)} I/O ports"
        )


@preset.command("show")
@click.argument("name_or_file")
@json_option
def show_command(name_or_file: str, as_json: bool) -> None:
    """Show a preset's parameters and derived figures."""
    item = load_preset(name_or_file)
    if as_json:
        click.echo(json.dumps(summarise(item).as_dict(), indent=2))
    else:
        click.echo(render(item))


def _hops(stats: HopStats, hop_ps: int) -> str:
    return (
        f"avg {stats.average:.2f} hops ({format_time(round(stats.average * hop_ps))}), "
        f"worst {stats.worst} ({format_time(stats.worst * hop_ps)}), best {stats.best}"
    )


def render(item: Preset) -> str:
    s, pod, summary = item.socket, item.pod, summarise(item)
    stack_bw = {st.bandwidth for st in s.stacks}
    stack_lat = {st.latency_ps for st in s.stacks}
    per_stack = f"{format_bandwidth(next(iter(stack_bw)))} each" if len(stack_bw) == 1 else "mixed"
    latency = format_time(next(iter(stack_lat))) if len(stack_lat) == 1 else "mixed latency"
    flops = ", ".join(f"{format_flops(rate)} {dtype}" for dtype, rate in s.flops)
    granularities = ", ".join(map(str, summary.nar_granularities))
    lines = [
        f"{item.name}  ({item.source})",
        *(f"  {line}" for line in item.description.splitlines() if line),
        "",
        "Socket",
        f"  mesh               {s.mesh.width} x {s.mesh.height} routers, {summary.dies} dies",
        f"  compute            {summary.cus} CUs ({s.cus_per_router} per router on "
        f"{len(s.cu_routers)} routers), {s.outstanding_requests} outstanding requests per CU, "
        f"L1 {format_time(s.l1_latency_ps)}",
        f"  compute rate       {flops}",
        f"  NoC                {format_frequency(s.noc_clock_hz)}, "
        f"{s.cycles_per_hop} cycles per hop ({format_time(s.hop_ps)}), "
        f"{s.routing.upper()} routing, {format_bandwidth(s.link_bandwidth)} per link per direction",
        f"  bisection          {format_bandwidth(summary.bisection_bandwidth)} "
        f"({summary.bisection_links} directed links across the middle cut)",
        f"  memory             {summary.stacks} HBM stacks, "
        f"{format_bandwidth(summary.hbm_bandwidth)} in all ({per_stack}), {latency} access; "
        f"{s.line_bytes} B lines, {s.page_bytes} B pages",
        f"  I/O                {summary.ports} I/O ports, "
        f"{format_bandwidth(summary.port_bandwidth_total)} of ports per direction "
        f"({format_bandwidth(pod.port_bandwidth)} each)",
        f"  NAR granularities  {granularities}",
        "",
        "Pod",
        f"  {pod.sockets} sockets, {pod.planes} switch planes (single-level Clos, plane p joins "
        f"port p), {format_time(pod.plane_latency_ps)} port to port",
        "",
        "Zero-load distances",
        f"  CU -> port         {_hops(summary.cu_to_port, s.hop_ps)}",
        f"  port -> stack      {_hops(summary.port_to_stack, s.hop_ps)}",
        f"  CU -> stack        {_hops(summary.cu_to_stack, s.hop_ps)}",
    ]
    return "\n".join(lines)
