"""Layer 8: the ``nunasim`` command."""

from nunasim.cli.main import main

__all__ = ["main"]
