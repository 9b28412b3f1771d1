"""What the kernel-call benchmarks share (``flow_kernel_calls.py``, ``mapping_kernel_calls.py``):
hooking a module's kernel where it is called, timing or capturing its calls, and timing the
dispatch of the captured arguments to an empty compiled kernel, spelled out and bundled.

Not a benchmark itself: the scripts of this folder import it (they run as scripts, so this
folder is on their path).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numba

Hook = Callable[[str, Callable], Callable]


def present(module: Any, *names: str) -> tuple[Any, str]:
    """``(module, name)`` for the first of ``names`` the module has: a kernel's name now or
    before the bundles, so that a script measures an older checkout too."""
    return module, next(name for name in names if hasattr(module, name))


@contextmanager
def hooked(targets: list[tuple[Any, str]], hook: Hook) -> Iterator[None]:
    """Each ``module.name`` replaced by ``hook(name, original)`` while the block runs."""
    saved = [(module, name, getattr(module, name)) for module, name in targets]
    for module, name, original in saved:
        setattr(module, name, hook(name, original))
    try:
        yield
    finally:
        for module, name, original in saved:
            setattr(module, name, original)


def timer(durations: dict[str, list[float]]) -> Hook:
    """A hook that adds each call's wall time to ``durations[name]``."""

    def hook(name: str, original: Callable) -> Callable:
        def call(*args: Any) -> Any:
            started = time.perf_counter()
            result = original(*args)
            durations.setdefault(name, []).append(time.perf_counter() - started)
            return result

        return call

    return hook


def capturer(seen: dict[str, tuple], last: bool) -> Hook:
    """A hook that keeps each kernel's arguments in ``seen[name]``: its last call's, or its
    first's."""

    def hook(name: str, original: Callable) -> Callable:
        def call(*args: Any) -> Any:
            if last or name not in seen:
                seen[name] = args
            return original(*args)

        return call

    return hook


def print_calls(durations: dict[str, list[float]], repeat: int, width: int, lead: str) -> None:
    """A line per kernel: its calls per run, its median and fastest call."""
    for name, times in durations.items():
        median, fastest = statistics.median(times) * 1e6, min(times) * 1e6
        print(
            f"  {lead}{name:{width}} {len(times) // repeat:3} calls, median {median:7.1f} us, "
            f"fastest {fastest:7.1f} us"
        )


def empty_kernel(count: int) -> Callable:
    """A compiled kernel of ``count`` parameters that does nothing."""
    names = ", ".join(f"a{i}" for i in range(count))
    scope: dict[str, Any] = {}
    exec(f"def kernel({names}):\n    return 0\n", scope)  # a fixed template
    return numba.njit(scope["kernel"])


def spelled_out(args: tuple) -> tuple:
    """``args`` with every bundle's fields in its place."""
    flat: list[Any] = []
    for a in args:
        flat.extend(a if isinstance(a, tuple) else (a,))
    return tuple(flat)


def per_call_us(kernel: Callable, args: tuple, calls: int, repeat: int) -> float:
    """The best of ``repeat`` means over ``calls`` calls of ``kernel(*args)``, in us."""
    kernel(*args)  # compile for these types
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        for _ in range(calls):
            kernel(*args)
        best = min(best, (time.perf_counter() - started) / calls)
    return best * 1e6


def print_dispatch(captured: dict[str, tuple], calls: int, repeat: int, width: int) -> None:
    """Each kernel's captured arguments to an empty kernel, spelled out and bundled."""
    print(f"dispatch per call (best of {repeat} means over {calls:,} calls)")
    print(f"  {'':{width}} {'spelled out':>12} {'bundled':>10}")
    for name, bundled in captured.items():
        flat = spelled_out(bundled)
        spelled = per_call_us(empty_kernel(len(flat)), flat, calls, repeat)
        grouped = per_call_us(empty_kernel(len(bundled)), bundled, calls, repeat)
        print(
            f"  {name:{width}} {spelled:9.1f} us {grouped:7.1f} us"
            f"   ({len(flat)} arguments; {len(bundled)} with bundles)"
        )
