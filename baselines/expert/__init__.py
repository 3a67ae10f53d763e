"""The expert library: programs written directly against the MTIA intrinsic set with the
builder (backend/sim/builder.py): exact tiling to local memory, double-buffered DMA, the
reduction engine and index-driven DMA where they help.

One module per op family, named as in kernels/ and study/workloads/ (`<family>.py`, or
`<family>_<part>.py` for a family in several modules); common.py and streaming.py are shared
helpers. study/workloads/<family>.py declares these programs as its workloads' `expert`
implementation: the library itself knows nothing of the study (it imports only backend/).
"""
