"""How large a built-in plan may be (``nunasim.collectives.builtins``), in a module of its
own so that a preset's check of its pod size does not import the plans."""

# Beyond the paper's pods (64 GPUs, 1,008 threadblocks each), and still small enough that
# building and proving the plan takes seconds, not the machine's memory: a plan's steps grow
# with the square of its GPUs (a direct All-Gather of 256 GPUs builds in about 4 s and
# 0.3 GB, one of 1,024 would take over a minute and more than 1 GB).
MAX_GPUS = 256
MAX_POD_THREADBLOCKS = 1 << 16  # over the whole pod, all GPUs together
MAX_CHUNKS = 1 << 16  # per GPU's share of the collective
