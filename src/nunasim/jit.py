"""Compiling hot loops with numba, or not (the event loop, placement's budget decisions).

``NUNASIM_NO_JIT=1`` in the environment runs the same code as plain Python, for debugging
with a debugger or prints. Compilation happens on first call (numba is lazy), and compiled
code is cached on disk beside the package, so no work is done at import time.
``@jit(inline=True)`` marks a small helper to be inlined into its callers (a call with
array arguments costs more than the helper's body): numba copies its IR into every call
site before typing them. ``@jit(inline="llvm")`` marks one that numba compiles once and
leaves to LLVM's optimiser to inline: for a tiny helper called from many places (the event
heap's push) it runs as fast and its callers compile in much less time (the packet core's
loop in 12.6 s instead of 20 s; docs/engine-measured.md, "Compiling the core"). LLVM may
decline, and a helper left a call costs its arguments on every call:
``benchmarks/loop_calls.py`` lists those of the packet core's loop.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import cache
from typing import Any

from nunasim.kernel_cache import lean_cache_class


def jit(function: Callable | None = None, *, inline: bool | str = False, nrt: bool = True) -> Any:
    if inline not in (False, True, "llvm"):
        raise ValueError(f"jit: inline is False, True or 'llvm', not {inline!r}")

    def wrap(f: Callable) -> Callable:
        if os.environ.get("NUNASIM_NO_JIT") == "1":
            return f
        import numba

        if inline == "llvm":  # allocates nothing: no reference counting either
            return numba.njit(nogil=True, _nrt=False)(f)
        if inline:
            return numba.njit(inline="always")(f)
        # nrt=False: without numba's reference counting, for a kernel that allocates nothing
        dispatcher = numba.njit(cache=True, nogil=True, _nrt=nrt)(f)
        # numba's own cache files, loaded without what a call from Python never needs
        lean = lean_cache_class()
        if lean is not None:
            dispatcher._cache = lean(dispatcher.py_func)
        return dispatcher

    return wrap(function) if function is not None else wrap


def scatter_at(ufunc: Any, out: Any, index: Any, values: Any) -> None:
    """``ufunc.at(out, index, values)`` (``index`` an array or a tuple of arrays), with every
    array viewed under numpy's own dtype object. An array a compiled kernel made carries a
    copy of its dtype, equal in every respect but not the same object, and numpy's
    ``ufunc.at`` takes its fast path only for its own: adding 2.4 M route times into 18 k
    CUs' totals took 0.19 s on a kernel's array and 0.003 s on a view of it (docs/engine.md,
    "Arrays a kernel made")."""
    import numpy as np

    def own(array: Any) -> Any:
        array = np.asarray(array)
        return array.view(np.dtype(array.dtype.str)) if array.dtype.fields is None else array

    where = tuple(own(i) for i in index) if isinstance(index, tuple) else own(index)
    ufunc.at(own(out), where, own(values) if isinstance(values, np.ndarray) else values)


@cache
def prefetcher() -> Callable[[Any, Any], None]:
    """``prefetch(array, i)``: ask the memory system for row ``i`` of ``array`` (element
    ``i`` of a 1-D array) and go on without waiting, so that a compiled loop bound by memory
    latency can overlap the cache misses of coming iterations with the work of this one. A
    hint only: nothing a program computes depends on it (``NUNASIM_NO_JIT=1``: it does
    nothing). A cached function that calls it is not recompiled when this code changes."""
    if os.environ.get("NUNASIM_NO_JIT") == "1":

        def prefetch(array: Any, i: Any) -> None:
            pass

        return prefetch
    return _prefetch_intrinsic()


def _prefetch_intrinsic() -> Callable[[Any, Any], None]:
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic

    @intrinsic
    def prefetch(typingctx: Any, array: Any, i: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            array_type, index_type = signature.args
            data = context.make_array(array_type)(context, builder, args[0])
            index = context.cast(builder, args[1], index_type, types.intp)
            row_bytes = cgutils.unpack_tuple(builder, data.strides)[0]
            byte = ir.IntType(8).as_pointer()
            address = builder.gep(builder.bitcast(data.data, byte), [builder.mul(index, row_bytes)])
            word = ir.IntType(32)
            llvm_prefetch = cgutils.get_or_insert_function(
                builder.module,
                ir.FunctionType(ir.VoidType(), [byte, word, word, word]),
                "llvm.prefetch.p0i8",
            )
            # read, keep in every cache level, data (not instructions)
            builder.call(llvm_prefetch, [address, word(0), word(3), word(1)])
            return context.get_dummy_value()

        return types.void(array, i), codegen

    return prefetch


def load(array, i):  # type: ignore[no-untyped-def]
    """``array[i]``, for an index that is never negative (see ``unchecked``; numba matches
    an overload to its function by parameter names and annotations: these take none)."""
    return array[i]


def store(array, i, value):  # type: ignore[no-untyped-def]
    """``array[i] = value``, for an index that is never negative."""
    array[i] = value


def load2(array, i, j):  # type: ignore[no-untyped-def]
    """``array[i, j]``, for indices that are never negative."""
    return array[i, j]


def store2(array, i, j, value):  # type: ignore[no-untyped-def]
    """``array[i, j] = value``, for indices that are never negative."""
    array[i, j] = value


@cache
def unchecked() -> tuple[Callable[..., Any], ...]:
    """``(load, store, load2, store2)``: array reads and writes that compiled code does
    without the wrap-around of a negative index. numba wraps every signed index (``i < 0``:
    ``i + len``), which costs three instructions and the array's length on every access; a
    hot loop whose indices are never negative (message, resource, VC and heap positions)
    runs 1.2-1.3 times as fast without it (docs/engine-measured.md, "Indexing without
    wrap-around"). A negative index is then undefined, so only positions nunasim computes
    itself (messages, resources, VCs, heap slots, route entries made by lowering) go
    through these, never a number read from a file. In plain Python (``NUNASIM_NO_JIT=1``, or
    a compiled function's ``py_func``) they are ordinary indexing."""
    if os.environ.get("NUNASIM_NO_JIT") != "1":
        _compile_unchecked()
    return load, store, load2, store2


def _compile_unchecked() -> None:
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic, overload

    def pointer(context: Any, builder: Any, signature: Any, args: Any, count: int) -> Any:
        array_type = signature.args[0]
        data = context.make_array(array_type)(context, builder, args[0])
        indices = [
            context.cast(builder, value, kind, types.intp)
            for value, kind in zip(args[1 : 1 + count], signature.args[1 : 1 + count], strict=True)
        ]
        return cgutils.get_item_pointer2(
            context,
            builder,
            data.data,
            cgutils.unpack_tuple(builder, data.shape),
            cgutils.unpack_tuple(builder, data.strides),
            array_type.layout,
            indices,
            wraparound=False,
            boundscheck=False,
        )

    # numba's array lowering is imported only when a kernel compiles (a process that loads
    # its kernels from the cache never does): 21 ms of a ``noc`` command's start.
    def load_codegen(count: int) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            from numba.np.arrayobj import load_item

            item = pointer(context, builder, signature, args, count)
            return load_item(context, builder, signature.args[0], item)

        return codegen

    def store_codegen(count: int) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            from numba.np.arrayobj import store_item

            item = pointer(context, builder, signature, args, count)
            array_type = signature.args[0]
            value = context.cast(builder, args[-1], signature.args[-1], array_type.dtype)
            store_item(context, builder, array_type, value, item)
            return context.get_dummy_value()

        return codegen

    @intrinsic
    def load1(typingctx: Any, array: Any, i: Any) -> Any:
        return array.dtype(array, i), load_codegen(1)

    @intrinsic
    def store1(typingctx: Any, array: Any, i: Any, value: Any) -> Any:
        return types.void(array, i, value), store_codegen(1)

    @intrinsic
    def load_2(typingctx: Any, array: Any, i: Any, j: Any) -> Any:
        return array.dtype(array, i, j), load_codegen(2)

    @intrinsic
    def store_2(typingctx: Any, array: Any, i: Any, j: Any, value: Any) -> Any:
        return types.void(array, i, j, value), store_codegen(2)

    # numba matches an overload's parameters to the function's by name, annotations too:
    # these take none.
    @overload(load, inline="always")
    def _load(array, i):  # type: ignore[no-untyped-def]
        return lambda array, i: load1(array, i)

    @overload(store, inline="always")
    def _store(array, i, value):  # type: ignore[no-untyped-def]
        return lambda array, i, value: store1(array, i, value)

    @overload(load2, inline="always")
    def _load2(array, i, j):  # type: ignore[no-untyped-def]
        return lambda array, i, j: load_2(array, i, j)

    @overload(store2, inline="always")
    def _store2(array, i, j, value):  # type: ignore[no-untyped-def]
        return lambda array, i, j, value: store_2(array, i, j, value)
