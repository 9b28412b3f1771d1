"""The ``nunasim`` command group. Each subcommand lives in a module of its own and is
imported only when it runs, so that a command pays only for the libraries it uses."""

from __future__ import annotations

import importlib
import sys

import click

from nunasim import __version__
from nunasim.errors import NunasimError

EXIT_BAD_INPUT = 2

COMMANDS = {
    "preset": "nunasim.cli.preset:preset",
    "floorplan": "nunasim.cli.floorplan:floorplan",
    "plan": "nunasim.cli.plan:plan",
    "place": "nunasim.cli.place:place_command",
    "simulate": "nunasim.cli.simulate:simulate_command",
    "headline": "nunasim.cli.headline:headline_command",
    "fig9": "nunasim.cli.fig9:fig9_command",
    "noc": "nunasim.cli.noc:noc_command",
    "llm": "nunasim.cli.llm:llm_command",
    "trace": "nunasim.cli.trace:trace",
    "reproduce": "nunasim.cli.reproduce:reproduce_command",
    "tune": "nunasim.cli.tune:tune_command",
    "cache": "nunasim.cli.cache:cache_group",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, attribute = COMMANDS[name].split(":")
        return getattr(importlib.import_module(module), attribute)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="nunasim")
def cli() -> None:
    """Simulate collectives on pods of multi-die GPUs and measure non-uniform network
    access (NUNA), with NUNA-aware routing (NAR) and placement (NAP)."""


def main(argv: list[str] | None = None) -> int:
    """Run the command; bad input ends with a one-line message and exit status 2."""
    try:
        cli.main(args=argv, prog_name="nunasim", standalone_mode=False)
    except NunasimError as exc:
        click.echo(f"nunasim: error: {exc}", err=True)
        return EXIT_BAD_INPUT
    except click.exceptions.Abort:
        click.echo("nunasim: aborted", err=True)
        return 130
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
