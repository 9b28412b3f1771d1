"""Compiling hot loops with numba, or not (the event loop, placement's budget decisions).

``NUNASIM_NO_JIT=1`` in the environment runs the same code as plain Python, for debugging
with a debugger or prints. Compilation happens on first call (numba is lazy), and compiled
code is cached on disk beside the package, so no work is done at import time.
``@jit(inline=True)`` marks a small helper to be inlined into its callers (a call with
array arguments costs more than the helper's body).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any


def jit(function: Callable | None = None, *, inline: bool = False) -> Any:
    def wrap(f: Callable) -> Callable:
        if os.environ.get("NUNASIM_NO_JIT") == "1":
            return f
        import numba

        if inline:
            return numba.njit(inline="always")(f)
        return numba.njit(cache=True, nogil=True)(f)

    return wrap(function) if function is not None else wrap
