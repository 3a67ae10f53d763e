"""What the kernels are compared against: torch references, the expert library, GPU vendor paths."""
