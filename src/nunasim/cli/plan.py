"""``nunasim plan show`` and ``nunasim plan check``."""

from __future__ import annotations

import json

import click

from nunasim.cli.options import json_option
from nunasim.collectives.check import check_plan
from nunasim.collectives.plan import Plan
from nunasim.collectives.stats import plan_table
from nunasim.io.plans import load_plan
from nunasim.units import format_size, parse_size


@click.group()
def plan() -> None:
    """Collective plans: built-in algorithms, MSCCL XML and MSCCL++ JSON files."""


def _spread(values) -> str:
    low, high = int(min(values)), int(max(values))
    return str(low) if low == high else f"{low}-{high}"


@plan.command("show")
@click.argument("plan_name", metavar="FILE_OR_BUILTIN")
@click.option(
    "--size",
    default="1MB",
    show_default=True,
    help="Collective size for the byte figures (the larger of a GPU's input and output buffers).",
)
@json_option
@click.option("--per-gpu", is_flag=True, help="List every GPU, not just the totals.")
def show_command(plan_name: str, size: str, as_json: bool, per_gpu: bool) -> None:
    """Show a plan: GPUs, threadblocks, steps, bytes sent and received per GPU, peers."""
    nbytes = parse_size(size)
    item = load_plan(plan_name)
    table = plan_table(item, nbytes)
    if as_json:
        summary = _summary(item, nbytes)
        summary["gpus"] = table.to_dict(orient="records")
        click.echo(json.dumps(summary, indent=2))
        return
    s = _summary(item, nbytes)
    lines = [
        f"{item.name}  ({item.source})",
        f"  collective        {item.collective}{' (in place)' if item.inplace else ''}, "
        f"{item.ngpus} GPUs",
        f"  chunks            {item.chunks_per_size} per collective size; "
        f"{format_size(s['chunk_bytes'])} each at {format_size(nbytes)}",
        f"  threadblocks      {_spread(table['threadblocks'])} per GPU, "
        f"{int(table['threadblocks'].sum())} in all",
        f"  steps             {_spread(table['steps'])} per GPU, "
        f"{int(table['steps'].sum())} in all",
        f"  transfers         {len(item.transfers)} ({', '.join(s['protocols']) or 'no data'})",
        f"  sent per GPU      {_spread(table['bytes_sent'])} B "
        f"({_spread(table['chunks_sent'])} chunks)",
        f"  received per GPU  {_spread(table['bytes_received'])} B "
        f"({_spread(table['chunks_received'])} chunks)",
        f"  peers per GPU     {_spread(table['peers_out'])} out, {_spread(table['peers_in'])} in",
    ]
    lines += [f"  note              {note}" for note in item.notes]
    click.echo("\n".join(lines))
    if per_gpu:
        click.echo(table.to_string(index=False))


def _summary(item: Plan, nbytes: int) -> dict[str, object]:
    return {
        "name": item.name,
        "source": item.source,
        "collective": str(item.collective),
        "inplace": item.inplace,
        "ngpus": item.ngpus,
        "chunks_per_size": item.chunks_per_size,
        "size_bytes": nbytes,
        "chunk_bytes": item.chunk_bytes(nbytes),
        "transfers": len(item.transfers),
        "protocols": sorted(item.protocols),
        "steps": item.step_count,
        "notes": list(item.notes),
    }


@plan.command("check")
@click.argument("plan_name", metavar="FILE_OR_BUILTIN")
def check_command(plan_name: str) -> None:
    """Prove a plan: well formed, free of deadlock and races, and correct for its
    collective on every GPU. Exit status 0 when proved, 2 with the reason otherwise."""
    item = load_plan(plan_name)
    report = check_plan(item)
    click.echo(
        f"proved: {item.name} implements {item.collective} on {item.ngpus} GPUs "
        f"({report.threadblocks} threadblocks, {report.steps} steps, {report.transfers} "
        f"transfers; no deadlock, no race; longest chain {report.critical_path_steps} steps)"
    )
