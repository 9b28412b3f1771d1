"""``nunasim simulate``: one collective, one configuration, the packet or the flow engine."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import click

from nunasim.cli.figures import check_figure_path, save_figure
from nunasim.cli.options import (
    config_option,
    file_option,
    given,
    json_option,
    layout_option,
    memory_option,
    parse_granularity,
    parse_threadblocks,
    preset_option,
    search_option,
    seed_option,
)
from nunasim.cli.progress import run_progress
from nunasim.collectives.builtins import COLLECTIVES, is_builtin_name
from nunasim.engine.base import AUTO, ENGINES
from nunasim.engine.result import SimResult
from nunasim.errors import ConfigError
from nunasim.experiments.plan_search import PlanReport, plan_report
from nunasim.experiments.sweep import Point, point_search, run_point, search_name
from nunasim.experiments.tbsearch import MAX_SEARCH_THREADS, default_threads
from nunasim.hardware import Preset
from nunasim.io.presets import load_preset
from nunasim.io.results import check_table_path, write_table
from nunasim.io.workloads import load_gemm_tile
from nunasim.scenario import Configuration
from nunasim.units import PS_PER_NS, format_size, parse_size


def _refuse_what_the_plan_fixes() -> None:
    """A plan file fixes the collective, the algorithm, the GPUs and the threadblocks: an
    option that would change them is a conflict, not something to ignore."""
    fixed = given("collective", "algorithm", "gpus", "tbs")
    if fixed:
        raise ConfigError(
            f"--plan fixes the collective, algorithm, GPUs and threadblocks; drop {fixed[0]}"
        )


@click.command("simulate")
@memory_option
@preset_option
@click.option(
    "--collective", type=click.Choice(COLLECTIVES), default="allgather", show_default=True
)
@click.option(
    "--algorithm",
    default="direct",
    show_default=True,
    help="Built-in algorithm (direct, ring, onepass).",
)
@click.option("--size", default="1MB", show_default=True, help="Collective size.")
@click.option("--gpus", type=int, default=8, show_default=True)
@config_option
@click.option(
    "--nar",
    default="auto",
    show_default=True,
    help="NAR domains (a valid granularity) or 'auto': a built-in's granularity comes from "
    "the threadblock search (--tbs auto); a --plan file's is searched by simulation "
    "(without a background GEMM), every granularity auto may use run to its end and the "
    "fastest kept, and the output gives "
    "each one's completion, the winner's speedup over the runner-up, the estimate's pick "
    "and baseline routing (1 domain), and UA's run of the plan (one more run): where UA is "
    "faster, the resource measured to be busier (or queue longer) than under UA.",
)
@click.option(
    "--tbs",
    default="auto",
    show_default=True,
    help="Threadblocks per GPU for a built-in, or 'auto': the best-performing count.",
)
@layout_option
@click.option(
    "--plan",
    "plan_file",
    default=None,
    help="An MSCCL XML or MSCCL++ JSON plan instead of a built-in (its threadblocks are "
    "its own; see --nar for its granularity).",
)
@seed_option
@click.option(
    "--gemm-tiles",
    type=int,
    default=0,
    show_default=True,
    help="Tiles per GPU of a background GEMM sharing the NoC and stacks.",
)
@click.option(
    "--gemm-tile",
    "gemm_tile_file",
    default=None,
    help="YAML file with the GEMM tile shape (default: the shipped gemm.yaml).",
)
@click.option(
    "--engine",
    type=click.Choice(ENGINES.choices()),
    default=AUTO,
    show_default=True,
    help="packet (every flit), flow (max-min fair flows, for large runs) or auto: packet "
    "up to its message limit or with a background GEMM, flow beyond.",
)
@search_option("fast")
@click.option(
    "--threads",
    type=click.IntRange(min=1, max=MAX_SEARCH_THREADS),
    default=None,
    help="Runs of the threadblock search (--tbs auto) that go on at once, beside the "
    f"preparation of the next candidates; the answer is the same (default: the cores, at "
    f"most {MAX_SEARCH_THREADS}).",
)
@json_option
@file_option(
    "--hist",
    help="Histogram of one-way store latency (Fig. 10 style).",
)
@file_option(
    "--heatmap",
    help="GPU 0's link, port and stack utilisation on its floorplan.",
)
@file_option(
    "--stores",
    "stores_path",
    help="Write every store's timeline as a table (.csv or .parquet).",
)
@file_option(
    "--resources",
    "resources_path",
    help="Write every resource's utilisation and queueing (.csv or .parquet).",
)
def simulate_command(
    preset_name: str,
    collective: str,
    algorithm: str,
    size: str,
    gpus: int,
    config_name: str,
    nar: str,
    tbs: str,
    layout: str,
    plan_file: str | None,
    seed: int,
    gemm_tiles: int,
    gemm_tile_file: str | None,
    engine: str,
    search: str,
    threads: int | None,
    as_json: bool,
    hist: Path | None,
    heatmap: Path | None,
    stores_path: Path | None,
    resources_path: Path | None,
) -> None:
    """Simulate a collective at flit granularity and report completion time, store latency
    and where the time went."""
    if plan_file:
        _refuse_what_the_plan_fixes()
    if gemm_tile_file and not gemm_tiles:
        raise ConfigError(
            "--gemm-tile shapes the tiles of a background GEMM, and there is none: give "
            "--gemm-tiles too, or drop --gemm-tile"
        )
    for picture in (hist, heatmap):
        check_figure_path(picture)
    for table in (stores_path, resources_path):
        if table is not None:
            check_table_path(table)
    preset = load_preset(preset_name)
    tile = load_gemm_tile(gemm_tile_file) if gemm_tiles or gemm_tile_file else None
    point = Point(
        plan=plan_file or f"{collective}:{algorithm}",
        size=parse_size(size),
        configuration=Configuration.parse(config_name, parse_granularity(nar)),
        gpus=None if plan_file else gpus,
        threadblocks=None if plan_file else parse_threadblocks(tbs),
        seed=seed,
        layout=layout,
        gemm_tiles=gemm_tiles,
        gemm_tile=tile,
        engine=engine,
        search=search,
    )
    if threads is None:
        threads = default_threads()
    if point.threadblocks == "auto" and engine != AUTO:
        # The search's runs split the work over more threadblocks, never fewer lines, than
        # the plan at its own count: if that does not fit, none does, and the search that
        # would build every candidate first is not worth starting.
        base = point.base_plan()
        ENGINES[engine].admit(base, base.chunk_bytes(point.size), preset.pod.socket)
    # Progress: on a terminal a bar naming the search's candidate and its best so far; in a
    # log a line every PLAIN_EVERY_S (none for a quicker run); nothing when --json goes to
    # a pipe (the caller reads the output, not the progress).
    if as_json and not sys.stdout.isatty() and not sys.stderr.isatty():
        result, report = _run(point, preset, None, threads)
    else:
        with run_progress("simulate", counting=False, first="placing") as progress:
            result, report = _run(point, preset, progress, threads)
    granularity = result.info.granularity
    plan_name, nbytes = result.info.plan, point.size
    pod = preset.fit(result.info.gpus).pod
    summary = result.summary()
    summary.update(
        {
            "config": config_name,
            "granularity": granularity,
            "plan": plan_name,
            "size_bytes": nbytes,
            "preset": preset.name,
            "search": search_name(point),
        }
    )
    if hist is not None:
        from nunasim.plotting.latency import draw_latency_histograms  # matplotlib is slow to load

        save_figure(
            draw_latency_histograms(
                {config_name: result.stores}, f"{plan_name} at {format_size(nbytes)}"
            ),
            hist,
        )
    if heatmap is not None:
        from nunasim.hardware.tables import floorplan_tables
        from nunasim.plotting.heatmap import draw_heatmap

        figure = draw_heatmap(
            floorplan_tables(pod.socket, granularity if granularity > 1 else None),
            result.resources,
            0,
            f"{plan_name} at {format_size(nbytes)}, {config_name}: GPU 0 utilisation",
        )
        save_figure(figure, heatmap)
    if stores_path is not None:
        write_table(result.stores, stores_path)
    if resources_path is not None:
        write_table(result.resources, resources_path)
    if report is not None:
        summary.update(report.summary())
    if as_json:
        click.echo(json.dumps(summary))
        return
    latency, parts = summary["store_latency_ns"], summary["store_breakdown_ns"]
    click.echo(
        f"{plan_name} at {format_size(nbytes)} on {preset.name}, {config_name} "
        f"({point.configuration.describe_domains(granularity)})\n"
        f"  completion     {summary['completion_ns']:.1f} ns (lower bound "
        f"{summary['lower_bound_ns']:.1f} ns)\n"
        f"  store latency  mean {latency['mean']:.1f}, p50 {latency['p50']:.1f}, p99 "
        f"{latency['p99']:.1f}, max {latency['max']:.1f} ns over {summary['stores']} stores\n"
        f"  breakdown      " + ", ".join(f"{k} {v:.1f}" for k, v in parts.items()) + " ns\n"
        f"  engine         {summary['engine']}: {summary['events']} events in "
        f"{summary['wall_s']:.3f} s"
        + (
            f"\n  search         {point.search}: {result.info.threadblocks} threadblocks per GPU"
            if point.searched and is_builtin_name(point.plan)
            else ""
        )
    )
    if report is not None:
        click.echo(_describe_report(report, background=gemm_tiles > 0))


def _run(
    point: Point, preset: Preset, progress: Callable[[str], None] | None, threads: int
) -> tuple[SimResult, PlanReport | None]:
    """The point's run and, for a plan file whose granularity was searched, its report."""
    result = run_point(point, preset, progress, threads)
    best = point_search(point, preset) if not is_builtin_name(point.plan) else None
    if best is None:
        return result, None
    return result, plan_report(point, preset, best, result, progress)  # the search is cached


def _describe_report(report: PlanReport, background: bool = False) -> str:
    """The granularity search's lines and the comparison with UA (``background``: the runs
    have a GEMM beside them, which the search's runs had not)."""
    search = report.search
    tried = ", ".join(f"{g}: {ps / PS_PER_NS:,.1f}" for g, ps in search.completions.items())
    gains = [
        (f"runner-up {search.runner_up}", search.speedup_over(search.runner_up)),
        (f"the estimate's {search.estimated}", search.speedup_over(search.estimated)),
        ("baseline routing (1)", search.speedup_over(1)),
    ]
    over = ", ".join(f"{x:.3f}x over {name}" for name, x in gains if x is not None)
    reference = report.reference.completion_ps / PS_PER_NS
    lines = [
        f"  granularity    {search.winner} domains, the fastest of every granularity "
        f"simulated ({tried} ns{', without the GEMM' if background else ''})",
        f"  speedup        {over or 'one granularity to try'}",
        f"  against UA     UA {reference:,.1f} ns: {report.speedup:.3f}x",
    ]
    if report.speedup < 1:
        measured = "no resource is busier or queues longer than under UA"
        lines.append(f"  slower, since  {report.cause.describe() if report.cause else measured}")
    return "\n".join(lines)
