"""The engine's name for ``nunasim.jit`` (compiled hot loops live in several layers)."""

from nunasim.jit import jit, prefetcher

__all__ = ["jit", "prefetcher"]
