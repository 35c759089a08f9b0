"""Benchmarks, each side by side with a peer: `make bench` or `python -m bench.<name>`."""
