"""``nunasim headline``: the paper's Fig. 10 reproduction, the README's main job."""

from __future__ import annotations

from pathlib import Path

import click

from nunasim.cli.figures import save_figure
from nunasim.cli.options import memory_option, preset_option, search_option
from nunasim.cli.progress import run_progress
from nunasim.experiments.headline import run_headline
from nunasim.io.files import check_output_folder, output_folder
from nunasim.io.presets import load_preset
from nunasim.io.results import write_table
from nunasim.plotting.latency import draw_latency_histograms
from nunasim.units import format_size, parse_size


@click.command("headline")
@memory_option
@preset_option
@click.option("--plan", "plan_name", default="allgather:direct:gpus=8", show_default=True)
@click.option(
    "--size",
    default="1MB",
    show_default=True,
    help="Collective size (the paper's 1 MB).",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Folder for fig10.png and headline.csv.",
)
@search_option("staged")
def headline_command(
    preset_name: str, plan_name: str, size: str, out_dir: Path, search: str
) -> None:
    """The 8-GPU 1 MB All-Gather under UA and NAP+NAR: completion times, speedup, and
    Fig. 10's store-latency histograms."""
    nbytes = parse_size(size)
    check_output_folder(out_dir)
    preset = load_preset(preset_name)
    with run_progress("headline") as progress:
        outcome = run_headline(preset, plan_name, nbytes, progress=progress, search=search)
    paper = {
        str(row.config): (float(row.paper_mean_ns), float(row.paper_max_ns))
        for row in outcome.table.dropna(subset=["paper_mean_ns", "paper_max_ns"]).itertuples()
    }
    figure = draw_latency_histograms(
        {config: result.stores for config, result in outcome.results.items()},
        f"One-way remote store latency, {plan_name} at {format_size(nbytes)} ({preset.name})",
        paper,
    )
    with output_folder(out_dir) as folder:  # made only once the runs succeeded
        save_figure(figure, folder / "fig10.png")
        write_table(outcome.table, folder / "headline.csv")
    rows = outcome.table.set_index("config")
    lines = [f"{plan_name} at {format_size(nbytes)} on {preset.name}"]
    for config, row in rows.iterrows():
        paper = row.notna()
        lines.append(
            f"  {config:<8} completion {row.completion_ns:8.1f} ns ({int(row.threadblocks)} "
            f"threadblocks per GPU)   store latency mean {row.store_mean_ns:6.1f} ns"
            + (f" (paper {row.paper_mean_ns:.0f})" if paper["paper_mean_ns"] else "")
            + f", max {row.store_max_ns:6.1f} ns"
            + (f" (paper {row.paper_max_ns:.0f})" if paper["paper_max_ns"] else "")
        )
    lines.append(f"  speedup of NAP+NAR over UA: {outcome.speedup:.3f}x")
    lines.append(f"  wrote {out_dir / 'fig10.png'} and {out_dir / 'headline.csv'}")
    click.echo("\n".join(lines))
