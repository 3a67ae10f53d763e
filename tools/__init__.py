"""Measurement programs over the library, run from the command line (make bench-sim,
microbench, bench-compile): the simulator's host speed (bench_sim), the chip config's
calibration against published peaks (microbench; the study's T1 table runs it too) and the
backend's compile time (bench_compile).

They are not part of the backend: they use it (and kernels/) as any user does. Nothing in
backend/, kernels/ or baselines/ imports them; study/ may (reproduce runs microbench for T1),
and they never import study/ (tests/test_layering.py).
"""
