"""Hand-written Triton kernels, one module per op family. Plain Triton: they run on any Triton backend (the simulated MTIA here, an NVIDIA GPU with triton 3.6)."""
