"""The expert library: programs written directly against the MTIA intrinsic set with the
builder (backend/sim/builder.py): exact tiling to local memory, double-buffered DMA, the
reduction engine and index-driven DMA where they help. Each module attaches the `expert`
implementation to workloads declared in study/workloads."""
