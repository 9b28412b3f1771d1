"""Loading a compiled kernel from numba's on-disk cache without the work it does not need.

A ``nunasim noc`` run of 1.7 s spent some 0.2 s loading its one cached kernel, two costs of
numba's loader that a kernel called from Python never uses (docs/engine-measured.md,
"Loading a compiled kernel"):

- numba refreshes its compiler contexts before it looks in the cache: it imports and
  installs every lowering and typing registry it has (linear algebra, random generators,
  typed containers, ...). Running a compiled kernel needs only numba's runtime (a kernel
  that allocates calls into it), and numba's compiler refreshes the contexts itself before
  anything is compiled.
- beside a kernel's machine code, the cache keeps its LLVM module, for kernels compiled
  later that call it and link it in; numba parses it as it loads (0.1 s for the packet
  core's loop, whose arguments are some 80 arrays). It is parsed here when a kernel that
  calls this one is compiled, the only time it is read, and the names numba's execution
  engine must know to hand out the kernel's entry points come from the kernel's
  description instead.

The cache's files are numba's own, written by numba; only the loading changes. Where this
numba's cache or compile result is not the shape this was written against, numba's own
loader is used.
"""

from __future__ import annotations

from functools import cache
from typing import Any

# What numba's cache driver provides that the loader relies on (beside its impl class)
_CACHE_METHODS = ("load_overload", "_load_overload", "_guard_against_spurious_io_errors")
# the names a kernel's execution engine must know: its own, and its two wrappers'
_ENTRY_NAMES = ("llvm_func_name", "llvm_cpython_wrapper_name", "llvm_cfunc_wrapper_name")


@cache
def lean_cache_class() -> type | None:
    """A subclass of numba's ``FunctionCache`` that loads as the module says, or None where
    this numba's cache is not the one it was written against."""
    from numba.core import caching
    from numba.core.runtime import rtsys

    FunctionCache = caching.FunctionCache
    CompileResultCacheImpl = getattr(caching, "CompileResultCacheImpl", None)
    if CompileResultCacheImpl is None or not all(
        hasattr(FunctionCache, name) for name in _CACHE_METHODS
    ):
        return None

    class LeanCacheImpl(CompileResultCacheImpl):  # type: ignore[misc,valid-type]
        def rebuild(self, target_context: Any, payload: Any) -> Any:
            """The compile result a cache entry holds (numba's ``CompileResult._reduce``: its
            library as machine code and LLVM module, then its description, ...), its module
            left unparsed."""
            lean = _unparsed(payload)
            if lean is None:
                return super().rebuild(target_context, payload)
            payload, fndesc, bitcode = lean
            engine = target_context.codegen()._engine
            # numba looks the entry points up only by names its engine knows to be defined.
            engine._defined_symbols.update(getattr(fndesc, name) for name in _ENTRY_NAMES)
            result = super().rebuild(target_context, payload)
            _link_lazily(result.library, bitcode)
            return result

    class LeanFunctionCache(FunctionCache):  # type: ignore[misc,valid-type]
        _impl_class = LeanCacheImpl

        def load_overload(self, sig: Any, target_context: Any) -> Any:
            rtsys.initialize(target_context)  # the runtime a kernel that allocates calls
            with self._guard_against_spurious_io_errors():
                return self._load_overload(sig, target_context)

    return LeanFunctionCache


def _unparsed(data: Any) -> tuple[Any, Any, bytes] | None:
    """``data`` with its library's LLVM module replaced by an empty one, the kernel's
    description and the module's bitcode; None for an entry of another shape."""
    if not isinstance(data, tuple) or len(data) < 2:
        return None
    libdata, fndesc = data[0], data[1]
    if not (isinstance(libdata, tuple) and len(libdata) == 3 and libdata[1] == "object"):
        return None
    library_name, kind, code = libdata
    if not (isinstance(code, tuple) and len(code) == 2 and isinstance(code[1], bytes)):
        return None
    if not all(isinstance(getattr(fndesc, name, None), str) for name in _ENTRY_NAMES):
        return None
    object_code, bitcode = code
    lean = (library_name, kind, (object_code, _empty_bitcode()))
    return ((lean, *data[1:]), fndesc, bitcode)


@cache
def _empty_bitcode() -> bytes:
    import llvmlite.binding as llvm

    return bytes(llvm.parse_assembly("").as_bitcode())


def _link_lazily(library: Any, bitcode: bytes) -> None:
    """Give ``library`` its real LLVM module when a kernel that calls it is compiled."""
    import llvmlite.binding as llvm

    library._shared_module = None
    linking = library._get_module_for_linking

    def module_for_linking() -> Any:
        if library._shared_module is None:
            library._shared_module = llvm.parse_bitcode(bitcode)
        return linking()  # finalizes the library, then hands out that module

    library._get_module_for_linking = module_for_linking
