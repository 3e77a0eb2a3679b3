"""Gaussian moments pushed through whole encoder layers (`predict_moments`).

A layer is a composition of affine maps of the token (the attention sublayer on a Gaussian
cloud, SPEC §2, with the residual; the LayerNorm closure) and the feed-forward block, whose
Gaussian closure gives its mean, covariance and mean Jacobian E[J] (`closures`). With x ~ N(m, Σ):

    attention:    r = x + a(y),  y = LN_a(x),  a(y) = M y + c   ⇒  E r = E x + M E y + c,
                  Cov r = Σ_x + Σ_x J_aᵀ Mᵀ + M J_a Σ_x + M Σ_y Mᵀ
    feed-forward: z = r + o(LN_f(r))   ⇒  E z = E r + E o,
                  Cov z = Σ_r + Σ_r J_fᵀ E[J]ᵀ + E[J] J_f Σ_r + Cov o

where J_a = E[∇LN_a], J_f = E[∇LN_f] are the mean Jacobians of the pre-norm LayerNorm closures
(identity for post-norm; Cov(x, LN(x)) = Σ_x Jᵀ by Stein's lemma) and E[J] that of the
feed-forward block; a post-norm layer applies the LayerNorm closures to r and to z. The
attention part is the N → ∞ limit of the softmax average on a Gaussian cloud (SPEC §2): on a
sequence of n tokens it is a ratio of sums that reaches this limit only when many tokens share
the softmax weight (`validity` measures where it does, SPEC §7); the LayerNorm and the
feed-forward closures carry the errors their modules document, recorded per layer
(`norm_kappa`, `mlp_bound`). Layer ℓ's output is taken as Gaussian for layer ℓ + 1 (moment
matching).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ...errors import InvalidInputError, SolverError
from ...state.validation import as_count, as_covariance, as_seed, as_vector
from .attention import gaussian_attention
from .closures import GATED_SAMPLES, MLPMoments, NormMoments, layer_norm_closure, mlp_closure
from .factors import Encoder, EncoderLayer, LayerNormParams
from .hermite import DEFAULT_TERMS, MAX_TERMS

__all__ = ["MomentPrediction", "predict_moments"]


@dataclass(frozen=True, eq=False)
class MomentPrediction:
    """Predicted Gaussian moments of every layer's tokens, the result of `predict_moments`.

    Parameters
    ----------
    means : (L+1, d) ndarray
        m_ℓ: index 0 the input, ℓ the output of layer ℓ.
    covs : (L+1, d, d) ndarray
        Σ_ℓ, indexed as means.
    attention_means : (L, d) ndarray
        The mean of the Gaussian the attention of layer ℓ acts on (after a pre-norm).
    attention_covs : (L, d, d) ndarray
        Its covariance.
    mlp_jacobians : (L, d, d) ndarray
        E[J] of the feed-forward block at its input Gaussian.
    norm_kappa : (L, 2) ndarray
        The LayerNorm closures' κ (attention norm, feed-forward norm; NaN where there is none).
    mlp_bound : (L,) ndarray
        The feed-forward closure's relative covariance error bound.
    position_free : bool
        The encoder's attention was reduced to its position-free part.
    encoder : Encoder or None, optional
        The layers predicted (kept so that a comparison can predict each layer from measured
        moments and run its baselines; None when not given).
    step_growth : (L,) ndarray or None, optional
        Measured moments only (`measured.measured_moments`): tr Σ⁺/tr Σ0 of one real residual
        attention step y ↦ y + a(y) on the tokens y the attention of layer ℓ acts on, a the
        layer's own finite-n attention output on each sequence; None for a prediction.

    Raises
    ------
    dataclasses.FrozenInstanceError
        On assignment to a field.

    See Also
    --------
    predict_moments : produces it.
    compare : measures it against the model.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".
    .. [2] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    >>> from riccati_tf.empirical.encoders import extract, predict_moments
    >>> from riccati_tf.empirical.encoders.tiny import tiny_encoder
    >>> encoder = extract(tiny_encoder("vit", hidden_size=8, n_heads=2, n_layers=2))
    >>> prediction = predict_moments(encoder)
    >>> prediction.n_layers, prediction.means.shape, prediction.attention_covs.shape
    (2, (3, 8), (2, 8, 8))
    """

    means: np.ndarray
    covs: np.ndarray
    attention_means: np.ndarray
    attention_covs: np.ndarray
    mlp_jacobians: np.ndarray
    norm_kappa: np.ndarray
    mlp_bound: np.ndarray
    position_free: bool
    encoder: Encoder | None = None
    step_growth: np.ndarray | None = None

    @property
    def n_layers(self) -> int:
        """The number L of layers."""
        return self.attention_means.shape[0]


def _closure(norm: LayerNormParams | None, m: np.ndarray, S: np.ndarray) -> NormMoments:
    """The LayerNorm closure at N(m, S), or the identity (exact) for no norm."""
    if norm is None:
        return NormMoments(m, S, np.eye(m.shape[0]), float("nan"))
    return layer_norm_closure(norm, m, S)


@dataclass(frozen=True, eq=False)
class _LayerMoments:
    out: tuple[np.ndarray, np.ndarray]
    attention_input: tuple[np.ndarray, np.ndarray]
    mlp: MLPMoments
    kappa: tuple[float, float]


def layer_moments(layer: EncoderLayer, m: np.ndarray, S: np.ndarray, *, terms: int,
                  gated_samples: int, seed: int) -> _LayerMoments:
    """The moments of one layer's output for input N(m, S) (module docstring); seed draws the
    Monte-Carlo covariance of a gated feed-forward block (`mlp_closure`)."""
    pre = layer.placement == "pre"
    ca = _closure(layer.attn_norm if pre else None, m, S)
    M, c = gaussian_attention(layer, ca.mean, ca.cov)
    cross = S @ ca.jacobian.T @ M.T  # Cov(x, a)
    mr, Sr = m + M @ ca.mean + c, S + cross + cross.T + M @ ca.cov @ M.T
    kappas = [ca.kappa]
    if not pre:
        cl = _closure(layer.attn_norm, mr, Sr)
        mr, Sr, kappas[0] = cl.mean, cl.cov, cl.kappa
    cf = _closure(layer.mlp_norm if pre else None, mr, Sr)
    mo = mlp_closure(layer.mlp, cf.mean, cf.cov, terms=terms, gated_samples=gated_samples,
                     seed=seed)
    cross = Sr @ cf.jacobian.T @ mo.jacobian.T  # Cov(r, o)
    mz, Sz = mr + mo.mean, Sr + cross + cross.T + mo.cov
    kappas.append(cf.kappa)
    if not pre:
        cl = _closure(layer.mlp_norm, mz, Sz)
        mz, Sz, kappas[1] = cl.mean, cl.cov, cl.kappa
    return _LayerMoments((mz, 0.5 * (Sz + Sz.T)), (ca.mean, ca.cov), mo, (kappas[0], kappas[1]))


def predict_moments(encoder: Encoder, mean0: ArrayLike | None = None,
                    cov0: ArrayLike | None = None, *, terms: int = DEFAULT_TERMS,
                    gated_samples: int = GATED_SAMPLES, seed: int = 0,
                    progress: Callable[[int, int], None] | None = None) -> MomentPrediction:
    """Gaussian moments (m_ℓ, Σ_ℓ), ℓ = 0..L, pushed through every layer of an encoder.

    From tokens N(mean0, cov0) at the input of the first layer, each layer maps x ~ N(m, Σ)
    through the attention sublayer, affine on a Gaussian in the N → ∞ limit (SPEC §2; on n
    tokens the limit holds only where `validity.validity_map` finds it),

        E r = E x + M E y + c,   Cov r = Σ_x + Σ_x J_aᵀ Mᵀ + M J_a Σ_x + M Σ_y Mᵀ,

    and the feed-forward sublayer by its Gaussian closure (mean, covariance and mean Jacobian
    E[J]), with the LayerNorm closures before or after them; layer ℓ's output is taken as
    Gaussian for layer ℓ + 1 (module docstring).

    Parameters
    ----------
    encoder : Encoder
        The extracted layers (`extract`).
    mean0 : (d,) array_like, optional
        The input mean (default 0).
    cov0 : (d, d) array_like, symmetric positive semidefinite, optional
        The input covariance (default I).
    terms : int, optional
        Hermite terms of the feed-forward closure, 2 ≤ terms ≤ MAX_TERMS (default 30).
    gated_samples : int, optional
        Monte-Carlo draws for the covariance of a gated block, ≥ 2 (default GATED_SAMPLES).
    seed : int, optional
        The seed of those draws (default 0).
    progress : callable (int, int) -> None, optional
        Called as progress(ℓ, L) after each layer.

    Returns
    -------
    MomentPrediction
        The moments of every layer's output and of every attention input, the feed-forward
        mean Jacobians and the closures' error indicators.

    Raises
    ------
    InvalidInputError
        If encoder is not an Encoder; mean0 is not a finite (d,) vector; cov0 is not a finite
        (d, d) symmetric positive semidefinite matrix; terms, gated_samples or seed is out of
        range.
    SolverError
        If the predicted moments overflow float64 within the encoder's depth.

    See Also
    --------
    extract : the Encoder.
    compare : the prediction against the model's own hidden states.
    atlas : reads Σ0 and E[J_MLP] of each layer from the prediction.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".
    .. [2] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    For isotropic input the LayerNorm's relative norm fluctuation is κ = √(2(d − 1))/(d − 1)
    (κ² ≈ 2/d):

    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders import extract, predict_moments
    >>> from riccati_tf.empirical.encoders.tiny import tiny_encoder
    >>> encoder = extract(tiny_encoder("vit", hidden_size=8, n_heads=2, n_layers=2))
    >>> prediction = predict_moments(encoder)
    >>> prediction.means.shape, prediction.covs.shape
    ((3, 8), (3, 8, 8))
    >>> print(round(float(prediction.norm_kappa[0, 0]), 6), round(float(np.sqrt(14) / 7), 6))
    0.534522 0.534522
    """
    if not isinstance(encoder, Encoder):
        raise InvalidInputError(f"encoder must be an Encoder (from extract), got "
                                f"{type(encoder).__name__}")
    terms = as_count("terms", terms, minimum=2, maximum=MAX_TERMS)
    gated_samples = as_count("gated_samples", gated_samples, minimum=2)
    seed = as_seed("seed", seed)
    d = encoder.d
    m = np.zeros(d) if mean0 is None else as_vector("mean0", mean0, d)
    S = np.eye(d) if cov0 is None else as_covariance("cov0", cov0, d)
    means, covs, att_m, att_S, jac, kappa, bound = [m], [S], [], [], [], [], []
    for i, layer in enumerate(encoder.layers):
        lm = layer_moments(layer, m, S, terms=terms, gated_samples=gated_samples, seed=seed)
        m, S = lm.out
        means.append(m)
        covs.append(S)
        att_m.append(lm.attention_input[0])
        att_S.append(lm.attention_input[1])
        jac.append(lm.mlp.jacobian)
        kappa.append(lm.kappa)
        bound.append(lm.mlp.bound)
        if progress is not None:
            progress(i + 1, len(encoder.layers))
    if not (np.all(np.isfinite(means[-1])) and np.all(np.isfinite(covs[-1]))):
        raise SolverError("the predicted moments overflow float64 within the encoder's depth")
    return MomentPrediction(np.array(means), np.array(covs), np.array(att_m), np.array(att_S),
                            np.array(jac), np.array(kappa), np.array(bound),
                            encoder.position_free, encoder)
