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

import numpy as np

from ...errors import InvalidInputError
from ...state.validation import as_time
from .blowup import flow_regime
from .factors import Encoder, HeadFactors
from .propagation import MomentPrediction, predict_moments

#: eigenvalues within INERTIA_RTOL·max|λ| of zero count as zero in an inertia
INERTIA_RTOL = 1e-9
#: horizon (in layers of unit depth) of the flow with A = E[J_MLP]
DEFAULT_HORIZON = 10.0
SIGNS = ("opposite", "same", "indefinite")


@dataclass(frozen=True, eq=False)
class Atlas:
    """Per layer × head: v_inertia, b_inertia (L, H, 3) as (n+, n0, n−); sign (L, H) one of
    SIGNS; scalar_v (L, H); scalar_distance (L, H). Per layer: g_inertia (L, 3) of
    G = Σ_h G_h; regime, blowup_time (NaN for none) with A = 0; regime_mlp, blowup_time_mlp with
    A = E[J_MLP] up to `horizon`."""

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

    def to_json(self) -> dict:
        """JSON-ready numbers (NaN blow-up times become None)."""
        def times(t):
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
        def when(r, t):
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


def _head_row(head: HeadFactors, d: int):
    V, B = head.V, head.B
    vi, bi = inertia(0.5 * (V + V.T)), inertia(0.5 * (B + B.T))
    v = float(np.trace(V) / d)
    norm = np.linalg.norm(V)
    dist = float(np.linalg.norm(V - v * np.eye(d)) / norm) if norm > 0 else 0.0
    return vi, bi, sign_class(vi, bi), v, dist, -v * (B + B.T)


def atlas(source, *, prediction: MomentPrediction | None = None, position_free: bool = False,
          horizon: float = DEFAULT_HORIZON,
          progress: Callable[[int, int], None] | None = None) -> Atlas:
    """The stability atlas (module docstring) of a transformers encoder or an extracted Encoder.

    prediction: the moments Σ0 and E[J_MLP] are read from (default `predict_moments` from
    N(0, I)); position_free: passed to `extract`; progress(ℓ, L) after each layer.
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
        G = sum(r[5] for r in heads)
        g_inertia.append(inertia(G))
        cov0 = prediction.attention_covs[i]
        regimes.append((flow_regime(G, cov0),
                        flow_regime(G, cov0, prediction.mlp_jacobians[i], horizon)))
        rows.append(heads)
        if progress is not None:
            progress(i + 1, len(encoder.layers))

    def table(k, dtype=float):
        return np.array([[r[k] for r in heads] for heads in rows], dtype=dtype)

    def time(r):
        return np.nan if r.blowup_time is None else r.blowup_time

    return Atlas(name, encoder.family, d, encoder.position_free, table(0, int), table(1, int),
                 table(2, object).astype(str), table(3), table(4), np.array(g_inertia),
                 np.array([r[0].regime for r in regimes]),
                 np.array([time(r[0]) for r in regimes]),
                 np.array([r[1].regime for r in regimes]),
                 np.array([time(r[1]) for r in regimes]), float(horizon))
