"""Layer 4: time. Lowering to arrays, the analytic oracle, the packet engine, results."""

# Bumped whenever an engine's results change (a model fix, a new rule), so results cached
# by an earlier model are recomputed rather than served. 2: the flow engine's window floor
# and waves that take drains and events together.
MODEL_REVISION = 2
# Bumped when only the flow engine's results change: only results that may have come from
# it (``experiments.engines``) are recomputed. 1: a step's fetches and deliveries overlap
# when its window holds them all; a delivery's last line takes its lines' mean trip.
FLOW_REVISION = 1
