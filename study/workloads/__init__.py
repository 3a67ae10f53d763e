"""Workload declarations, one module per op family (see study/registry.py)."""
