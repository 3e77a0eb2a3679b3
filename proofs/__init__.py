"""Checkable derivations of SPEC §2–§5: one module per result, `python -m proofs.<name>`.

Each module lists its claims in `CLAIMS` (callables returning `Verdict`s) and prints a verdict
table when run; `tests/test_proofs.py` runs every claim. See proofs/README.md.
"""
