"""One torch intra-op thread per test process: the simulator runs many small tile ops, and with
pytest -n N workers each spinning up OpenMP threads on the same cores, a 128x64x128 matmul is
~30x slower (measured: 3.8 ms with 2 threads under contention vs 0.11 ms with 1)."""
import torch

torch.set_num_threads(1)
