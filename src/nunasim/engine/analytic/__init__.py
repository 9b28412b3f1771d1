"""The analytic engine: the zero-load critical path and the busiest resource, a bound no
run beats, worked out without simulating."""
