"""``nunasim place``: place a plan's threadblocks and pages under one configuration."""

from __future__ import annotations

import json
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
    preset_option,
    seed_option,
)
from nunasim.errors import ConfigError
from nunasim.io.placement_json import check_placement_path, write_placement
from nunasim.io.plans import load_plan
from nunasim.io.presets import load_preset
from nunasim.policies.configurations import configuration
from nunasim.policies.stats import placement_stats
from nunasim.scenario import Configuration, Scenario
from nunasim.units import format_bytes, format_size


@click.command("place")
@memory_option
@click.argument("plan_name", metavar="PLAN")
@click.option("--size", default="1MB", show_default=True, help="Collective size.")
@preset_option
@config_option
@click.option(
    "--nar",
    "nar",
    default="auto",
    show_default=True,
    help="NAR domains (a valid granularity of the preset) or 'auto'.",
)
@seed_option
@click.option(
    "--group-by",
    "grouping",
    default="all",
    show_default=True,
    type=click.Choice(["communication", "all"]),
    help="Chunks that group threadblocks in NAP's logical allocation.",
)
@layout_option
@file_option(
    "-o",
    "--output",
    help="Write the placement as JSON a runtime could consume.",
)
@file_option(
    "--png",
    help="Draw GPU 0's placement on the floorplan.",
)
@json_option
def place_command(
    plan_name: str,
    size: str,
    preset_name: str,
    config_name: str,
    nar: str,
    seed: int,
    grouping: str,
    layout: str,
    output: Path | None,
    png: Path | None,
    as_json: bool,
) -> None:
    """Place PLAN (a built-in or a plan file) under a configuration (UA, UA+NAR, NUMA,
    NUMA+NAR, NAP, NAP+NAR, NAP*, NAP*+NAR) and report zero-load hop statistics."""
    if given("grouping") and configuration(config_name).threadblocks == "UA":
        raise ConfigError(
            f"--group-by groups the chunks of NAP's and NUMA's logical allocation; "
            f"{config_name} places threadblocks without it (drop --group-by)"
        )
    check_figure_path(png)
    if output is not None:
        check_placement_path(output)
    preset = load_preset(preset_name)
    plan = load_plan(plan_name)
    scenario = Scenario(
        preset,
        plan,
        size,
        Configuration.parse(config_name, parse_granularity(nar)),
        seed=seed,
        grouping=grouping,
        layout=layout,
    )
    pod, nbytes = scenario.pod, scenario.size
    placement = scenario.placement()  # proves the plan first
    stats = placement_stats(plan, placement)
    if output is not None:
        write_placement(output, placement, plan.name, preset.name)
    if png is not None:
        # Drawing needs matplotlib, which is slow to import: only when asked for.
        from nunasim.hardware.tables import floorplan_tables
        from nunasim.mapping.tables import page_table, threadblock_table
        from nunasim.plotting.placement import draw_placement

        socket = pod.socket
        domains = placement.granularity if placement.granularity > 1 else 0
        figure = draw_placement(
            floorplan_tables(socket, placement.granularity if domains else None),
            threadblock_table(placement),
            page_table(placement),
            0,
            placement.granularity,
            f"{plan.name} at {format_size(nbytes)}, {config_name} "
            f"({scenario.configuration.describe_domains(placement.granularity)}), GPU 0",
        )
        save_figure(figure, png)
    if as_json:
        click.echo(json.dumps(stats.as_dict()))
        return
    click.echo(
        f"{plan.name} at {format_size(nbytes)} on {preset.name}, {config_name} "
        f"({scenario.configuration.describe_domains(placement.granularity)})\n"
        f"  CU -> port     avg {stats.avg_cu_port_hops:.2f} hops, worst {stats.max_cu_port_hops}\n"
        f"  port -> stack  avg {stats.avg_port_stack_hops:.2f} hops, worst "
        f"{stats.max_port_stack_hops}\n"
        f"  budgets        busiest CU {stats.cu_budget_max_use:.0%}, busiest stack "
        f"{stats.stack_budget_max_use:.0%}; {stats.fallback_threadblocks} threadblocks and "
        f"{stats.fallback_chunks} chunks over budget\n"
        f"  ports          busiest (GPU, port) {stats.port_lines_max} lines, mean "
        f"{stats.port_lines_mean:.1f}; per domain {list(stats.domain_lines)}\n"
        f"  layout         {stats.layout}, {format_bytes(stats.padding_bytes)} of padding"
    )
    if stats.fallback_threadblocks or stats.fallback_chunks:
        click.echo(
            "  (over budget: Algorithm 1 ran out of room on the nearest CUs or stacks and "
            "spilled to farther ones, or stacked more on the nearest; what queues there "
            "shows in `nunasim simulate --resources`; docs/policies.md, Budgets)"
        )
