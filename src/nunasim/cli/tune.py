"""``nunasim tune``: the fastest configuration, NAR granularity and threadblock count per
collective and size, as a threshold table a collective library can read."""

from __future__ import annotations

import json
from pathlib import Path

import click
import yaml

from nunasim.cli.fig9 import _list
from nunasim.cli.figures import save_figure
from nunasim.cli.options import preset_option, search_option
from nunasim.cli.progress import SweepProgress
from nunasim.cli.sweep_options import (
    cache_options,
    dask_options,
    out_folder_option,
    run_options,
)
from nunasim.errors import ConfigError
from nunasim.experiments.tune import thresholds, tune
from nunasim.io.files import check_output_folder, write_atomically
from nunasim.io.mscclpp_selector import write_selector
from nunasim.io.nccl_tuner import write_tuner
from nunasim.io.presets import load_preset
from nunasim.io.results import write_table
from nunasim.policies.configurations import CONFIGURATIONS
from nunasim.units import format_size, parse_size


def _counts(text: str) -> list[int] | None:
    if text == "auto":
        return None
    try:
        counts = [int(part) for part in _list("--tbs", text)]
    except ValueError:
        raise ConfigError(f"--tbs takes 'auto' or whole numbers, not {text!r}") from None
    if min(counts) < 1:
        raise ConfigError("--tbs counts must be at least 1")
    return counts


@click.command("tune")
@preset_option
@click.option("--gpus", type=click.IntRange(min=2), required=True, help="Pod size.")
@click.option("--collectives", default="allgather,allreduce,alltoall", show_default=True)
@click.option("--sizes", default="100kB,1MB", show_default=True, help="Comma-separated sizes.")
@click.option("--configs", default=",".join(CONFIGURATIONS), show_default=True)
@click.option(
    "--tbs",
    default="auto",
    show_default=True,
    help="Threadblock counts per GPU to try (with every NAR granularity), or auto: the "
    "shared search.",
)
@out_folder_option(
    "tuning",
    "Folder for tuning.yaml, .json, .csv, .png, nccl_tuner.conf and mscclpp_selector.json.",
)
@search_option("fast")
@dask_options
@cache_options
def tune_command(
    preset_name: str,
    gpus: int,
    collectives: str,
    sizes: str,
    configs: str,
    tbs: str,
    out_dir: Path,
    scheduler: str | None,
    workers: int | None,
    cache_dir: Path | None,
    no_cache: bool,
    search: str,
) -> None:
    """The best configuration, NAR granularity and threadblock count of each collective
    and size on a preset's pod of --gpus GPUs, as a threshold table."""
    names = _list("--configs", configs)
    for name in names:
        if name not in CONFIGURATIONS:
            raise ConfigError(
                f"unknown configuration {name!r} (known: {', '.join(CONFIGURATIONS)})"
            )
    byte_sizes = [parse_size(s) for s in _list("--sizes", sizes)]
    counts = _counts(tbs)
    check_output_folder(out_dir)
    options = run_options(scheduler, workers, cache_dir, no_cache, SweepProgress, search)
    preset = load_preset(preset_name)
    best = tune(
        preset, gpus, _list("--collectives", collectives), byte_sizes, names, options, counts
    )
    table = thresholds(best, preset.name, gpus)
    out_dir.mkdir(parents=True, exist_ok=True)
    as_yaml = yaml.safe_dump(table, sort_keys=False)
    as_json = json.dumps(table, indent=1)
    write_atomically(out_dir / "tuning.yaml", lambda tmp: tmp.write_text(as_yaml))
    write_atomically(out_dir / "tuning.json", lambda tmp: tmp.write_text(as_json))
    write_table(best, out_dir / "tuning.csv")
    write_tuner(out_dir / "nccl_tuner.conf", table)
    write_selector(out_dir / "mscclpp_selector.json", table)
    from nunasim.plotting.tuning import draw_tuning

    title = f"Fastest choice per collective and size, {gpus} GPUs ({preset.name})"
    save_figure(draw_tuning(best, title), out_dir / "tuning.png")
    for collective, ranges in table["collectives"].items():
        click.echo(collective)
        for r in ranges:
            span = format_size(r["from_bytes"])
            if r["to_bytes"] != r["from_bytes"]:
                span += f"-{format_size(r['to_bytes'])}"
            click.echo(
                f"  {span:>14}: {r['configuration']:<8} {r['nar_granularity']:>2} domains, "
                f"{r['threadblocks']:>4} threadblocks per GPU"
            )
    click.echo(
        f"wrote {out_dir / 'tuning.yaml'}, tuning.json, tuning.csv, tuning.png, "
        "nccl_tuner.conf (NCCL's example tuner plugin: NCCL_TUNER_CONFIG_FILE) and "
        "mscclpp_selector.json (an MSCCL++ plan selector's rules)"
    )
