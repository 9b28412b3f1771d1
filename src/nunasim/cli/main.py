"""The ``nunasim`` command group; each subcommand lives in a module of its own."""

from __future__ import annotations

import sys

import click

from nunasim import __version__
from nunasim.cli.floorplan import floorplan
from nunasim.cli.headline import headline_command
from nunasim.cli.place import place_command
from nunasim.cli.plan import plan
from nunasim.cli.preset import preset
from nunasim.cli.simulate import simulate_command
from nunasim.errors import NunasimError

EXIT_BAD_INPUT = 2


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="nunasim")
def cli() -> None:
    """Simulate collectives on pods of multi-die GPUs and measure non-uniform network
    access (NUNA), with NUNA-aware routing (NAR) and placement (NAP)."""


cli.add_command(preset)
cli.add_command(floorplan)
cli.add_command(plan)
cli.add_command(place_command)
cli.add_command(simulate_command)
cli.add_command(headline_command)


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
