"""Layer 7: the paper's experiments, each a function from parameters to result tables."""
