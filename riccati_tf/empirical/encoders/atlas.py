"""Stability atlas of an encoder: the SPEC §5 sign conditions of every head and the regime of
every layer's attention flow.

Per layer ℓ and head h:

- inertia (n+, n0, n−) of sym(V_h) and of sym(B_h) (eigenvalues within INERTIA_RTOL·max|λ| of
  zero count as zero; a head of size d_h < d has n0 ≥ d − 2d_h, so it is never definite);
- `sign`: "opposite" when one symmetric part is positive and the other negative semidefinite
  (the bounded case of SPEC §5: G = −v(B + Bᵀ) ⪰ 0), "same" when both are of one sign (G ⪯ 0:
  blow-up), "indefinite" otherwise;
- the scalar fit v_h = tr V_h / d, its relative distance ‖V_h − v_h I‖_F / ‖V_h‖_F, and
  G_h = −v_h (B_h + B_hᵀ).

Per layer, the continuous-depth attention flow with every head replaced by its scalar fit,
Σ̇ = AΣ + ΣAᵀ − ΣGΣ with G = Σ_h G_h, from Σ0 = the predicted covariance the layer's attention
acts on (`predict_moments`): the inertia of G (G ⪰ 0: no blow-up ever; G ⪯ 0: blow-up for
A = 0), its regime and blow-up time (`blowup.flow_regime`) with A = 0 and
with A = E[J_MLP], the feed-forward block's mean Jacobian at its input Gaussian (up to
`horizon`). The LayerNorms are not part of this flow.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import InvalidInputError
from ...state.validation import as_time
from .blowup import flow_regime
from .factors import Encoder, HeadFactors
from .propagation import MomentPrediction, predict_moments

__all__ = ["DEFAULT_HORIZON", "INERTIA_RTOL", "SIGNS", "Atlas", "atlas"]

#: eigenvalues within INERTIA_RTOL·max|λ| of zero count as zero in an inertia
INERTIA_RTOL = 1e-9
#: horizon (in layers of unit depth) of the flow with A = E[J_MLP]
DEFAULT_HORIZON = 10.0
SIGNS = ("opposite", "same", "indefinite")


@dataclass(frozen=True, eq=False)
class Atlas:
    """The stability atlas of an encoder: SPEC §5 sign conditions per head and the regime of
    every layer's attention flow Σ̇ = AΣ + ΣAᵀ − ΣGΣ, G = Σ_h G_h (module docstring).

    Parameters
    ----------
    model : str
        The name of the model ("Encoder" for an extracted one).
    family : str
        The transformers model_type.
    d : int
        The hidden size.
    position_free : bool
        Whether only the position-free part of the attention was extracted.
    v_inertia : (L, H, 3) ndarray of int
        (n+, n0, n−) of sym(V_h) per layer and head.
    b_inertia : (L, H, 3) ndarray of int
        (n+, n0, n−) of sym(B_h).
    sign : (L, H) ndarray of str
        One of SIGNS: "opposite" (bounded case of SPEC §5), "same" (blow-up) or "indefinite".
    scalar_v : (L, H) ndarray of float
        The scalar fit v_h = tr V_h / d.
    scalar_distance : (L, H) ndarray of float
        ‖V_h − v_h I‖_F / ‖V_h‖_F.
    g_inertia : (L, 3) ndarray of int
        (n+, n0, n−) of G = Σ_h G_h, G_h = −v_h (B_h + B_hᵀ).
    regime : (L,) ndarray of str
        The regime of the flow with A = 0 ("blows_up", "collapses" or "converges").
    blowup_time : (L,) ndarray of float
        T* with A = 0 (NaN for none).
    regime_mlp : (L,) ndarray of str
        The regime with A = E[J_MLP] up to the horizon ("blows_up" or "bounded").
    blowup_time_mlp : (L,) ndarray of float
        T* with A = E[J_MLP] (NaN for none).
    horizon : float
        The horizon of the flow with A = E[J_MLP].

    Raises
    ------
    dataclasses.FrozenInstanceError
        On assignment to a field.

    See Also
    --------
    atlas : produces it.
    plot_atlas : its figure.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders import (Encoder, EncoderLayer, HeadFactors,
    ...     LayerNormParams, MLPParams, atlas)
    >>> I, z = np.eye(2), np.zeros(2)
    >>> head = HeadFactors(I, z, I, z, I, z, I, 1.0)  # B = V = I: signs "same"
    >>> mlp = MLPParams(np.zeros((2, 2)), z, I, z, "relu")  # E[J_MLP] = 0
    >>> norm = LayerNormParams(np.ones(2), z, 1e-5)
    >>> encoder = Encoder((EncoderLayer((head,), z, None, norm, mlp, "pre"),), "bert", None,
    ...                   False)
    >>> result = atlas(encoder)
    >>> print(result.summary().splitlines()[1])
    layer 1: heads 0 opposite, 1 same, 0 indefinite; ‖V − vI‖/‖V‖ mean 0.000; inertia of G
    (0, 0, 2); A = 0: blows_up at T* = 0.5; A = E[J_MLP]: blows_up at T* = 0.5
    """

    model: str
    family: str
    d: int
    position_free: bool
    v_inertia: np.ndarray
    b_inertia: np.ndarray
    sign: np.ndarray
    scalar_v: np.ndarray
    scalar_distance: np.ndarray
    g_inertia: np.ndarray
    regime: np.ndarray
    blowup_time: np.ndarray
    regime_mlp: np.ndarray
    blowup_time_mlp: np.ndarray
    horizon: float

    def to_json(self) -> dict[str, Any]:
        """JSON-ready numbers (NaN blow-up times become None)."""
        def times(t: np.ndarray) -> list[float | None]:
            return [None if np.isnan(x) else float(x) for x in t]

        return {"model": self.model, "family": self.family, "d": self.d,
                "position_free": self.position_free, "v_inertia": self.v_inertia.tolist(),
                "b_inertia": self.b_inertia.tolist(), "sign": self.sign.tolist(),
                "scalar_v": self.scalar_v.tolist(),
                "scalar_distance": self.scalar_distance.tolist(),
                "g_inertia": self.g_inertia.tolist(), "regime": self.regime.tolist(),
                "blowup_time": times(self.blowup_time),
                "regime_mlp": self.regime_mlp.tolist(),
                "blowup_time_mlp": times(self.blowup_time_mlp), "horizon": self.horizon}

    def summary(self) -> str:
        """One line per layer: sign counts, the mean scalar-fit distance, the two regimes."""
        def when(r: str, t: float) -> str:
            return f"{r} at T* = {t:.4g}" if r == "blows_up" else r

        lines = [f"{self.model} ({self.family}, d = {self.d}"
                 f"{', position-free part' if self.position_free else ''}): "
                 f"{self.sign.shape[1]} heads × {self.sign.shape[0]} layers"]
        for i in range(self.sign.shape[0]):
            counts = ", ".join(f"{np.sum(self.sign[i] == s)} {s}" for s in SIGNS)
            lines.append(f"layer {i + 1}: heads {counts}; ‖V − vI‖/‖V‖ mean "
                         f"{self.scalar_distance[i].mean():.3f}; inertia of G "
                         f"{tuple(int(n) for n in self.g_inertia[i])}; A = 0: "
                         f"{when(self.regime[i], self.blowup_time[i])}; A = E[J_MLP]: "
                         f"{when(self.regime_mlp[i], self.blowup_time_mlp[i])}")
        return "\n".join(lines)


def inertia(S: np.ndarray) -> tuple[int, int, int]:
    """(n+, n0, n−) of the symmetric matrix S, zero within INERTIA_RTOL·max|λ|."""
    lam = np.linalg.eigvalsh(S)
    tol = INERTIA_RTOL * (np.max(np.abs(lam)) if lam.size else 0.0)
    return int(np.sum(lam > tol)), int(np.sum(np.abs(lam) <= tol)), int(np.sum(lam < -tol))


def sign_class(v: tuple[int, int, int], b: tuple[int, int, int]) -> str:
    """"opposite", "same" or "indefinite" from the inertias of sym(V) and sym(B)."""
    def sign(n):
        return 1 if n[0] and not n[2] else -1 if n[2] and not n[0] else 0

    sv, sb = sign(v), sign(b)
    return "indefinite" if sv * sb == 0 else "opposite" if sv != sb else "same"


def _head_row(head: HeadFactors, d: int) -> tuple[tuple[int, int, int], tuple[int, int, int],
                                                  str, float, float, np.ndarray]:
    V, B = head.V, head.B
    vi, bi = inertia(0.5 * (V + V.T)), inertia(0.5 * (B + B.T))
    v = float(np.trace(V) / d)
    norm = np.linalg.norm(V)
    dist = float(np.linalg.norm(V - v * np.eye(d)) / norm) if norm > 0 else 0.0
    return vi, bi, sign_class(vi, bi), v, dist, -v * (B + B.T)


def atlas(source: Any, *, prediction: MomentPrediction | None = None,
          position_free: bool = False, horizon: float = DEFAULT_HORIZON,
          progress: Callable[[int, int], None] | None = None) -> Atlas:
    """The stability atlas (module docstring) of a transformers encoder or an extracted Encoder.

    Per head the inertias of sym(V_h) and sym(B_h), their SPEC §5 sign class and the scalar fit
    v_h = tr V_h / d; per layer the flow Σ̇ = AΣ + ΣAᵀ − ΣGΣ with G = −Σ_h v_h (B_h + B_hᵀ)
    from the predicted covariance Σ0 the layer's attention acts on, with A = 0 (for all t) and
    with A = E[J_MLP] (up to `horizon`), evaluated in closed form (`blowup.flow_regime`).

    Parameters
    ----------
    source : Encoder or transformers.PreTrainedModel
        An extracted Encoder, or a model to `extract`.
    prediction : MomentPrediction, optional
        Where Σ0 and E[J_MLP] are read from (default `predict_moments` from N(0, I)).
    position_free : bool, optional
        Passed to `extract` for a model.
    horizon : float, optional
        The horizon of the flow with A = E[J_MLP], > 0 (default DEFAULT_HORIZON).
    progress : callable (int, int) -> None, optional
        Called as progress(ℓ, L) after each layer.

    Returns
    -------
    Atlas
        The per-head signs and fits and the per-layer regimes and blow-up times.

    Raises
    ------
    InvalidInputError
        If horizon is not a positive finite number, `extract` refuses the model, the
        prediction has another number of layers than the encoder, or a predicted covariance is
        not symmetric positive semidefinite.
    SolverError
        If the flow with A = E[J_MLP] overflows or needs more than `blowup.MAX_STEPS` steps
        to reach the horizon (or the default prediction overflows).

    See Also
    --------
    Atlas : the fields.
    plot_atlas : its figure.
    riccati_tf.certify : certified regimes of a single Params.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".
    .. [2] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures".

    Examples
    --------
    One head with B = V = I on N(0, I): G = −2I, so Σ(t) = (1 − 2t)⁻¹ I blows up at T* = 1/2.

    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders import (Encoder, EncoderLayer, HeadFactors,
    ...     LayerNormParams, MLPParams, atlas)
    >>> I, z = np.eye(2), np.zeros(2)
    >>> head = HeadFactors(I, z, I, z, I, z, I, 1.0)  # B = V = I: signs "same"
    >>> mlp = MLPParams(np.zeros((2, 2)), z, I, z, "relu")  # E[J_MLP] = 0
    >>> norm = LayerNormParams(np.ones(2), z, 1e-5)
    >>> encoder = Encoder((EncoderLayer((head,), z, None, norm, mlp, "pre"),), "bert", None,
    ...                   False)
    >>> result = atlas(encoder)
    >>> result.sign.tolist(), result.regime.tolist(), result.blowup_time.tolist()
    ([['same']], ['blows_up'], [0.5])
    """
    horizon = as_time("horizon", horizon)
    if isinstance(source, Encoder):
        encoder, name = source, "Encoder"
    else:
        from .extraction import extract

        encoder, name = extract(source, position_free=position_free), type(source).__name__
    if prediction is None:
        prediction = predict_moments(encoder)
    if prediction.n_layers != len(encoder.layers):
        raise InvalidInputError(f"the prediction has {prediction.n_layers} layers, the encoder "
                                f"{len(encoder.layers)}")
    d = encoder.d
    rows, regimes, g_inertia = [], [], []
    for i, layer in enumerate(encoder.layers):
        heads = [_head_row(h, d) for h in layer.heads]
        G = np.sum([r[5] for r in heads], axis=0)
        g_inertia.append(inertia(G))
        cov0 = prediction.attention_covs[i]
        regimes.append((flow_regime(G, cov0),
                        flow_regime(G, cov0, prediction.mlp_jacobians[i], horizon)))
        rows.append(heads)
        if progress is not None:
            progress(i + 1, len(encoder.layers))

    def table(k: int, dtype: type = float) -> np.ndarray:
        return np.array([[r[k] for r in heads] for heads in rows], dtype=dtype)

    def time(r: Any) -> float:
        return np.nan if r.blowup_time is None else r.blowup_time

    return Atlas(name, encoder.family, d, encoder.position_free, table(0, int), table(1, int),
                 table(2, object).astype(str), table(3), table(4), np.array(g_inertia),
                 np.array([r[0].regime for r in regimes]),
                 np.array([time(r[0]) for r in regimes]),
                 np.array([r[1].regime for r in regimes]),
                 np.array([time(r[1]) for r in regimes]), float(horizon))
