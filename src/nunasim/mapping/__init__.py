"""The mapping layer, between plans (layer 2) and decisions (layer 3): where things live.

A placement (``placement``) puts every threadblock on a CU and every page in a region of
the address map (``address``), which fixes the page's HBM stack and NAR domain
(``domains``); the port hash (``port_hash``) picks each line's port. ``accesses`` lists
the chunk ranges a plan's steps fetch and deliver, and ``resolve`` turns them into flat
columns, one row per line: who moves it, where it lives, the port it crosses by. Policies
produce placements; the engine and the estimates read the resolved lines.
"""
