"""Layer 3: decisions. The address map and routing (baseline, NAR), and placement policies
(UA, NUMA, NAP, NAP*), as pure functions of the hardware, the plan and a seed."""
