"""The `cpu` entry point: Inductor compiles CPU tensors for a Triton target named "cpu"
(torch._inductor.config.cpu_backend = "triton"). It is served by the same MTIA compiler and
simulator; only the target name differs."""
