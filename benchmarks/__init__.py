"""The memvec benchmark harness: `python -m benchmarks` (run by `make bench`)."""
