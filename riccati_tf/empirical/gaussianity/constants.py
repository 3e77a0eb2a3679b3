"""The tolerances, sizes and input bounds of the Gaussianity tests."""

from __future__ import annotations

__all__ = ["GRAM_BLOCK", "MARGINAL_DIRECTIONS", "MARGINAL_FAMILIES", "MAX_DIRECTIONS",
           "MAX_GRAM_BLOCK", "MAX_NULL_SAMPLE", "MIN_MARGINAL_N", "N_DIRECTIONS", "RANK_RTOL",
           "TESTS"]

#: directions of the sliced Wasserstein distance
N_DIRECTIONS = 64
#: eigenvalues of the ML covariance below RANK_RTOL · λ_max are treated as zero (whitening)
RANK_RTOL = 1e-10
#: rows of the Gram matrix processed at once
GRAM_BLOCK = 1024
#: statistics entering the decision (each calibrated against the Monte-Carlo null)
TESTS = ("skewness", "kurtosis", "energy", "sliced_w2")
#: input bounds, checked before anything is allocated (MAX_NULL, the Monte-Carlo null samples
#: n_null, comes from `defaults`): sliced-W2 directions, rows of a Gram block, and n · rank of
#: one simulated null sample
MAX_DIRECTIONS = 10_000
MAX_GRAM_BLOCK = 16_384
MAX_NULL_SAMPLE = 10 ** 8
#: random directions of `marginal_test`, beside every coordinate
MARGINAL_DIRECTIONS = 256
#: the families of `marginal_test`'s p-values
MARGINAL_FAMILIES = ("coordinate_skewness", "coordinate_kurtosis", "direction_skewness",
                     "direction_kurtosis")
#: the smallest sample of `marginal_test` (the kurtosis transformation needs n ≥ 20)
MIN_MARGINAL_N = 20
