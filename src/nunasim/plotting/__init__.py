"""Layer 7: figures, drawn from result tables only."""
