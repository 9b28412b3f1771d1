"""Running one snippet with the engine compiled and uncompiled, for tests that compare."""

import os
import subprocess
import sys


def outputs_compiled_and_not(code: str) -> list[str]:
    """What ``code`` prints with ``NUNASIM_NO_JIT=0`` and ``=1``, in that order."""
    outputs = []
    for jit in ("0", "1"):
        env = {**os.environ, "NUNASIM_NO_JIT": jit}
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        outputs.append(done.stdout.strip())
    return outputs
