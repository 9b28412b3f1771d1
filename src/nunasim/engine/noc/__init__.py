"""The synthetic NoC mode: traffic patterns on one socket's mesh, run on the packet core,
with their analytic bounds and the saturation point of a load sweep."""
