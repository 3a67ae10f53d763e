"""The study: workload registry, runner, result schema, regression gate, model workloads."""
