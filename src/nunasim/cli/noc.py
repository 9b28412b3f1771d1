"""``nunasim noc``: synthetic traffic on one socket's mesh, BookSim-style (docs/noc.md)."""

from __future__ import annotations

import json
import time

import click

from nunasim.cli.options import json_option, preset_option, seed_option
from nunasim.engine.noc import TRAFFIC_PATTERNS, NocResult, run_noc
from nunasim.errors import ConfigError
from nunasim.hardware import Mesh
from nunasim.io.presets import load_preset
from nunasim.units import format_frequency, format_time


def parse_router(text: str, mesh: Mesh) -> int:
    """``--hotspot X,Y``: a router of the mesh by its coordinates."""
    parts = text.split(",")
    try:
        x, y = (int(part) for part in parts)
    except ValueError:
        raise ConfigError(f"--hotspot takes a router as X,Y (e.g. 12,3), not {text!r}") from None
    if not mesh.contains(x, y):
        raise ConfigError(f"--hotspot ({x}, {y}) is off the {mesh.width} x {mesh.height} mesh")
    return mesh.router(x, y)


def parse_rates(text: str) -> list[float]:
    """``--rates 0.05,0.1,0.2``: a load sweep, in the order given."""
    try:
        rates = [float(part) for part in text.split(",")]
    except ValueError:
        raise ConfigError(f"--rates takes rates separated by commas, not {text!r}") from None
    return rates


@click.command("noc")
@preset_option
@click.option(
    "--traffic",
    default="uniform",
    show_default=True,
    help=f"Destination pattern: {', '.join(TRAFFIC_PATTERNS)}.",
)
@click.option(
    "--rate",
    type=float,
    default=0.1,
    show_default=True,
    help="Offered load in flits per router per NoC cycle, in (0, 1].",
)
@click.option(
    "--rates",
    "rates_text",
    default=None,
    help="A sweep instead of one rate: rates separated by commas (e.g. 0.05,0.1,0.2), "
    "one line (or JSON object) each, all with the same seed.",
)
@click.option("--packet-flits", type=int, default=1, show_default=True, help="Flits per packet.")
@click.option(
    "--cycles", type=int, default=10_000, show_default=True, help="Measurement window (cycles)."
)
@click.option(
    "--warmup", type=int, default=1_000, show_default=True, help="Warm-up before it (cycles)."
)
@seed_option
@click.option(
    "--hotspot-fraction",
    type=float,
    default=0.2,
    show_default=True,
    help="hotspot: share of packets sent to the hotspot router.",
)
@click.option(
    "--hotspot",
    "hotspot_text",
    default=None,
    help="hotspot: the hotspot router as X,Y (default: the mesh centre).",
)
@json_option
def noc_command(
    preset_name: str,
    traffic: str,
    rate: float,
    rates_text: str | None,
    packet_flits: int,
    cycles: int,
    warmup: int,
    seed: int,
    hotspot_fraction: float,
    hotspot_text: str | None,
    as_json: bool,
) -> None:
    """Inject synthetic traffic (Bernoulli, every router) into one socket's mesh and report
    packet latency and accepted throughput, to compare with published NoC simulators."""
    preset = load_preset(preset_name)
    socket = preset.socket
    mesh = socket.mesh
    hotspot = parse_router(hotspot_text, mesh) if hotspot_text is not None else None

    def one_run(offered: float) -> NocResult:
        return run_noc(
            socket,
            traffic=traffic,
            rate=offered,
            packet_flits=packet_flits,
            cycles=cycles,
            warmup=warmup,
            seed=seed,
            hotspot_fraction=hotspot_fraction,
            hotspot=hotspot,
        ).result()

    if rates_text is not None:
        rates = parse_rates(rates_text)
        results = [one_run(r) for r in rates]
        if as_json:
            click.echo(json.dumps([{"preset": preset.name, **r.as_dict()} for r in results]))
            return
        click.echo(
            f"{traffic} traffic on {preset.name}, {packet_flits}-flit packets, seed {seed} "
            f"(channel-load bound {results[0].channel_bound_flits_per_node_cycle:.4f}; "
            "flits/node/cycle, latency in cycles)\n"
            "      rate   offered  accepted   avg lat   p99 lat  saturated"
        )
        for r in results:
            click.echo(
                f"{r.rate:10.4g}{r.offered_flits_per_node_cycle:10.4f}"
                f"{r.accepted_flits_per_node_cycle:10.4f}{r.avg_latency_cycles:10.1f}"
                f"{r.p99_latency_cycles:10.1f}  {'yes' if r.saturated else 'no'}"
            )
        return
    started = time.perf_counter()
    result = one_run(rate)
    wall = time.perf_counter() - started
    summary = result.as_dict()
    summary.update(
        {
            "preset": preset.name,
            "mesh": [mesh.width, mesh.height],
            "noc_clock_hz": socket.noc_clock_hz,
            "link_flit_ps": socket.link_flit_ps,
            "hop_ps": socket.hop_ps,
            "wall_s": wall,
        }
    )
    if traffic == "hotspot":
        hot = hotspot if hotspot is not None else mesh.router(mesh.width // 2, mesh.height // 2)
        summary["hotspot"] = list(mesh.coord(hot))
        summary["hotspot_fraction"] = hotspot_fraction
    if as_json:
        click.echo(json.dumps(summary))
        return
    r = result
    pattern = traffic
    if traffic == "hotspot":
        x, y = summary["hotspot"]
        pattern = f"hotspot ({hotspot_fraction:g} to ({x}, {y}))"
    click.echo(
        f"{pattern} traffic on {preset.name}: {mesh.width} x {mesh.height} mesh, "
        f"{format_frequency(socket.noc_clock_hz)} NoC, {packet_flits}-flit packets, seed {seed}\n"
        f"  window         {cycles} cycles after {warmup} of warm-up; a link carries "
        f"{r.link_flits_per_cycle:.3f} flits/cycle ({format_time(socket.link_flit_ps)} each)\n"
        f"  offered        {r.offered_flits_per_node_cycle:.4f} flits/node/cycle "
        f"(asked {rate:g})\n"
        f"  accepted       {r.accepted_flits_per_node_cycle:.4f} flits/node/cycle "
        f"(channel-load bound {r.channel_bound_flits_per_node_cycle:.4f})\n"
        f"  latency        avg {r.avg_latency_cycles:.2f}, p99 {r.p99_latency_cycles:.2f}, "
        f"max {r.max_latency_cycles:.2f} cycles over {r.packets} packets "
        f"(zero-load {r.zero_load_latency_cycles:.2f})\n"
        f"  saturated      {'yes' if r.saturated else 'no'} (queueing delay grew "
        f"{r.latency_growth_cycles:.2f} cycles across the window)\n"
        f"  engine         {r.events} events in {wall:.3f} s"
    )
