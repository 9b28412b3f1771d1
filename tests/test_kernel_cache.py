"""Loading compiled kernels from numba's cache (``nunasim.kernel_cache``): the same kernels,
without numba's registries or the kernel's LLVM module, and a kernel compiled later that
calls a loaded one still links it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CALLEE = """
from nunasim.jit import jit

@jit
def callee(x):
    return x * 3 + 1
"""

CALLER = """
from callee_kernel import callee
from nunasim.jit import jit

@jit
def {name}(x):
    return callee(x) + {offset}
"""

# In a fresh process: load the callee from the cache and call it, then compile a caller
# that was not compiled before, which links the callee's module in.
PROBE = """
import json, sys
from callee_kernel import callee
first = callee(4)
library = next(iter(callee.overloads.values())).library
report = {
    "first": first,
    "loaded_unparsed": library._shared_module is None,
    "registries": "numba.np.linalg" in sys.modules,
    "cache_hits": sum(callee.stats.cache_hits.values()),
}
from new_caller import new_caller
report["linked"] = new_caller(4)
report["parsed_for_linking"] = library._shared_module is not None
print(json.dumps(report))
"""


def _python(code: str, folder: Path) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("NUNASIM_NO_JIT", "NUMBA_CACHE_DIR")}
    env["PYTHONPATH"] = os.pathsep.join([str(folder), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=folder
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.skipif(os.environ.get("NUNASIM_NO_JIT") == "1", reason="compiled kernels only")
def test_a_kernel_loads_lean_and_still_links(tmp_path: Path) -> None:
    (tmp_path / "callee_kernel.py").write_text(CALLEE)
    (tmp_path / "old_caller.py").write_text(CALLER.format(name="old_caller", offset=2))
    (tmp_path / "new_caller.py").write_text(CALLER.format(name="new_caller", offset=5))
    # The first process compiles the callee (and a caller) and caches both.
    assert _python("from old_caller import old_caller; print(old_caller(4))", tmp_path) == "15\n"
    report = json.loads(_python(PROBE, tmp_path))
    assert report == {
        "first": 13,
        "loaded_unparsed": True,  # from the cache, its module not parsed
        "registries": False,  # nothing numba only needs to compile was imported
        "cache_hits": 1,
        "linked": 18,  # a new caller compiles against it
        "parsed_for_linking": True,
    }
