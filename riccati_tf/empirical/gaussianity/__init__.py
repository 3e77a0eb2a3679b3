"""How far a token cloud is from its moment-matched Gaussian (SPEC §7).

A sample x_1..x_n ∈ R^d is centred and whitened with its maximum-likelihood covariance
S = (1/n) Σ (x_i − x̄)(x_i − x̄)ᵀ, restricted to the numerical range of S (rank r):
y_i = Λ^{-1/2} Qᵀ (x_i − x̄). Every statistic below is a function of the whitened cloud, hence
affine invariant, and is computed from the Gram matrix G_ij = ⟨y_i, y_j⟩ in row blocks (memory
O(block · n)):

    Mardia skewness   b1 = (1/n²) Σ_ij G_ij³            (= ‖E_n[y⊗y⊗y]‖_F²)
    Mardia kurtosis   b2 = (1/n) Σ_i G_ii²
    energy statistic  E  = n [ (2/n) Σ_i E|y_i − Z| − E|Z − Z'| − (1/n²) Σ_ij |y_i − y_j| ],
                      Z, Z' ~ N(0, I_r) (Székely–Rizzo test of multivariate normality)
    sliced W2         SW2² = mean over L unit θ of (1/n) Σ_i (⟨θ, y⟩_(i) − Φ⁻¹((i − ½)/n))²,
                      the 1-D W2 distances between the sorted projections and the n-point
                      quantile sample of the fitted Gaussian (every ⟨θ, Z⟩ is N(0, 1))
    third moment      ‖E_n[y⊗y⊗y]‖_F / sqrt(r(r+2)(r+4))   (Gaussian: 0; scale E|Z|⁶)
    fourth moment     ‖E_n[y⊗y⊗y⊗y] − T‖_F / ‖T‖_F,   T_ijkl = δ_ijδ_kl + δ_ikδ_jl + δ_ilδ_jk,
                      ‖T‖_F² = 3r² + 6r,  ⟨E_n[y⊗⁴], T⟩ = 3 b2,  ‖E_n[y⊗⁴]‖_F² = (1/n²) Σ G_ij⁴

Calibration: the statistics are affine invariant, so their null distribution depends only on
(n, r) (and, for SW2, on the directions θ, which are drawn from `seed` and shared by the
observed sample and the null). `null_distribution` simulates it from standard Gaussian samples
of the same size (a Monte-Carlo null; cached explicitly), and `normality_test` turns it into
p-values
p = (1 + #{null ≥ observed}) / (1 + n_null) (two-sided for the kurtosis). The decision rejects
Gaussianity when the smallest of the four test p-values (skewness, kurtosis, energy, sliced W2)
is below α/4 (Bonferroni). Mardia's asymptotic p-values (χ² with the small-sample factor, and the
normal law of b2 around r(r+2)(n−1)/(n+1)) are reported alongside for reference only: at high r
they are not calibrated.

Size and power measured with the fixed seeds of tests/test_gaussianity.py (n = 400, d = 4,
n_null = 200, α = 0.05, 100 samples each): Gaussian samples rejected in 1/100 (size 0.01; the
Bonferroni rule is conservative); a uniform cube in 100/100; the mixture
½N(−2e₁, I) + ½N(2e₁, I) in 100/100 (with separation 1.5 instead of 2: 39/100). The energy
statistic carries the mixture; the kurtosis alone rejects it in under a third of the samples.

Marginal tests (`marginal_test`): the multivariate statistics average over directions and miss
a single heavy-tailed coordinate (a "massive activation": a few tokens with huge values in one
coordinate) when r is large. Every coordinate j and MARGINAL_DIRECTIONS random directions θ
(uniform on the sphere of the coordinate-standardised space, drawn from the seed) get the
sample skewness g1 = m3/m2^{3/2} and excess kurtosis g2 = m4/m2² − 3 of the projection, each
with its p-value from its exact null moments at the same n (D'Agostino's transformation of g1,
with Var b1 = 6(n − 2)/((n + 1)(n + 3)), and the Anscombe–Glynn transformation of b2 = g2 + 3,
with E b2 = 3(n − 1)/(n + 1), Var b2 = 24n(n − 2)(n − 3)/((n + 1)²(n + 3)(n + 5)) and its
skewness; both two-sided): under H0 any fixed projection of a Gaussian sample is a Gaussian
sample of size n, so these nulls hold coordinate by coordinate and direction by direction. The
2(d + L) hypotheses are corrected by Holm's step-down procedure (family-wise error ≤ α under any
dependence; `holm`), and coordinates whose kurtosis is rejected on the heavy side are reported
as heavy-tailed. Size measured by tests/test_gaussianity.py: exact Gaussian samples at
d = 192, n = 2000 (L = 256) are rejected in ≤ α + 3 Monte-Carlo standard errors over 200 seeds;
t(5) coordinates, one t(5) coordinate, and one coordinate with a few massive values are rejected.

Reference: K. V. Mardia, Biometrika 57 (1970) 519–530; G. J. Székely and M. L. Rizzo,
J. Multivariate Anal. 93 (2005) 58–80; R. B. D'Agostino, Biometrika 57 (1970) 679–681;
F. J. Anscombe and W. J. Glynn, Biometrika 70 (1983) 227–234; S. Holm, Scand. J. Statist. 6
(1979) 65–70.

The modules follow the method: `constants` (the tolerances, sizes and input bounds), `results`
(`GaussianityStats`, `NullDistribution`, `NormalityTest`, `MarginalTest`), `distances` (the
whitening and the distances of one sample, `statistics`), `null` (the Monte-Carlo null and its
p-values, `null_distribution`, `acceptance_band`, `tail_p_value`), `normality` (the calibrated
decision, `normality_test`) and `marginal` (`holm` and `marginal_test`).
"""

from ..defaults import MAX_NULL
from .constants import (
    GRAM_BLOCK,
    MARGINAL_DIRECTIONS,
    MARGINAL_FAMILIES,
    MAX_DIRECTIONS,
    MAX_GRAM_BLOCK,
    MAX_NULL_SAMPLE,
    MIN_MARGINAL_N,
    N_DIRECTIONS,
    RANK_RTOL,
    TESTS,
)
from .distances import statistics
from .marginal import holm, marginal_test
from .normality import normality_test
from .null import acceptance_band, null_distribution, tail_p_value
from .results import GaussianityStats, MarginalTest, NormalityTest, NullDistribution

__all__ = ["GRAM_BLOCK", "MARGINAL_DIRECTIONS", "MARGINAL_FAMILIES", "MAX_DIRECTIONS",
           "MAX_GRAM_BLOCK", "MAX_NULL", "MAX_NULL_SAMPLE", "MIN_MARGINAL_N", "N_DIRECTIONS",
           "RANK_RTOL", "TESTS", "GaussianityStats", "MarginalTest", "NormalityTest",
           "NullDistribution", "acceptance_band", "holm", "marginal_test", "normality_test",
           "null_distribution", "statistics", "tail_p_value"]
