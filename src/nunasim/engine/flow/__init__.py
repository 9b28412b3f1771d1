"""The flow-level engine: transfers as fluid flows sharing resources by max-min fairness.

``nunasim.engine.flow.engine.simulate_flow`` runs a placed plan and returns the same
``SimResult`` as the packet engine, with memory flat in the collective's size: one record
per transfer (a group of a step's ranges), never one per line (docs/engine.md, "The flow
engine").
"""
