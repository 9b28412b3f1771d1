"""``nunasim fig9``: speedups over UA across collectives, sizes and pod sizes (Fig. 9)."""

from __future__ import annotations

from pathlib import Path

import click

from nunasim.cli.figures import check_figure_path, save_figure
from nunasim.cli.options import file_option, memory_option, preset_option, search_option
from nunasim.cli.progress import run_progress
from nunasim.errors import ConfigError
from nunasim.experiments.microbench import speedup_table
from nunasim.io.presets import load_preset
from nunasim.io.results import check_table_path, write_table
from nunasim.units import format_size, parse_size


def _list(option: str, text: str) -> list[str]:
    """A comma-separated option's values; an empty list or an empty value is refused."""
    parts = [part.strip() for part in text.split(",")]
    if not any(parts):
        raise ConfigError(f"{option} needs at least one value")
    if not all(parts):
        raise ConfigError(f"{option} {text!r} has an empty value")
    return parts


def _unique(option: str, texts: list[str], values: list[object]) -> list:
    """``values`` (parsed from ``texts``), refusing two that are the same: the table's rows
    are indexed by them."""
    first: dict[object, str] = {}
    for text, value in zip(texts, values, strict=True):
        if value in first:
            same = (
                f"{first[value]!r} twice"
                if first[value] == text
                else (f"{first[value]!r} and {text!r}, the same value")
            )
            raise ConfigError(f"{option} gives {same}")
        first[value] = text
    return values


@click.command("fig9")
@memory_option
@preset_option
@click.option("--collectives", default="allgather,allreduce,alltoall", show_default=True)
@click.option("--sizes", default="100kB,1MB", show_default=True, help="Comma-separated sizes.")
@click.option("--gpus", default="8", show_default=True, help="Comma-separated pod sizes.")
@click.option("--configs", default="UA+NAR,NUMA+NAR,NAP+NAR", show_default=True)
@file_option(
    "-o",
    "--output",
    default=Path("fig9.csv"),
    show_default=True,
    help="The table (.csv or .parquet).",
)
@file_option(
    "--png",
    default=None,
    help="Draw the speedups.",
)
@search_option("staged")
def fig9_command(
    preset_name: str,
    collectives: str,
    sizes: str,
    gpus: str,
    configs: str,
    output: Path,
    png: Path | None,
    search: str,
) -> None:
    """Speedup of each configuration over UA for direct collectives (paper Fig. 9), each
    configuration with its best threadblock count."""
    check_figure_path(png)
    check_table_path(output)
    pod_texts = _list("--gpus", gpus)
    if not all(g.isascii() and g.isdigit() for g in pod_texts):
        raise ConfigError("--gpus takes whole numbers")
    pods = _unique("--gpus", pod_texts, [int(g) for g in pod_texts])
    size_texts = _list("--sizes", sizes)
    byte_sizes = _unique("--sizes", size_texts, [parse_size(s) for s in size_texts])
    collective_names = _list("--collectives", collectives)
    config_names = _list("--configs", configs)
    _unique("--collectives", collective_names, collective_names)
    _unique("--configs", config_names, config_names)
    preset = load_preset(preset_name)
    with run_progress("fig9") as progress:
        table = speedup_table(
            preset, collective_names, byte_sizes, pods, config_names, progress, search
        )
    write_table(table, output)
    if png is not None:
        from nunasim.plotting.speedups import draw_speedups

        save_figure(draw_speedups(table, f"Speedup over UA on {preset.name}"), png)
    pivot = table.pivot_table(
        index=["gpus", "collective", "size_bytes"],
        columns="config",
        values="speedup_vs_ua",
        sort=False,
    )
    pivot.index = [f"{g} GPUs {c} {format_size(int(s))}" for g, c, s in pivot.index]
    click.echo(pivot.round(3).to_string())
    click.echo(f"wrote {output}" + (f" and {png}" if png else ""))
