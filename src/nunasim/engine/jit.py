"""The engine's name for ``nunasim.jit`` (compiled hot loops live in several layers)."""

from nunasim.jit import jit, prefetcher, unchecked

__all__ = ["jit", "prefetcher", "unchecked"]
