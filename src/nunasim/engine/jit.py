"""Compiling hot loops with numba, or not.

``NUNASIM_NO_JIT=1`` in the environment runs the same code as plain Python, for debugging
with a debugger or prints. Compilation happens on first call (numba is lazy), and compiled
code is cached on disk beside the package, so no work is done at import time.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypeVar

F = TypeVar("F", bound=Callable)


def jit(function: F) -> F:
    if os.environ.get("NUNASIM_NO_JIT") == "1":
        return function
    import numba

    return numba.njit(cache=True, nogil=True)(function)
