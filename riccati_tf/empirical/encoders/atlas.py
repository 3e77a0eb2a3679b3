"""Stability atlas of an encoder: the regime of every layer's actual attention flow and
per-head numbers that carry information for low-rank heads (SPEC §5).

Per layer ℓ, from Σ0 = the predicted covariance the layer's attention acts on
(`predict_moments`), the multi-head, general-V covariance flow

    Σ̇ = AΣ + ΣAᵀ + Σ_h (V_hΣB_hΣ + ΣB_hᵀΣV_hᵀ),   B_h = s W_K,hᵀW_Q,h,  V_h = W_O,hW_V,h,

with the heads kept factored (`EncoderLayer.params`), once with A = 0 and once with A = E[J_MLP]
(the feed-forward block's mean Jacobian at its input Gaussian), is classified up to the horizon
by `blowup.layer_regime` (`riccati_tf.certify` for d ≤ CERTIFY_MAX_D, else `riccati_tf.flow`
with method "rk"): "blows_up" with T* ≤ horizon, or NO_BLOWUP with T* None; the evidence
(which method decided, its tolerance, tr Σ growth, a blow-up found after the horizon) is kept.
The scalar fit V_h ≈ v_hI, v_h = tr V_h/d, is a labelled extra column (`scalar_regime`,
`scalar_blowup_time`, the closed form of `blowup.flow_regime` with A = 0, same horizon rule);
on trained weights ‖V_h − v_hI‖_F/‖V_h‖_F ≈ 0.99, so it is a caricature.

Per head h (rank r = d_h ≪ d, so sym(V_h) and sym(B_h) have inertia (≤ r, ≥ d − 2r, ≤ r) and are
never definite):

- signed spectral mass Σλ/Σ|λ| ∈ [−1, 1] of sym(V_h) (`v_mass`) and of sym(B_h) (`b_mass`),
  from the 2r×2r matrix R C Rᵀ, [O, Wᵀ] = Q R, C = ½[[0, I], [I, 0]] (sym(OW) = [O, Wᵀ] C
  [O, Wᵀ]ᵀ), 0 for a zero matrix; their inertias (`v_inertia`, `b_inertia`) and the SPEC §5 sign
  class (`sign`) are kept;
- `trace_rate`: its contribution 2 tr(V_hΣ0B_hΣ0) to d tr Σ/dt at the input moments (A = 0:
  the sum over h is d tr Σ/dt at t = 0);
- `growth_rate`: γ_h = max Re λ of M_h = V_hΣ0B_h restricted to its range. The head alone,
  frozen at the input moments, moves tokens by ẋ = M_hx; M_h = O_h(W_hΣ0K_hᵀ)Q_h maps R^d into
  range O_h, on which (in the basis O_h) it acts as X_h = W_hΣ0K_hᵀQ_hO_h (d_h×d_h); the other
  d − d_h eigenvalues are 0. The fastest mode of the head's own subspace grows like e^{γ_h t}
  (its variance like e^{2γ_h t}); γ_h < 0: the head contracts its subspace.

T* is in layers (a residual layer is a step τ = 1 of depth); beside it stands the growth
tr Σ⁺/tr Σ0 of one such discrete attention step, Σ⁺ = (I + M)Σ0(I + M)ᵀ, M = Σ_h V_hΣ0B_h (SPEC
§2), with, where Σ0 was measured on the model's own tokens, the measured growth of the real
step on them (`measured_step_growth`: tr of the covariance of y + a(y), a the layer's own
finite-n attention, over tr Σ0; `measured.measured_moments`), and the trace-normalised flow of
the layer (`flows.normalised`, SPEC §13): the cloud as
the LayerNorm after the layer sees it, where the question is not blow-up but whether the
cloud concentrates on few directions (its participation ratio (tr Σ)²/tr Σ² falls: rank loss,
clustering) or spreads.

Reproducing a T* by hand: `atlas_inputs.npz` (`Atlas.inputs`, written beside atlas.json) holds
`cov0` (L, d, d), `mean0` (L, d), `mlp_jacobian` (L, d, d) and `horizon`. With
`encoder = extract(model)` and `p = encoder.layers[ℓ].params()`, integrate
Σ̇ = AΣ + ΣAᵀ + Σ_h (V_hΣB_hΣ + ΣB_hᵀΣV_hᵀ) from cov0[ℓ] with A = 0 (or mlp_jacobian[ℓ])
and V_h, B_h = p.heads[h] (e.g. solve_ivp DOP853 with an event on tr Σ): its blow-up time is
blowup_time[ℓ] (blowup_time_mlp[ℓ]) when that is ≤ horizon.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import InvalidInputError
from ...flows.normalised import NormalisedFlow, normalised_flow
from ...state.params import Params
from ...state.validation import as_time
from ..defaults import DEFAULT_HORIZON
from .blowup import NO_BLOWUP, LayerRegime, flow_regime, layer_regime
from .factors import Encoder, HeadFactors
from .propagation import MomentPrediction, predict_moments
from .sequences import Inputs

__all__ = ["DEFAULT_HORIZON", "INERTIA_RTOL", "MOMENTS_SOURCES", "SIGNS", "Atlas", "atlas",
           "head_numbers"]

#: eigenvalues within INERTIA_RTOL·max|λ| of zero count as zero in an inertia
INERTIA_RTOL = 1e-9
SIGNS = ("opposite", "same", "indefinite")
#: output times and relative tolerance of each layer's normalised flow (`Atlas.normalised`)
NORMALISED_OUTPUTS = 17
NORMALISED_RTOL = 1e-6
#: where an atlas's Σ0 come from (`Atlas.moments_source`)
MOMENTS_SOURCES = ("measured", "chained")
SOURCE_WORDS = {"measured": "measured at its attention input on the model's own tokens",
                "chained": "predicted by the Gaussian closures chained from the input moments"}


@dataclass(frozen=True, eq=False)
class Atlas:
    """The stability atlas of an encoder: per layer the regime of its multi-head, general-V
    attention flow Σ̇ = AΣ + ΣAᵀ + Σ_h (V_hΣB_hΣ + ΣB_hᵀΣV_hᵀ) up to the horizon, per head
    the signed spectral masses, trace rates and growth rates (module docstring).

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
        One of SIGNS: "opposite" (bounded case of SPEC §5), "same" (blow-up) or "indefinite"
        (every head of rank < d/2).
    scalar_v : (L, H) ndarray of float
        The scalar fit v_h = tr V_h / d.
    scalar_distance : (L, H) ndarray of float
        ‖V_h − v_h I‖_F / ‖V_h‖_F.
    g_inertia : (L, 3) ndarray of int
        (n+, n0, n−) of the scalar fit's G = −Σ_h v_h (B_h + B_hᵀ).
    regime : (L,) ndarray of str
        The regime of the flow with A = 0 up to the horizon: "blows_up" or NO_BLOWUP
        ("converges", "collapses", "grows" or "bounded" where `certify` decided for all t).
    blowup_time : (L,) ndarray of float
        T* ≤ horizon with A = 0 (NaN for none before the horizon).
    regime_mlp : (L,) ndarray of str
        The regime with A = E[J_MLP], as regime.
    blowup_time_mlp : (L,) ndarray of float
        T* with A = E[J_MLP] (NaN for none before the horizon).
    horizon : float
        The horizon of every classification.
    decisions : tuple of (LayerRegime, LayerRegime)
        Per layer the evidence of the two classifications (A = 0, A = E[J_MLP]): method
        ("certify" or "rk"), tolerance, tr Σ growth, a blow-up after the horizon.
    scalar_regime : (L,) ndarray of str
        The scalar fit's regime with A = 0 ("blows_up" with T* ≤ horizon, else NO_BLOWUP).
    scalar_blowup_time : (L,) ndarray of float
        Its T* (NaN for none before the horizon).
    v_mass : (L, H) ndarray of float
        Signed spectral mass Σλ/Σ|λ| of sym(V_h).
    b_mass : (L, H) ndarray of float
        Signed spectral mass of sym(B_h).
    trace_rate : (L, H) ndarray of float
        2 tr(V_hΣ0B_hΣ0): head h's share of d tr Σ/dt at the input moments.
    growth_rate : (L, H) ndarray of float
        γ_h = max Re λ(V_hΣ0B_h) on the head's range.
    input_trace : (L,) ndarray of float
        tr Σ0 of each layer.
    mean0 : (L, d) ndarray
        The input means the attention acts on.
    cov0 : (L, d, d) ndarray
        The input covariances Σ0 (the flows' starts).
    mlp_jacobian : (L, d, d) ndarray
        E[J_MLP] (the drift A of the second classification).
    step_growth : (L,) ndarray of float
        tr Σ⁺/tr Σ0 of one discrete residual attention step of unit length (τ = 1, one layer):
        Σ⁺ = (I + M)Σ0(I + M)ᵀ, M = Σ_h V_hΣ0B_h (SPEC §2, exact for the Gaussian cloud): the
        scale on which T* (in layers) is read.
    normalised : tuple of NormalisedFlow
        Per layer the trace-normalised flow (A = 0) from Σ0 up to the horizon: the cloud as a
        LayerNorm sees it, its participation ratio at the start and at the horizon and its
        trend ("concentrates": losing directions, "spreads"; SPEC §13); None for Σ0 = 0.
    moments_source : str, optional
        Where Σ0 of each layer comes from (MOMENTS_SOURCES): "measured" (the model's own
        tokens at that layer's attention input, `measured.measured_moments`) or "chained"
        (the Gaussian closures' prediction chained from the input moments, `predict_moments`;
        the default).
    measured_step_growth : (L,) ndarray of float or None, optional
        With measured moments: tr Ĉ⁺/tr Σ0 of the real residual attention step y ↦ y + a(y)
        on the tokens Σ0 was measured on, a the layer's own finite-n attention output
        (`measured.measured_moments`), beside the predicted step_growth; None otherwise.

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
    >>> result
    Atlas(model='Encoder', d=2, layers=1, heads=1, horizon=10, regimes=[blows_up T*=0.5])
    >>> print(result.summary().splitlines()[1])
    layer 1: tr Σ0 = 2; A = 0: blows_up at T* = 0.5 layers (certify); A = E[J_MLP]: blows_up
    at T* = 0.5 layers (certify); scalar fit: blows_up at T* = 0.5 layers; ‖V − vI‖/‖V‖ mean
    0.000
    >>> print(result.summary().splitlines()[2])
      one τ = 1 attention step: tr Σ × 4; after LayerNorm: steady (participation ratio 2 → 2 at
      the horizon)
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
    decisions: tuple[tuple[LayerRegime, LayerRegime], ...]
    scalar_regime: np.ndarray
    scalar_blowup_time: np.ndarray
    v_mass: np.ndarray
    b_mass: np.ndarray
    trace_rate: np.ndarray
    growth_rate: np.ndarray
    input_trace: np.ndarray
    mean0: np.ndarray
    cov0: np.ndarray
    mlp_jacobian: np.ndarray
    step_growth: np.ndarray
    normalised: tuple[NormalisedFlow | None, ...]
    moments_source: str = "chained"
    measured_step_growth: np.ndarray | None = None

    def __post_init__(self):
        if self.moments_source not in MOMENTS_SOURCES:
            raise InvalidInputError(f"moments_source must be one of {MOMENTS_SOURCES}, got "
                                    f"{self.moments_source!r}")

    def __repr__(self) -> str:
        """The model, its shape and each layer's regime with A = 0 (no arrays: `summary()` and
        `to_json()` give the numbers)."""
        layers = ", ".join(r if np.isnan(t) else f"{r} T*={t:.4g}"
                           for r, t in zip(self.regime, self.blowup_time, strict=True))
        return (f"Atlas(model={self.model!r}, d={self.d}, layers={len(self.regime)}, "
                f"heads={self.v_mass.shape[1] if self.v_mass.ndim == 2 else '?'}, "
                f"horizon={self.horizon:g}, regimes=[{layers}])")

    def to_json(self) -> dict[str, Any]:
        """JSON-ready numbers (NaN blow-up times become None); the input moments are in
        `inputs` (atlas_inputs.npz), not here."""
        def times(t: np.ndarray) -> list[float | None]:
            return [None if np.isnan(x) else float(x) for x in t]

        return {"model": self.model, "family": self.family, "d": self.d,
                "position_free": self.position_free, "horizon": self.horizon,
                "moments_source": self.moments_source,
                "regime": self.regime.tolist(), "blowup_time": times(self.blowup_time),
                "regime_mlp": self.regime_mlp.tolist(),
                "blowup_time_mlp": times(self.blowup_time_mlp),
                "evidence": [{"attention": a.to_json(), "attention_mlp": m.to_json()}
                             for a, m in self.decisions],
                "input_trace": self.input_trace.tolist(),
                "step_growth": self.step_growth.tolist(),
                "measured_step_growth": (None if self.measured_step_growth is None else
                                         self.measured_step_growth.tolist()),
                "normalised": [None if n is None else n.to_json() for n in self.normalised],
                "v_mass": self.v_mass.tolist(), "b_mass": self.b_mass.tolist(),
                "trace_rate": self.trace_rate.tolist(),
                "growth_rate": self.growth_rate.tolist(),
                "v_inertia": self.v_inertia.tolist(), "b_inertia": self.b_inertia.tolist(),
                "sign": self.sign.tolist(),
                "scalar_fit": {"regime": self.scalar_regime.tolist(),
                               "blowup_time": times(self.scalar_blowup_time),
                               "v": self.scalar_v.tolist(),
                               "distance": self.scalar_distance.tolist(),
                               "g_inertia": self.g_inertia.tolist()},
                "scalar_v": self.scalar_v.tolist(),
                "scalar_distance": self.scalar_distance.tolist(),
                "g_inertia": self.g_inertia.tolist()}

    def inputs(self) -> bytes:
        """atlas_inputs.npz: `mean0` (L, d), `cov0` (L, d, d), `mlp_jacobian` (L, d, d),
        `horizon` — the starts and drifts of every flow (module docstring: how to reproduce a
        T* from them)."""
        buffer = io.BytesIO()
        np.savez(buffer, mean0=self.mean0, cov0=self.cov0, mlp_jacobian=self.mlp_jacobian,
                 horizon=np.float64(self.horizon))
        return buffer.getvalue()

    def summary(self) -> str:
        """One line per layer: tr Σ0, the two regimes with who decided, the scalar fit."""
        def when(r: str, t: float, method: str | None = None) -> str:
            by = f" ({method})" if method else ""
            return (f"{r} at T* = {t:.4g} layers" if r == "blows_up" else
                    f"no blow-up before {self.horizon:.4g}" if r == NO_BLOWUP else r) + by

        lines = [f"{self.model} ({self.family}, d = {self.d}"
                 f"{', position-free part' if self.position_free else ''}): "
                 f"{self.sign.shape[1]} heads × {self.sign.shape[0]} layers, multi-head "
                 f"general-V flow up to the horizon {self.horizon:.4g}; Σ0 of each layer "
                 f"{SOURCE_WORDS[self.moments_source]}"]
        for i, (a, m) in enumerate(self.decisions):
            lines.append(f"layer {i + 1}: tr Σ0 = {self.input_trace[i]:.4g}; A = 0: "
                         f"{when(self.regime[i], self.blowup_time[i], a.method)}; "
                         f"A = E[J_MLP]: "
                         f"{when(self.regime_mlp[i], self.blowup_time_mlp[i], m.method)}; "
                         f"scalar fit: "
                         f"{when(self.scalar_regime[i], self.scalar_blowup_time[i])}; "
                         f"‖V − vI‖/‖V‖ mean {self.scalar_distance[i].mean():.3f}")
            n = self.normalised[i]
            shape = ("undefined (Σ0 = 0: the cloud is a point)" if n is None else
                     f"{n.trend} (participation ratio {n.ratio[0]:.3g} → {n.ratio[-1]:.3g} at "
                     f"the horizon)")
            real = ("" if self.measured_step_growth is None else
                    f" (measured on the tokens: × {self.measured_step_growth[i]:.4g})")
            lines.append(f"  one τ = 1 attention step: tr Σ × {self.step_growth[i]:.4g}{real}; "
                         f"after LayerNorm: {shape}")
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


def _sym_spectrum(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """The eigenvalues of sym(left @ right) (left d×k, right k×d), zeros included: from the
    2k×2k matrix R C Rᵀ, [left, rightᵀ] = QR, C = ½[[0, I], [I, 0]], when 2k < d."""
    d, k = left.shape
    if 2 * k >= d:
        M = left @ right
        return np.linalg.eigvalsh(0.5 * (M + M.T))
    R: np.ndarray = np.linalg.qr(np.hstack([left, right.T]), mode="r")  # type: ignore[assignment]
    RC = 0.5 * np.hstack([R[:, k:], R[:, :k]])  # R C
    lam = np.linalg.eigvalsh(0.5 * (RC @ R.T + (RC @ R.T).T))
    return np.concatenate([lam, np.zeros(d - 2 * k)])


def _mass(lam: np.ndarray) -> float:
    total = float(np.sum(np.abs(lam)))
    return float(np.sum(lam)) / total if total > 0 else 0.0


def _inertia_of(lam: np.ndarray) -> tuple[int, int, int]:
    tol = INERTIA_RTOL * (np.max(np.abs(lam)) if lam.size else 0.0)
    return int(np.sum(lam > tol)), int(np.sum(np.abs(lam) <= tol)), int(np.sum(lam < -tol))


def head_numbers(head: HeadFactors, cov0: np.ndarray) -> dict[str, Any]:
    """Per-head numbers of the atlas at the input covariance Σ0 (module docstring).

    With Q = sW_Q, K = W_K, W = W_V, O = W_O (B_h = KᵀQ, V_h = OW):

    - v_mass, b_mass: the signed spectral masses Σλ/Σ|λ| of sym(V_h) and sym(B_h);
    - trace_rate = 2 tr(V_hΣ0B_hΣ0) = 2 tr((WΣ0Kᵀ)(QΣ0O)), the head's share of d tr Σ/dt;
    - growth_rate = max Re λ(X), X = WΣ0KᵀQO: M_h = V_hΣ0B_h restricted to range O;
    - v_inertia, b_inertia, sign, scalar_v = tr V_h/d, scalar_distance = ‖V_h − vI‖_F/‖V_h‖_F.

    Parameters
    ----------
    head : HeadFactors
        The head.
    cov0 : (d, d) ndarray
        Σ0 (not validated).

    Returns
    -------
    dict
        The numbers above, by name.

    Raises
    ------
    ValueError
        From numpy when the shapes do not match.

    See Also
    --------
    atlas : tabulates them for every head.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".

    Examples
    --------
    A rank-one head V_h = B_h = e1e1ᵀ on Σ0 = I: masses 1, trace rate 2, growth rate 1.

    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders import HeadFactors
    >>> from riccati_tf.empirical.encoders.atlas import head_numbers
    >>> e = np.array([[1.0, 0.0, 0.0]])
    >>> z = np.zeros(1)
    >>> n = head_numbers(HeadFactors(e, z, e, z, e, z, e.T, 1.0), np.eye(3))
    >>> n["v_mass"], n["b_mass"], n["trace_rate"], n["growth_rate"], n["v_inertia"]
    (1.0, 1.0, 2.0, 1.0, (1, 2, 0))
    """
    d = cov0.shape[0]
    Q, K, W, O = head.scale * head.W_Q, head.W_K, head.W_V, head.W_O
    lam_v, lam_b = _sym_spectrum(O, W), _sym_spectrum(K.T, Q)
    vi, bi = _inertia_of(lam_v), _inertia_of(lam_b)
    WSK = (W @ cov0) @ K.T
    QSO = (Q @ cov0) @ O
    X = WSK @ (Q @ O)
    trace_v = float(np.trace(W @ O))
    norm_v = float(np.sqrt(max(np.sum((O.T @ O) * (W @ W.T)), 0.0)))  # ‖OW‖_F
    v = trace_v / d
    dist2 = norm_v ** 2 - 2 * v * trace_v + v * v * d  # ‖V − vI‖_F² = ‖V‖² − tr(V)²/d
    return {"v_mass": _mass(lam_v), "b_mass": _mass(lam_b),
            "trace_rate": float(2.0 * np.sum(WSK * QSO.T)),
            "growth_rate": float(np.max(np.linalg.eigvals(X).real)),
            "v_inertia": vi, "b_inertia": bi, "sign": sign_class(vi, bi), "scalar_v": v,
            "scalar_distance": float(np.sqrt(max(dist2, 0.0)) / norm_v) if norm_v > 0 else 0.0}


def _scalar_fit(heads: tuple[HeadFactors, ...], numbers: list[dict[str, Any]],
                cov0: np.ndarray, horizon: float) -> tuple[tuple[int, int, int], str, float]:
    """The scalar fit's G = −Σ_h v_h (B_h + B_hᵀ), its inertia and the closed-form A = 0
    regime (T* > horizon: NO_BLOWUP)."""
    G = np.zeros_like(cov0)
    for h, n in zip(heads, numbers, strict=True):
        B = h.B
        G -= n["scalar_v"] * (B + B.T)
    r = flow_regime(G, cov0)
    if r.blowup_time is not None and r.blowup_time <= horizon:
        return inertia(G), "blows_up", float(r.blowup_time)
    return inertia(G), NO_BLOWUP, np.nan


def atlas(source: Any, *, prediction: MomentPrediction | None = None,
          position_free: bool = False, horizon: float = DEFAULT_HORIZON,
          progress: Callable[[int, int], None] | None = None,
          inputs: Inputs | None = None, moments_source: str = "chained") -> Atlas:
    """The stability atlas (module docstring) of a transformers encoder or an extracted Encoder.

    Per layer, the flow Σ̇ = AΣ + ΣAᵀ + Σ_h (V_hΣB_hΣ + ΣB_hᵀΣV_hᵀ) of its factored heads
    from the predicted covariance Σ0 its attention acts on, with A = 0 and with A = E[J_MLP],
    classified up to `horizon` by `blowup.layer_regime` (certify or the rk flow, with the
    evidence); per head the signed spectral masses of sym(V_h) and sym(B_h), the trace rate
    2 tr(V_hΣ0B_hΣ0) and the growth rate on the head's range; the scalar fit as an extra
    column.

    Parameters
    ----------
    source : Encoder or transformers.PreTrainedModel
        An extracted Encoder, or a model to `extract`.
    prediction : MomentPrediction, optional
        Where Σ0 and E[J_MLP] are read from (default `predict_moments` from N(0, I)).
    position_free : bool, optional
        Passed to `extract` for a model.
    horizon : float, optional
        The horizon of every classification, > 0 (default DEFAULT_HORIZON).
    progress : callable (int, int) -> None, optional
        Called as progress(ℓ, L) after each layer.
    inputs : Inputs, optional
        Without a prediction, predict from these inputs' moments (`loading.model_inputs`:
        text, token ids, hidden states or Gaussian tokens) instead of N(0, I).
    step_growth : (L,) ndarray of float
        tr Σ⁺/tr Σ0 of one discrete residual attention step of unit length (τ = 1, one layer):
        Σ⁺ = (I + M)Σ0(I + M)ᵀ, M = Σ_h V_hΣ0B_h (SPEC §2, exact for the Gaussian cloud): the
        scale on which T* (in layers) is read.
    normalised : tuple of NormalisedFlow
        Per layer the trace-normalised flow (A = 0) from Σ0 up to the horizon: the cloud as a
        LayerNorm sees it, its participation ratio at the start and at the horizon and its
        trend ("concentrates": losing directions, "spreads"; SPEC §13).
    moments_source : str, optional
        The label of where the prediction's attention covariances come from
        (MOMENTS_SOURCES; "measured" for `measured.measured_moments`, default "chained").

    Returns
    -------
    Atlas
        The per-layer regimes with their evidence and the per-head numbers.

    Raises
    ------
    InvalidInputError
        If horizon is not a positive finite number, `extract` refuses the model, the
        prediction has another number of layers than the encoder, or a predicted covariance is
        not symmetric positive semidefinite.
    SolverError
        If an rk integration fails (budget, overflow without a blow-up), or the default
        prediction overflows.

    See Also
    --------
    Atlas : the fields.
    plot_atlas : its figure.
    riccati_tf.certify : certified regimes of a single Params.
    riccati_tf.flow : the rk integration.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".
    .. [2] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures".

    Examples
    --------
    One head with B = V = I on N(0, I): Σ(t) = (1 − 2t)⁻¹ I blows up at T* = 1/2; with a horizon
    of 0.4 no blow-up is reported.

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
    >>> result.regime.tolist(), np.round(result.blowup_time, 9).tolist()
    (['blows_up'], [0.5])
    >>> short = atlas(encoder, horizon=0.4)
    >>> short.regime.tolist(), short.blowup_time.tolist(), short.decisions[0][0].beyond
    (['no_blowup_before_horizon'], [nan], 0.5)
    """
    horizon = as_time("horizon", horizon)
    if isinstance(source, Encoder):
        encoder, name = source, "Encoder"
    else:
        from .extraction import extract

        encoder, name = extract(source, position_free=position_free), type(source).__name__
    if prediction is None:
        prediction = (predict_moments(encoder) if inputs is None else
                      predict_moments(encoder, inputs.mean, inputs.cov))
    if prediction.n_layers != len(encoder.layers):
        raise InvalidInputError(f"the prediction has {prediction.n_layers} layers, the encoder "
                                f"{len(encoder.layers)}")
    rows: list[list[dict[str, Any]]] = []
    decisions: list[tuple[LayerRegime, LayerRegime]] = []
    growth: list[float] = []
    normalised: list[NormalisedFlow | None] = []
    scalar: list[tuple[tuple[int, int, int], str, float]] = []
    for i, layer in enumerate(encoder.layers):
        cov0 = prediction.attention_covs[i]
        numbers = [head_numbers(h, cov0) for h in layer.heads]
        rows.append(numbers)
        scalar.append(_scalar_fit(layer.heads, numbers, cov0, horizon))
        heads = [h for h in layer.params().factors if h is not None]  # all factored
        decisions.append(tuple(  # type: ignore[arg-type]
            layer_regime(Params(A, heads=heads), cov0, horizon)
            for A in (np.zeros_like(cov0), prediction.mlp_jacobians[i])))
        attention = Params(np.zeros_like(cov0), heads=heads)
        step = np.eye(encoder.d) + attention.M(cov0)
        tr0 = float(np.trace(cov0))  # 0: a point, no growth to speak of (NaN)
        growth.append(float(np.trace(step @ cov0 @ step.T)) / tr0 if tr0 > 0 else float("nan"))
        # a cloud collapsed to a point (tr Σ0 = 0) has no shape for a LayerNorm to keep
        normalised.append(normalised_flow(attention, cov0, horizon, n_eval=NORMALISED_OUTPUTS,
                                          rtol=NORMALISED_RTOL) if np.trace(cov0) > 0 else None)
        if progress is not None:
            progress(i + 1, len(encoder.layers))

    def table(key: str, dtype: type = float) -> np.ndarray:
        return np.array([[n[key] for n in numbers] for numbers in rows], dtype=dtype)

    def times(k: int) -> np.ndarray:
        return np.array([np.nan if d[k].blowup_time is None else d[k].blowup_time
                         for d in decisions])

    return Atlas(name, encoder.family, encoder.d, encoder.position_free,
                 table("v_inertia", int), table("b_inertia", int),
                 table("sign", object).astype(str), table("scalar_v"),
                 table("scalar_distance"), np.array([s[0] for s in scalar]),
                 np.array([d[0].regime for d in decisions]), times(0),
                 np.array([d[1].regime for d in decisions]), times(1), float(horizon),
                 tuple(decisions), np.array([s[1] for s in scalar]),
                 np.array([s[2] for s in scalar]), table("v_mass"), table("b_mass"),
                 table("trace_rate"), table("growth_rate"),
                 np.array([float(np.trace(c)) for c in prediction.attention_covs]),
                 np.array(prediction.attention_means), np.array(prediction.attention_covs),
                 np.array(prediction.mlp_jacobians), np.array(growth), tuple(normalised),
                 moments_source, prediction.step_growth)
