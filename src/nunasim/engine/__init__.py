"""Layer 4: time. Lowering to arrays, the analytic oracle, the packet engine, results."""
