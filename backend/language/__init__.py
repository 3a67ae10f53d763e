"""MTIA language support: the libdevice implementation Triton maps kernels' calls to."""
