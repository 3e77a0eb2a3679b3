"""Gaussian closures (moment matching) of the LayerNorm and the feed-forward block.

LayerNorm, y = γ ⊙ z/√q + β with z = P x, P = I − 11ᵀ/d, q = |z|²/d + ε. For x ~ N(m, Σ),
z ~ N(μ, C) with μ = P m, C = PΣP = U diag(λ) Uᵀ, and the closure is exact: every moment is a
one-dimensional integral. With the Laplace representations

    q^{−1/2} = π^{−1/2} ∫_0^∞ t^{−1/2} e^{−tq} dt,   q^{−1} = ∫_0^∞ e^{−tq} dt,
    q^{−3/2} = 2π^{−1/2} ∫_0^∞ t^{1/2} e^{−tq} dt,

and the exponentially tilted Gaussian (s = t/d, a = Uᵀμ, D_k = 1 + 2sλ_k)

    E[e^{−tq} g(z)] = M(t) E_t[g],   M(t) = e^{−tε} Π_k D_k^{−1/2} exp(−s Σ_k a_k²/D_k),

where under E_t the coordinates Uᵀz are independent N(a_k/D_k, λ_k/D_k), the moments

    E z/√q,   E zzᵀ/q,   E q^{−1/2},   E zzᵀ/q^{3/2}

are integrals over t of M(t) times the tilted first and second moments. They give E y, Cov y =
diag(γ)(E zzᵀ/q − E(z/√q) E(z/√q)ᵀ)diag(γ) and E[∇y] = diag(γ)(E q^{−1/2} I − E zzᵀ/(d q^{3/2}))P,
with Cov(x, y) = Σ E[∇y]ᵀ (Stein's lemma). The integrals are computed with the trapezoidal rule
in u = log(t q̄) (q̄ = E q) on |u| ≤ NORM_SPAN, with step h = NORM_STEP halved until the rules
of step h and 2h agree to NORM_TOL: the integrands are analytic in a strip around the real
axis, so the rule converges exponentially in 1/h (a large mean narrows the strip: |μ|² = 100 tr C
needs h = 0.1); the reported `quadrature_error` is the relative difference to the rule of step
2h, an upper estimate of the error of the rule of step h. Only the
quadrature rounds: there is no expansion in the norm fluctuation κ = √Var q / q̄
(Var q = (2 tr C² + 4 μᵀCμ)/d², κ² ≈ 2/d for isotropic Σ), which is reported for reference.
(For isotropic zero-mean z and ε = 0, z/|z| is uniform on the sphere and Cov y = d/(d − 1) P.)
The moments diverge only when q can vanish with too little spread around zero (ε = 0 and
rank C ≤ 1, where E q^{−1/2} = ∞): then the integrand has not decayed at the end of the range and
the closure raises.

A LayerNorm's output is not Gaussian (its tokens lie near a sphere), so a Gaussian closure
applied to it — a second LayerNorm, or the feed-forward block after a post-LayerNorm — matches
the moments of a Gaussian that the input is known not to be. Both closures take the reason as
`non_gaussian_input` (e.g. LAYER_NORM_OUTPUT) and return it in their result, so that whoever
composes them can report where the Gaussian assumption is known to fail.

Feed-forward block, o = W_out f(u) + b_out, u = W_in y + b_in, for y ~ N(m, Σ): u is Gaussian,
E f(u) and Cov f(u) follow from `hermite` (exact one-dimensional moments, Mehler's series for the
cross-covariances with its computable cut-off bound), and by Stein's lemma the cross-covariance
with anything jointly Gaussian with y is linear: Cov(r, o) = Cov(r, y) E[J]ᵀ with the mean
Jacobian E[J] = W_out diag(E f'(u)) W_in. The gated block o = W_out (f(u) ⊙ g) + b_out,
g = W_gate y + b_gate, has the exact mean E[f(u_i)]E[g_i] + Cov(u_i, g_i)E[f'(u_i)] and mean
Jacobian W_out (diag(E f'(u) ⊙ E g + Cov(u, g) ⊙ E f''(u)) W_in + diag(E f(u)) W_gate) (Stein
again); its covariance is moment-matched by Monte Carlo with `gated_samples` draws of y. Its
error is random: the root-mean-square error of the sample covariance Ĉ of o,
E‖Ĉ − C‖_F² = (E|o − Eo|⁴ − ‖C‖_F²)/n + O(n^{-2}), is estimated from the same draws
(`MLPMoments.estimate`, an estimate), and by Markov's inequality on ‖Ĉ − C‖_F²,
P(‖Ĉ − C‖_F ≥ rmse/√δ) ≤ δ, so `MLPMoments.bound` = rmse/√δ with δ = 1 − GATED_CONFIDENCE is
a bound that holds with probability at least GATED_CONFIDENCE (up to the sampling error of the
rmse estimate itself, O(n^{-1/2}) relative). For the plain block `bound` is Mehler's cut-off
bound, a deterministic bound on the series truncation (`hermite`), which is the closure's only
error for Gaussian input: it is tiny (|ρ|^{K+1}) when the pre-activations are weakly correlated,
and is never reported below the rounding of the Hermite tails.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import InvalidInputError
from ...state.validation import as_seed
from .factors import LayerNormParams, MLPParams
from .forward import mlp_forward
from .hermite import DEFAULT_TERMS, activation_covariance, activation_moments

__all__ = ["GATED_CONFIDENCE", "GATED_SAMPLES", "LAYER_NORM_OUTPUT", "NORM_REFINE", "NORM_SPAN",
           "NORM_STEP", "NORM_TOL",
           "MLPMoments", "NormMoments", "layer_norm_closure", "mlp_closure"]

#: draws of y for the covariance of a gated feed-forward block
GATED_SAMPLES = 20_000
#: the probability with which the Monte-Carlo covariance of a gated block is within its bound
GATED_CONFIDENCE = 0.95
#: first step h and half-width of the trapezoidal rule in u = log(t q̄) of the LayerNorm
#: integrals; h is halved (at most NORM_REFINE times) until the rules of step h and 2h agree
#: to NORM_TOL relative
NORM_STEP = 0.2
NORM_SPAN = 80.0
NORM_TOL = 1e-9
NORM_REFINE = 4
#: `non_gaussian_input` of a closure applied to the output of a LayerNorm
LAYER_NORM_OUTPUT = "the output of a LayerNorm (its tokens lie near a sphere, not Gaussian)"
#: a LayerNorm integrand still above this fraction of its integral at the end of the range
#: diverges (ε = 0 and rank PΣP ≤ 1)
_TAIL_TOL = 1e-13


@dataclass(frozen=True, eq=False)
class NormMoments:
    """Moments of y = LN(x) for Gaussian x, the result of `layer_norm_closure`.

    Parameters
    ----------
    mean : (d,) ndarray
        E y.
    cov : (d, d) ndarray
        Cov y.
    jacobian : (d, d) ndarray
        E[∇y], so that Cov(r, y) = Cov(r, x) E[∇y]ᵀ (Stein's lemma).
    kappa : float
        κ, the relative fluctuation of the norm (NaN: no norm); for reference, the closure
        does not expand in it.
    quadrature_error : float, optional
        The relative difference ‖Cov_h − Cov_2h‖_F/‖Cov_h‖_F between the trapezoidal rules of
        step h and 2h (an upper estimate of the quadrature error; 0 for no norm).
    non_gaussian_input : str, optional
        Why the input is known not to be Gaussian ("" when it is taken as Gaussian): the
        moments are then those of the moment-matched Gaussian's LayerNorm.

    Raises
    ------
    dataclasses.FrozenInstanceError
        On assignment to a field.

    See Also
    --------
    layer_norm_closure : produces it.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders import LayerNormParams
    >>> from riccati_tf.empirical.encoders.closures import layer_norm_closure
    >>> moments = layer_norm_closure(LayerNormParams(np.ones(3), np.zeros(3), 0.0),
    ...                              np.zeros(3), np.eye(3))
    >>> moments.mean.tolist(), moments.cov.shape, moments.non_gaussian_input
    ([0.0, 0.0, 0.0], (3, 3), '')
    """

    mean: np.ndarray
    cov: np.ndarray
    jacobian: np.ndarray
    kappa: float
    quadrature_error: float = 0.0
    non_gaussian_input: str = ""


@dataclass(frozen=True, eq=False)
class MLPMoments:
    """Moments of o = mlp(y) for Gaussian y, the result of `mlp_closure`.

    Parameters
    ----------
    mean : (d,) ndarray
        E o.
    cov : (d, d) ndarray
        Cov o.
    jacobian : (d, d) ndarray
        The mean Jacobian E[J], so that Cov(r, o) = Cov(r, y) E[J]ᵀ (Stein's lemma).
    bound : float
        A bound on the closure's error on cov for Gaussian y, relative to ‖cov‖_F: Mehler's
        cut-off bound (deterministic) for a plain block; for a gated block the Monte-Carlo
        covariance's error is below it with probability ≥ `confidence` (Markov's inequality
        on the estimated mean-square error, module docstring).
    estimate : float, optional
        The estimated root-mean-square error of cov relative to ‖cov‖_F (an estimate, not a
        bound: the gated block's Monte-Carlo error is about this size; for a plain block it
        equals bound).
    confidence : float, optional
        The probability with which bound holds (1.0: deterministic).
    non_gaussian_input : str, optional
        Why y is known not to be Gaussian ("" when it is taken as Gaussian).

    Raises
    ------
    dataclasses.FrozenInstanceError
        On assignment to a field.

    See Also
    --------
    mlp_closure : produces it.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders import MLPParams
    >>> from riccati_tf.empirical.encoders.closures import mlp_closure
    >>> I, z = np.eye(2), np.zeros(2)
    >>> moments = mlp_closure(MLPParams(I, z, I, z, "relu"), z, I)
    >>> moments.jacobian.tolist(), moments.bound
    ([[0.5, 0.0], [0.0, 0.5]], 0.0)
    """

    mean: np.ndarray
    cov: np.ndarray
    jacobian: np.ndarray
    bound: float
    estimate: float = 0.0
    confidence: float = 1.0
    non_gaussian_input: str = ""


def _tilted_integrals(mu: np.ndarray, C: np.ndarray, eps: float, h: float
                      ) -> tuple[tuple[np.ndarray, np.ndarray, float, np.ndarray],
                                 tuple[np.ndarray, np.ndarray], float]:
    """((E z/√q, E zzᵀ/q, E q^{-1/2}, E zzᵀ/q^{3/2}), (E z/√q, E zzᵀ/q) of the rule of step
    2h, the largest end-of-range share of an integrand) for z ~ N(μ, C), q = |z|²/d + ε, by
    the trapezoidal rule of step h (module docstring)."""
    d = mu.shape[0]
    lam, U = np.linalg.eigh(0.5 * (C + C.T))
    lam = np.clip(lam, 0.0, None)
    a = U.T @ mu
    q_bar = (a @ a + lam.sum()) / d + eps
    t = np.exp(np.arange(-NORM_SPAN, NORM_SPAN + h / 2, h)) / q_bar
    D = 1 + (2 / d) * t[:, None] * lam[None, :]
    log_m = -0.5 * np.log(D).sum(axis=1) - (t / d) * (a * a / D).sum(axis=1) - t * eps
    w = h * t * np.exp(log_m)  # dt = t du
    w_half, w_three = w / np.sqrt(np.pi * t), 2 * w * np.sqrt(t / np.pi)
    m, c = a[None, :] / D, lam[None, :] / D  # tilted means and variances in the eigenbasis
    size = c.sum(axis=1) + (m * m).sum(axis=1)  # the trace of the tilted second moment
    parts = np.array([w * size, w_half, w_three * size])
    parts /= np.maximum(parts.sum(axis=1, keepdims=True), np.finfo(float).tiny)
    ends = float(np.max(parts[:, [0, -1]]))
    keep = np.flatnonzero(np.max(parts, axis=0) > 1e-20)  # the rest cannot move a digit
    coarse = keep[keep % 2 == 0]

    def first(weights: np.ndarray, k: np.ndarray) -> np.ndarray:
        return U @ (weights[k] @ m[k])

    def second(weights: np.ndarray, k: np.ndarray) -> np.ndarray:
        inner = (m[k].T * weights[k]) @ m[k]
        inner[np.diag_indices(d)] += weights[k] @ c[k]
        return U @ inner @ U.T

    fine = (first(w_half, keep), second(w, keep), float(w_half.sum()), second(w_three, keep))
    return fine, (2 * first(w_half, coarse), 2 * second(w, coarse)), ends


def layer_norm_closure(norm: LayerNormParams, mean: np.ndarray, cov: np.ndarray, *,
                       non_gaussian_input: str = "") -> NormMoments:
    """The exact moments of y = LN(x) at x ~ N(mean, cov), as one-dimensional integrals.

    With z = P x ~ N(μ, C) and q = |z|²/d + ε, E z/√q, E zzᵀ/q, E q^{−1/2} and E zzᵀ/q^{3/2}
    are Laplace integrals ∫_0^∞ (·) E[e^{−tq} ·] dt of the exponentially tilted Gaussian, whose
    weight det(I + 2tC/d)^{−1/2} e^{−tε − tμᵀ(d + 2tC)^{−1}μ} is closed-form (module
    docstring); they give E y, Cov y and E[∇y] with no expansion in the norm fluctuation.

    Parameters
    ----------
    norm : LayerNormParams
        The LayerNorm (γ, β, ε).
    mean : (d,) ndarray
        The mean of x.
    cov : (d, d) ndarray
        The covariance of x (not validated; negative eigenvalues of PΣP are clipped).
    non_gaussian_input : str, optional
        Why x is known not to be Gaussian (e.g. LAYER_NORM_OUTPUT), carried into the result;
        "" (default) when x is taken as Gaussian.

    Returns
    -------
    NormMoments
        E y, Cov y, E[∇y], κ, the quadrature error estimate and non_gaussian_input.

    Raises
    ------
    InvalidInputError
        When the moments diverge: ε = 0 and PΣP of rank ≤ 1 (E q^{−1/2} = ∞), or q ≡ 0.
    ValueError
        From numpy when the shapes of mean, cov and norm disagree.

    See Also
    --------
    mlp_closure : the closure of the feed-forward block.
    predict_moments : composes the closures layer by layer.

    Notes
    -----
    Trapezoidal rule in u = log(t q̄) on |u| ≤ NORM_SPAN, step NORM_STEP halved until two
    successive rules agree to NORM_TOL (exponentially convergent: the integrands are analytic
    in a strip); cost O(d³) for the eigenvectors of C plus O(N d²) for the N nodes whose
    weights are not negligible (a few hundred).

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    For isotropic zero-mean input and ε = 0, z/|z| is uniform on the sphere and the
    covariance is d/(d − 1) P with P = I − 11ᵀ/d:

    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders import LayerNormParams
    >>> from riccati_tf.empirical.encoders.closures import layer_norm_closure
    >>> moments = layer_norm_closure(LayerNormParams(np.ones(4), np.zeros(4), 0.0),
    ...                              np.zeros(4), np.eye(4))
    >>> bool(np.allclose(moments.cov, 4 / 3 * (np.eye(4) - 1 / 4), atol=1e-12))
    True
    >>> print(round(moments.kappa, 6), round(float(np.sqrt(2 / 3)), 6))
    0.816497 0.816497

    A deterministic input is normalised exactly:

    >>> x = np.array([1.0, 2.0, 4.0])
    >>> moments = layer_norm_closure(LayerNormParams(np.ones(3), np.zeros(3), 0.0), x,
    ...                              np.zeros((3, 3)))
    >>> bool(np.allclose(moments.mean, (x - x.mean()) / x.std(), atol=1e-12))
    True
    """
    d = mean.shape[0]
    mu = mean - mean.mean()
    PS = cov - cov.mean(axis=0, keepdims=True)
    C = PS - PS.mean(axis=1, keepdims=True)
    Cmu = C @ mu
    q_bar = (mu @ mu + np.trace(C)) / d + norm.eps
    if not q_bar > 0:
        raise InvalidInputError("the LayerNorm input has no spread and ε = 0: q = |Px|²/d + ε "
                                "is zero and y = Px/√q is undefined")
    kappa = float(np.sqrt(max(2 * np.sum(C * C) + 4 * mu @ Cmu, 0.0)) / (d * q_bar))
    g = norm.gamma

    def covariance(first: np.ndarray, second: np.ndarray) -> np.ndarray:
        S = g[:, None] * (second - np.outer(first, first)) * g[None, :]
        return 0.5 * (S + S.T)

    for level in range(NORM_REFINE + 1):
        (Ez, Ezz, Eq, Ezz3), coarse, ends = _tilted_integrals(mu, C, norm.eps,
                                                              NORM_STEP / 2**level)
        cov_y = covariance(Ez, Ezz)
        error = float(np.linalg.norm(cov_y - covariance(*coarse))
                      / max(np.linalg.norm(cov_y), np.finfo(float).tiny))
        if error <= NORM_TOL:
            break
    if ends > _TAIL_TOL:
        raise InvalidInputError(f"the LayerNorm moments diverge at x ~ N(mean, cov): with "
                                f"ε = {norm.eps:g} the centred covariance PΣP leaves "
                                f"q = |Px|²/d + ε too much mass near 0 (E q^(-1/2) = ∞; "
                                f"rank ≤ 1 with ε = 0)")
    inner = np.eye(d) * Eq - Ezz3 / d
    jac = g[:, None] * (inner - inner.mean(axis=1, keepdims=True))  # (·) P
    return NormMoments(g * Ez + norm.beta, cov_y, jac, kappa, error, non_gaussian_input)


def _correlation(S: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    inv = np.where(sigma > 0, 1 / np.where(sigma > 0, sigma, 1.0), 0.0)
    R = np.clip(S * np.outer(inv, inv), -1.0, 1.0)
    np.fill_diagonal(R, np.where(sigma > 0, 1.0, 0.0))
    return R


def _relative(C_bound: np.ndarray, cov: np.ndarray) -> float:
    scale = np.linalg.norm(cov)
    return float(np.linalg.norm(C_bound) / scale) if scale > 0 else 0.0


def mlp_closure(mlp: MLPParams, mean: np.ndarray, cov: np.ndarray, *,
                terms: int = DEFAULT_TERMS, gated_samples: int = GATED_SAMPLES,
                seed: int = 0, non_gaussian_input: str = "") -> MLPMoments:
    """The Gaussian closure of the feed-forward block at y ~ N(mean, cov) (module docstring).

    u = W_in y + b_in is Gaussian: E f(u) and Cov f(u) follow from `hermite` (exact
    one-dimensional moments and Mehler's series with its cut-off bound), and the mean Jacobian
    is E[J] = W_out diag(E f'(u)) W_in. A gated block has its exact mean and mean Jacobian
    (Stein's lemma) and a Monte-Carlo covariance from `gated_samples` draws.

    Parameters
    ----------
    mlp : MLPParams
        The block.
    mean : (d,) ndarray
        The mean of y.
    cov : (d, d) ndarray
        The covariance of y (not validated).
    terms : int, optional
        Hermite terms of Mehler's series, 2 ≤ terms ≤ MAX_TERMS (default DEFAULT_TERMS).
    gated_samples : int, optional
        Draws for the covariance of a gated block (default GATED_SAMPLES).
    seed : int, optional
        The seed of those draws (default 0).
    non_gaussian_input : str, optional
        Why y is known not to be Gaussian (e.g. LAYER_NORM_OUTPUT), carried into the result;
        "" (default) when y is taken as Gaussian.

    Returns
    -------
    MLPMoments
        E o, Cov o, E[J], the relative error bound on Cov o (with its confidence) and the
        error estimate.

    Raises
    ------
    InvalidInputError
        For an activation outside ACTIVATIONS or terms out of range.

    See Also
    --------
    layer_norm_closure : the closure of the LayerNorm.
    riccati_tf.empirical.encoders.hermite.activation_moments : the one-dimensional moments.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    ReLU of a standard normal per unit: E o = φ(0), Var o = 1/2 − 1/(2π), E[J] = I/2.

    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders import MLPParams
    >>> from riccati_tf.empirical.encoders.closures import mlp_closure
    >>> I, z = np.eye(2), np.zeros(2)
    >>> moments = mlp_closure(MLPParams(I, z, I, z, "relu"), z, I)
    >>> np.round(moments.mean, 6), np.round(moments.cov, 6)
    (array([0.398942, 0.398942]), array([[0.340845, 0.      ],
           [0.      , 0.340845]]))
    """
    seed = as_seed("seed", seed)
    mu = mlp.W_in @ mean + mlp.b_in
    Su = mlp.W_in @ cov @ mlp.W_in.T
    sigma = np.sqrt(np.maximum(np.diag(Su), 0.0))
    mom = activation_moments(mlp.activation, mu, sigma, terms)
    if not mlp.gated:
        C, err = activation_covariance(mom, _correlation(Su, sigma))
        out_cov = mlp.W_out @ C @ mlp.W_out.T
        absW = np.abs(mlp.W_out)
        bound = _relative(absW @ err @ absW.T, out_cov)
        return MLPMoments(mlp.W_out @ mom.mean + mlp.b_out, out_cov,
                          mlp.W_out @ (mom.slope[:, None] * mlp.W_in), bound, bound, 1.0,
                          non_gaussian_input)
    assert mlp.W_gate is not None  # not gated returned above
    g_mean = mlp.W_gate @ mean + mlp.b_gate
    cross = np.einsum("ij,jk,ik->i", mlp.W_in, cov, mlp.W_gate)  # Cov(u_i, g_i)
    o_mean = mlp.W_out @ (mom.mean * g_mean + cross * mom.slope) + mlp.b_out
    gain = mom.slope * g_mean + cross * mom.curvature
    jac = mlp.W_out @ (gain[:, None] * mlp.W_in + mom.mean[:, None] * mlp.W_gate)
    out_cov, rmse = _sampled_cov(mlp, mean, cov, gated_samples, seed)
    return MLPMoments(o_mean, out_cov, jac, rmse / np.sqrt(1 - GATED_CONFIDENCE), rmse,
                      GATED_CONFIDENCE, non_gaussian_input)


def _sampled_cov(mlp: MLPParams, mean: np.ndarray, cov: np.ndarray, n: int, seed: int
                 ) -> tuple[np.ndarray, float]:
    """Monte-Carlo covariance Ĉ of the gated block and its estimated relative root-mean-square
    error √(E‖Ĉ − C‖_F²)/‖Ĉ‖_F, E‖Ĉ − C‖_F² ≈ Σ_ij Var(o_i o_j)/n = (E|o − Eo|⁴ − ‖C‖_F²)/n
    (O(n d): Σ_ij o_i² o_j² = |o|⁴), with the moments replaced by their sample values."""
    w, U = np.linalg.eigh(cov)
    root = U * np.sqrt(np.clip(w, 0.0, None))
    y = mean + np.random.default_rng(seed).standard_normal((n, mean.shape[0])) @ root.T
    o = mlp_forward(mlp, y)
    c = o - o.mean(axis=0)
    C = c.T @ c / (n - 1)
    mse = max(float(np.mean(np.sum(c * c, axis=1) ** 2)) - float(np.sum(C * C)), 0.0) / n
    return C, float(np.sqrt(mse) / max(np.linalg.norm(C), np.finfo(float).tiny))
