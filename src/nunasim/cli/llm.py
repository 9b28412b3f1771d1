"""``nunasim llm``: the best parallelism, batch and sequence length for a model on a pod,
under UA and NAP+NAR, with the step's breakdown."""

from __future__ import annotations

from pathlib import Path

import click

from nunasim.cli.options import parse_threadblocks, preset_option, search_option
from nunasim.cli.progress import SweepProgress
from nunasim.cli.sweep_options import cache_options, dask_options, run_options
from nunasim.experiments.llm_study import PLAN_COUNT, llm_table
from nunasim.io.presets import load_preset
from nunasim.llm.operators import PHASES

PARTS = ("compute", "allreduce", "reducescatter", "allgather", "alltoall", "sendrecv")


@click.command("llm")
@click.argument("model")
@click.option("--gpus", type=click.IntRange(1, 1024), default=64, show_default=True)
@click.option("--phase", type=click.Choice([*PHASES, "both"]), default="both", show_default=True)
@preset_option
@click.option("--quick", is_flag=True, help="Simulate only the quick size grid (two sizes).")
@click.option(
    "--tbs",
    "threadblocks",
    default=None,
    help="Threadblocks per GPU of the simulated collectives, 'auto' (the paper's search "
    "over counts and NAR granularities, about 12 runs a size) or 'plan' (the built-in "
    "plan's own count) [default: the study's, 'auto'].",
)
@click.option(
    "--execution",
    type=click.Choice(["shared", "own"]),
    default=None,
    help="'shared': NAP+NAR runs the parallelism, batch and sequence length UA's search "
    "chooses, so only the collectives differ (the paper's section 6.7); 'own': each "
    "configuration searches its own [default: the study's, 'shared'].",
)
@search_option("fast")
@dask_options
@cache_options
def llm_command(
    model: str,
    gpus: int,
    phase: str,
    preset_name: str,
    quick: bool,
    threadblocks: str | None,
    execution: str | None,
    search: str,
    scheduler: str | None,
    workers: int | None,
    cache_dir: Path | None,
    no_cache: bool,
) -> None:
    """MODEL (a shipped name or a config.json) on GPUS GPUs: the configuration minimising
    TTFT (prefill) and TPOT (decode) under UA, the same under NAP+NAR (or each its own,
    --execution own), and where the time goes."""
    phases = PHASES if phase == "both" else (phase,)
    options = run_options(scheduler, workers, cache_dir, no_cache, SweepProgress, search)
    preset = load_preset(preset_name)

    table = llm_table(
        [model],
        [gpus],
        phases,
        quick=quick,
        preset=preset,
        cache=options.cache,
        threadblocks=None if threadblocks is None else parse_threadblocks(threadblocks, PLAN_COUNT),
        # the points the search needs, a round at a time, on every worker
        run_many=lambda points: options.run("llm", points, preset),
        execution=execution,
        search=search,
    )
    found = {name: n for name, n in table.attrs["searches"].items() if name != "none"}
    searches = ", ".join(f"{n} by the {name} search" for name, n in sorted(found.items()))
    click.echo(
        f"collectives simulated at {table.attrs['threadblocks']}"
        + (f" (points: {searches})" if searches else "")
    )
    for row in table.itertuples():
        metric = "TTFT" if row.phase == "prefill" else "TPOT"
        ep = f" EP{row.ep}" if row.ep > 1 else ""
        click.echo(
            f"{row.model} {row.phase} on {row.gpus} GPUs, {row.configuration}: "
            f"{metric} {row.time_ms:.3f} ms  (TP{row.tp} DP{row.dp} PP{row.pp}{ep}, "
            f"batch {row.batch}, seq {row.seq}, {row.tokens_per_s:,.0f} tokens/s)"
            + ("" if row.within_grid else "  [rests on collectives beyond the simulated grid]")
        )
        parts = []
        for name in PARTS:
            ms = getattr(row, f"{name}_ms")
            if ms or name == "compute":
                count = "" if name == "compute" else f" x{getattr(row, f'{name}_count')}"
                parts.append(f"{name} {ms:.3f} ms{count}")
        click.echo("    " + ", ".join(parts))
    for phase_, rows in table.groupby("phase", sort=False):
        by = rows.set_index("configuration")
        if {"UA", "NAP+NAR"} <= set(by.index):
            ua, nap = by.loc["UA"], by.loc["NAP+NAR"]
            metric = "TTFT" if phase_ == "prefill" else "TPOT"
            change = nap.time_ms / ua.time_ms - 1
            comm = ua.communication_ms / nap.communication_ms if nap.communication_ms else 1.0
            click.echo(
                f"{phase_}: NAP+NAR {metric} {change:+.1%} against UA, "
                f"communication {comm:.2f}x faster"
            )
            other = "own" if "own_time_ms" in by else "shared"
            if f"{other}_time_ms" in by:
                mine = by.loc["NAP+NAR", f"{other}_time_ms"] / by.loc["UA", f"{other}_time_ms"]
                said = "each its own" if other == "own" else "UA's"
                click.echo(f"    with {said} parallelism, batch and sequence: {mine - 1:+.1%}")
