"""Layer 4: time. The engine interface and registry (``base``), the shared kernel and
lowering, the engines (``packet``, ``flow``, ``analytic``, and ``noc`` for synthetic
traffic), and the result tables."""

# Bumped whenever the model every engine shares changes its results (a model fix, a new
# rule), so results cached by an earlier model are recomputed rather than served; an engine
# whose own model changes bumps its own ``revision``. 2: the flow engine's window floor and
# waves that take drains and events together.
MODEL_REVISION = 2
