"""Writing figures from the command line: checked suffix, whole file or none."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from nunasim.errors import ConfigError
from nunasim.io.files import write_atomically

if TYPE_CHECKING:
    from matplotlib.figure import Figure

FIGURE_SUFFIXES = (".png", ".svg", ".pdf")


def check_figure_path(path: Path | None) -> None:
    if path is not None and path.suffix.lower() not in FIGURE_SUFFIXES:
        raise ConfigError("the picture must be a .png, .svg or .pdf file", source=str(path))


def save_figure(figure: Figure, path: Path) -> None:
    check_figure_path(path)
    fmt = path.suffix.lower().lstrip(".")
    write_atomically(path, lambda tmp: figure.savefig(tmp, dpi=150, format=fmt))
