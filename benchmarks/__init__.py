"""Speed benchmarks: ratios against baselines measured in the same run (python -m benchmarks.X)."""
