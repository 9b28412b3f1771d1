"""Layer 6: files in and out: presets, plans, traces and result tables."""
