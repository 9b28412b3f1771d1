"""Option parsers shared by several commands."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from nunasim.errors import ConfigError
from nunasim.units import parse_size

preset_option = click.option(
    "--preset",
    "preset_name",
    default="nextgen-4die",
    show_default=True,
    help="A shipped preset's name or a preset file.",
)

seed_option = click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Seed of the random choices (the unaware dispatcher's order): 0 or more.",
)

json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON object instead of text."
)


def file_option(*names: str, help: str, **kwargs: Any) -> Callable:
    """An option naming a file the command writes."""
    return click.option(
        *names, type=click.Path(dir_okay=False, path_type=Path), help=help, **kwargs
    )


def config_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--config``: one of the paper's configurations."""
    # Imported when a command takes the option, as the two below: ``noc`` takes none of
    # them and starts without the plans, placement and lowering they pull in.
    from nunasim.policies.configurations import CONFIGURATIONS

    return click.option(
        "--config",
        "config_name",
        default="NAP+NAR",
        show_default=True,
        type=click.Choice(list(CONFIGURATIONS)),
        help="One of the paper's configurations.",
    )(command)


def layout_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--layout``: how chunks sit in pages."""
    from nunasim.mapping.buffer_layout import LAYOUTS

    return click.option(
        "--layout",
        type=click.Choice(LAYOUTS),
        default="aligned",
        show_default=True,
        help="Chunks in pages: page-aligned (sub-page chunks packed) or packed back to back.",
    )(command)


def parse_granularity(text: str) -> int | str:
    """``--nar``: a number of NAR domains, or ``auto``."""
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"--nar takes a number of domains or 'auto', not {text!r}") from None


def parse_threadblocks(text: str, *names: str) -> int | str:
    """``--tbs``: threadblocks per GPU, ``auto`` (the best-performing count), or one of
    ``names`` (another word the command takes)."""
    if text == "auto" or text in names:
        return text
    try:
        count = int(text)
    except ValueError:
        words = " or ".join(repr(word) for word in ("auto", *names))
        raise ConfigError(
            f"--tbs takes a number of threadblocks or {words}, not {text!r}"
        ) from None
    if count < 1:
        raise ConfigError(f"--tbs must be at least 1; got {count}")
    return count


def memory_option(command: Callable) -> Callable:
    """``--max-memory SIZE``: the memory budget the command's runs are admitted against."""
    # Imported here (see ``config_option``).
    from nunasim.engine.lowering.admission import MEMORY_ENV, limit_memory

    @click.option(
        "--max-memory",
        metavar="SIZE",
        default=None,
        help=f"Refuse a run whose memory estimate exceeds SIZE (e.g. 8GB; default: "
        f"${MEMORY_ENV}, else half of the available memory).",
    )
    @functools.wraps(command)
    def budgeted(*args: Any, max_memory: str | None, **kwargs: Any) -> Any:
        if max_memory is None:
            return command(*args, **kwargs)
        with limit_memory(parse_memory(max_memory)):
            return command(*args, **kwargs)

    return budgeted


def parse_memory(text: str) -> int:
    """``--max-memory``: a positive size."""
    try:
        nbytes = parse_size(text)
    except ConfigError as exc:
        raise ConfigError(f"--max-memory: {exc.reason}") from None
    if nbytes <= 0:
        raise ConfigError(f"--max-memory must be positive; got {text!r}")
    return nbytes


def given(*names: str) -> list[str]:
    """The options among ``names`` (parameter names) given on the command line, as
    ``--option``: an option left at its default is not given."""
    context = click.get_current_context()
    return [
        "--" + name.replace("_", "-")
        for name in names
        if context.get_parameter_source(name) not in (None, click.core.ParameterSource.DEFAULT)
    ]


def search_option(default: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--search``: the threadblock search of the searched points, ``default`` unless
    given (``fast`` where a user waits for one answer, ``staged`` where the paper's
    figures are reproduced)."""
    # Imported here (see ``config_option``).
    from nunasim.experiments.tbsearch import SEARCHES

    return click.option(
        "--search",
        type=click.Choice(SEARCHES),
        default=default,
        show_default=True,
        help="The threadblock search: staged (the paper's, exhaustive: every count at the "
        "granularity the placement estimate picks, then every granularity at the best "
        "count), joint (every count with every granularity: 2-5 times the computing time) "
        "or fast (staged's counts; where the flow engine runs the best count, every "
        "granularity ranked by its quick run and only the least run: may answer a "
        "slightly slower run, by a measured band; docs/tuning.md).",
    )
