"""Layer 2: collective plans (the IR), built-in algorithms, and the checker."""
