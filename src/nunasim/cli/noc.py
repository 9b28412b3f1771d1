"""``nunasim noc``: synthetic traffic on one socket's mesh, BookSim-style (docs/noc.md)."""

from __future__ import annotations

import json
import math
import re
import sys
import time
from pathlib import Path

import click

from nunasim.cli.figures import check_figure_path, save_figure
from nunasim.cli.options import file_option, json_option, preset_option, seed_option
from nunasim.cli.progress import SweepProgress
from nunasim.engine.noc.run import RATE_UNITS, TRAFFIC_PATTERNS, NocResult, Pattern
from nunasim.engine.noc.saturation import saturation
from nunasim.errors import ConfigError
from nunasim.experiments.noc_curve import CurveSpec, curve_table, default_workers, sweep
from nunasim.hardware import Mesh
from nunasim.io.presets import load_preset
from nunasim.units import format_frequency, format_time

# A sweep's points beyond this many are refused (a typo in a range's step).
MAX_SWEEP_POINTS = 1000


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


def parse_hotspots(texts: tuple[str, ...], mesh: Mesh) -> tuple[tuple[int, float], ...]:
    """``--hotspot X,Y[:W]``, repeated or as one list separated by spaces or semicolons:
    hotspot routers with their weights (1 by default)."""
    spots = []
    for text in texts:
        for item in filter(None, re.split(r"[;\s]+", text)):
            where, _, weight = item.partition(":")
            try:
                share = float(weight) if weight else 1.0
            except ValueError:
                raise ConfigError(f"--hotspot weight must be a number, not {weight!r}") from None
            if not (share > 0 and math.isfinite(share)):
                raise ConfigError(f"--hotspot weight must be positive, not {weight!r}")
            spots.append((parse_router(where, mesh), share))
    if len({router for router, _ in spots}) != len(spots):
        raise ConfigError("--hotspot names a router twice")
    return tuple(spots)


def parse_rates(text: str) -> list[float]:
    """``--rates 0.05,0.1,0.2`` (in the order given) or ``--rates 0.02:0.40:0.02`` (start,
    stop and step; the stop is included when the steps reach it)."""
    if ":" in text:
        try:
            start, stop, step = (float(part) for part in text.split(":"))
        except ValueError:
            raise ConfigError(
                f"--rates takes a range as START:STOP:STEP (e.g. 0.02:0.4:0.02), not {text!r}"
            ) from None
        if not (step > 0 and math.isfinite(step) and math.isfinite(start)) or stop < start:
            raise ConfigError(f"--rates {text}: the step must be positive and STOP >= START")
        count = math.floor((stop - start) / step + 1e-9) + 1
        if count > MAX_SWEEP_POINTS:
            raise ConfigError(
                f"--rates {text} has {count:,} points, more than {MAX_SWEEP_POINTS:,}"
            )
        return [round(start + i * step, 12) for i in range(count)]
    try:
        rates = [float(part) for part in text.split(",")]
    except ValueError:
        raise ConfigError(f"--rates takes rates separated by commas, not {text!r}") from None
    if len(rates) > MAX_SWEEP_POINTS:
        raise ConfigError(f"--rates has {len(rates):,} points, more than {MAX_SWEEP_POINTS:,}")
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
    help="Offered load per router per NoC cycle (in --rate-unit), in (0, 1].",
)
@click.option(
    "--rates",
    "rates_text",
    default=None,
    help="A latency-throughput sweep instead of one rate: rates separated by commas "
    "(0.05,0.1,0.2) or a range START:STOP:STEP (0.02:0.4:0.02), all with the same seed.",
)
@click.option(
    "--rate-unit",
    default="flits",
    show_default=True,
    help=f"Unit of the injection rate per node per cycle: {' or '.join(RATE_UNITS)}.",
)
@click.option("--packet-flits", type=int, default=1, show_default=True, help="Flits per packet.")
@click.option(
    "--cycles", type=int, default=10_000, show_default=True, help="Measurement window (cycles)."
)
@click.option(
    "--warmup", type=int, default=1_000, show_default=True, help="Warm-up before it (cycles)."
)
@click.option(
    "--drain",
    type=int,
    default=None,
    help="Stop at most this many cycles after the window; a point whose packets have not "
    "all arrived by then is unstable (default: wait for every one).",
)
@seed_option
@click.option(
    "--hotspot-fraction",
    type=float,
    default=0.2,
    show_default=True,
    help="hotspot: share of packets sent to the hotspot routers.",
)
@click.option(
    "--hotspot",
    "hotspot_texts",
    multiple=True,
    help="hotspot: a hotspot router as X,Y or X,Y:WEIGHT; repeat it or give a list "
    "('1,1:2 6,6:1') for several (default: the mesh centre).",
)
@click.option(
    "--self-traffic/--no-self-traffic",
    default=False,
    show_default=True,
    help="May a packet's destination be its own router? uniform and hotspot: among the "
    "uniform choices; permutations: routers mapped to themselves inject (as BookSim's do).",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Sweep points run at once, in worker processes (default: the number of cores).",
)
@file_option("--table", "table_path", help="Write the sweep as a table (.csv or .parquet).")
@file_option("--plot", "plot_path", help="Draw the sweep's curves (.png, .svg or .pdf).")
@json_option
def noc_command(
    preset_name: str,
    traffic: str,
    rate: float,
    rates_text: str | None,
    rate_unit: str,
    packet_flits: int,
    cycles: int,
    warmup: int,
    drain: int | None,
    seed: int,
    hotspot_fraction: float,
    hotspot_texts: tuple[str, ...],
    self_traffic: bool,
    workers: int | None,
    table_path: Path | None,
    plot_path: Path | None,
    as_json: bool,
) -> None:
    """Inject synthetic traffic (Bernoulli, every router) into one socket's mesh and report
    packet latency and accepted throughput, to compare with published NoC simulators."""
    preset = load_preset(preset_name)
    socket = preset.socket
    mesh = socket.mesh
    pattern = Pattern(traffic, hotspot_fraction, parse_hotspots(hotspot_texts, mesh), self_traffic)
    spec = CurveSpec(socket, pattern, packet_flits, cycles, warmup, seed, rate_unit, drain)
    if rates_text is None and (table_path is not None or plot_path is not None):
        raise ConfigError("--table and --plot draw a sweep: give --rates")
    if rates_text is not None:
        rates = parse_rates(rates_text)
        if table_path is not None:
            from nunasim.io.results import check_table_path

            check_table_path(table_path)
        check_figure_path(plot_path)
        _sweep(
            spec, preset.name, rates, workers or default_workers(), as_json, table_path, plot_path
        )
        return
    spec.check(rate)
    started = time.perf_counter()
    result = spec.run(rate)
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
        weights = pattern.hotspot_weights(mesh)
        summary["hotspots"] = [
            [*mesh.coord(int(r)), float(weights[r])] for r in weights.nonzero()[0]
        ]
        summary["hotspot_fraction"] = hotspot_fraction
    if as_json:
        click.echo(json.dumps(summary))
        return
    r = result
    click.echo(
        f"{r.pattern} traffic on {preset.name}: {mesh.width} x {mesh.height} mesh, "
        f"{format_frequency(socket.noc_clock_hz)} NoC, {packet_flits}-flit packets, seed {seed}\n"
        f"  window         {cycles} cycles after {warmup} of warm-up; a link carries "
        f"{r.link_flits_per_cycle:.3f} flits/cycle ({format_time(socket.link_flit_ps)} each)\n"
        f"  offered        {r.offered_flits_per_node_cycle:.4f} flits/node/cycle "
        f"(asked {rate:g} {rate_unit}/node/cycle, Bernoulli)\n"
        f"  accepted       {r.accepted_flits_per_node_cycle:.4f} flits/node/cycle "
        f"(channel-load bound {r.channel_bound_flits_per_node_cycle:.4f}; ejected in the "
        f"window {r.ejected_flits_per_node_cycle:.4f})\n"
        f"  latency        avg {r.avg_latency_cycles:.2f}, p99 {r.p99_latency_cycles:.2f}, "
        f"max {r.max_latency_cycles:.2f} cycles over {r.packets} packets "
        f"(zero-load {r.zero_load_latency_cycles:.2f})\n"
        f"  saturated      {'yes' if r.saturated else 'no'} (queueing delay grew "
        f"{r.latency_growth_cycles:.2f} cycles across the window; drained "
        f"{r.drain_cycles} cycles after it{'' if r.drained else ', cut at the drain limit'})\n"
        f"  engine         {r.events} events in {wall:.3f} s"
    )


def _sweep(
    spec: CurveSpec,
    preset: str,
    rates: list[float],
    workers: int,
    as_json: bool,
    table_path: Path | None,
    plot_path: Path | None,
) -> None:
    # As the sweep commands show it: a bar on a terminal, a line every ten seconds in a log,
    # nothing when --json goes to a pipe (the caller reads the output, not the progress).
    tracker = None if as_json and not sys.stdout.isatty() else SweepProgress("noc")

    def progress(k: int, total: int, r: NocResult) -> None:
        if tracker is not None:
            state = "unstable" if r.saturated else f"latency {r.avg_latency_cycles:.1f}"
            tracker.advance(
                f"rate {r.rate:g}, accepted {r.accepted_flits_per_node_cycle:.4f}, {state}"
            )

    for rate in rates:  # a refused rate prints its error alone, before any progress
        spec.check(rate)
    if tracker is not None:
        tracker.start(len(rates), 0)
    try:
        results = sweep(spec, rates, workers, progress)
    finally:
        if tracker is not None:
            tracker.close()
    table = curve_table(results, preset)
    marks = saturation(
        table["offered_flits_per_node_cycle"].to_numpy(),
        table["accepted_flits_per_node_cycle"].to_numpy(),
        table["avg_latency_cycles"].to_numpy(),
        results[0].pattern_zero_load_cycles,
        table["saturated"].to_numpy(dtype=bool),
    )
    title = f"{results[0].pattern} traffic on {preset}, {spec.packet_flits}-flit packets"
    if table_path is not None:
        from nunasim.io.results import write_table

        write_table(table, table_path)
    if plot_path is not None:
        from nunasim.plotting.noc_curve import draw_noc_curve

        save_figure(draw_noc_curve(table, title), plot_path)
    if as_json:
        click.echo(json.dumps([{"preset": preset, **r.as_dict()} for r in results]))
        return
    first = results[0]
    if marks.load is None:
        mark = "latency stays below 2 x zero-load at these rates"
    elif marks.load_high is not None:
        mark = f"between offered {marks.load:.4f} (stable) and {marks.load_high:.4f} (unstable)"
    else:
        mark = f"2 x zero-load latency at offered {marks.load:.4f}"
    if marks.overload_accepted is not None:
        mark += f", accepted {marks.overload_accepted:.4f} at offered {marks.overload_offered:.4f}"
    click.echo(
        f"{title}, seed {spec.seed}, rates in {spec.rate_unit}/node/cycle (channel-load bound "
        f"{first.channel_bound_flits_per_node_cycle:.4f}, zero-load latency "
        f"{first.pattern_zero_load_cycles:.1f}; saturation: {mark}; throughputs in "
        "flits/node/cycle, latency in cycles)\n"
        "      rate   offered  accepted   avg lat   p99 lat  state"
    )
    for r in results:
        if r.saturated:  # no settled average to print
            latency = f"{'-':>10}{'-':>10}  unstable"
        else:
            latency = f"{r.avg_latency_cycles:10.1f}{r.p99_latency_cycles:10.1f}  stable"
        click.echo(
            f"{r.rate:10.4g}{r.offered_flits_per_node_cycle:10.4f}"
            f"{r.accepted_flits_per_node_cycle:10.4f}{latency}"
        )
