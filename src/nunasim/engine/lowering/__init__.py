"""Lowering: a placed plan into the flat arrays every engine reads (messages, routes,
resources, the step graph), and the admission of a run by its counts."""
