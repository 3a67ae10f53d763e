"""Workload declarations, one module per op family, each with all of its workloads' implementations
(see study/registry.py); tensors.py holds the input generators they share."""
