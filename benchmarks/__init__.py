"""The benchmark suite: each module with a ``main`` runs as a script (``benchmarks/README.md``)."""
