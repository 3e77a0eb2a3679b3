"""The nearest stable layer: the smallest change of the query–key matrices B_h that moves a layer
into a certified non-blow-up regime (SPEC §5–§6).

Scalar heads V_h = v_h I: the layer is projected (Frobenius norm, summed over heads) onto
G = −Σ_h v_h (B_h + B_hᵀ) ⪰ δI, which rules out blow-up from every start; in closed form,

    ΔB_h = (v_h / (2 Σ_k v_k²)) (G0 − P_δ(G0)),   P_δ: eigenvalues of G0 clipped from below at δ.

Other heads are projected onto the ray B_h = −c_h V_hᵀ (c_h ≥ 0), on which the attention term
never increases tr Σ. With A Hurwitz and scalar heads a numerical route also searches the
start-dependent set G ⪯ −δI, λ_max(W∞Σ0) ≤ 1 − margin (SPEC §5), and the nearer certified
answer is returned.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.linalg import eigh, solve_continuous_lyapunov
from scipy.optimize import minimize

from ..errors import InvalidInputError
from ..stability.certificates.certificate import Certificate
from ..stability.certificates.entry import certify
from ..state.params import SCALAR_RTOL, Gaussian, Head, Params
from ..state.validation import ReadOnlyArrays, as_array, as_covariance, as_real, psd_factor

__all__ = ["CHANGES", "FEASIBILITY_RTOL", "GENERAL", "MARGIN_RTOL", "NORMS", "NUMERICAL_MAX_D",
           "SAFE_REGIMES", "Repair", "nearest_stable"]

#: what may change (the query–key matrices)
CHANGES = ("B",)
#: the norm of the change: Frobenius, summed over heads, ‖ΔB‖² = Σ_h ‖ΔB_h‖_F²
NORMS = ("fro",)
#: the regimes `certify` may conclude for a repaired layer
SAFE_REGIMES = ("converges", "collapses", "bounded")
#: how heads with a non-scalar V_h are repaired: onto the ray B_h = −c V_hᵀ (c ≥ 0), or onto its
#: apex B_h = 0 (inert heads, which `certify` decides by a theorem), or "auto": the ray when A is
#: Hurwitz, the apex otherwise
GENERAL = ("auto", "ray", "inert")
#: the default relative margin: δ = MARGIN_RTOL · max(‖G0‖₂, Σ_h |v_h| ‖B_h‖₂) and the threshold
#: bound 1 − MARGIN_RTOL of the numerical route
MARGIN_RTOL = 1e-6
#: the numerical route's answer counts as feasible when each semidefinite constraint X ⪰ 0
#: holds to λ_min(X) ≥ −FEASIBILITY_RTOL max(1, ‖X‖₂) (certify then judges the layer)
FEASIBILITY_RTOL = 1e-9
#: the numerical route (d(d+1)/2 + (k + 1)d² unknowns for k starts) runs up to this d
NUMERICAL_MAX_D = 16


@dataclass(frozen=True, eq=False)
class Repair(ReadOnlyArrays):
    """A repaired layer, the change that made it, and its certificates.

    The repaired layer differs from the original only in its query–key matrices, B_h ↦ B_h + ΔB_h,
    with

        distance² = Σ_h ‖ΔB_h‖_F²,

    the least such change over the set of the route (`nearest_stable`, Notes).

    Parameters
    ----------
    params : Params
        The repaired layer (A, b and the value matrices unchanged; factored heads stay factored).
    original : Params
        The layer given.
    distance : float
        ‖ΔB‖ = (Σ_h ‖ΔB_h‖_F²)^½.
    per_head : (H,) ndarray
        ‖ΔB_h‖_F for each head.
    norm : str
        The norm of the change ("fro").
    route : str
        "closed_form" (the sign-structure projection) or "numerical" (the threshold set of
        a Hurwitz A, by SLSQP).
    margin : float
        δ ≥ 0: G ⪰ δI (closed form) or G ⪯ −δI (numerical) for the scalar heads.
    certificates : tuple of Certificate
        `certify` of the repaired layer from each start.
    certified : tuple of bool
        Per start: the regime is one of the accepted ones and `Certificate.check()` passes.

    Raises
    ------
    dataclasses.FrozenInstanceError
        On assignment to a field.

    See Also
    --------
    nearest_stable : computes a Repair.
    riccati_tf.stability.certificates.entry.certify : the certificates.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".
    .. [2] riccati_tf theory, SPEC §6 "Certificates".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.state.params import Params
    >>> from riccati_tf.design import nearest_stable
    >>> rep = nearest_stable(Params(np.zeros((1, 1)), B=[[1.0]], V=[[1.0]]), [[1.0]], margin=0.0)
    >>> rep.route, round(rep.distance, 12), rep.params.B.tolist(), rep.all_certified
    ('closed_form', 1.0, [[0.0]], True)
    """

    params: Params
    original: Params
    distance: float
    per_head: np.ndarray
    norm: str
    route: str
    margin: float
    certificates: tuple[Certificate, ...]
    certified: tuple[bool, ...]

    @property
    def all_certified(self) -> bool:
        """Whether every start is certified."""
        return all(self.certified)


def nearest_stable(params: Params,
                   cov0: npt.ArrayLike | Gaussian | Sequence[npt.ArrayLike | Gaussian], *,
                   change: str = "B", norm: str = "fro",
                   regime: Sequence[str] = SAFE_REGIMES, margin: float | None = None,
                   general: str = "auto") -> Repair:
    """The least change ΔB (Frobenius, summed over heads) that makes every start safe.

        min Σ_h ‖ΔB_h‖_F²   s.t.   G = −Σ_h v_h (B_h + ΔB_h + (B_h + ΔB_h)ᵀ) ⪰ δI,

    solved in closed form by ΔB_h = (v_h / (2 Σ_k v_k²)) (G0 − P_δ(G0)) with P_δ the eigenvalue
    clipping of G0 at δ (scalar heads V_h = v_h I; other heads: the ray B_h = −c_h V_hᵀ,
    c_h ≥ 0), and, with A Hurwitz and scalar heads, numerically over G ⪯ −δI,
    λ_max(W∞Σ0) ≤ 1 − margin for every start; the nearer certified layer is returned.

    Parameters
    ----------
    params : Params
        The layer: dense (V_h, B_h) pairs or `Head` factors, any A.
    cov0 : (d, d) array_like, Gaussian, or a sequence of them, or a (k, d, d) array_like
        The start covariance(s) Σ0 ⪰ 0.
    change : {"B"}, optional
        What changes: the query–key matrices (the only choice).
    norm : {"fro"}, optional
        The norm of the change: ‖ΔB‖² = Σ_h ‖ΔB_h‖_F² (the only choice).
    regime : sequence of str, optional
        The regimes accepted as certified, a non-empty subset of SAFE_REGIMES (default all).
    margin : float, optional
        The relative margin m ≥ 0 (default MARGIN_RTOL): δ = m · max(‖G0‖₂, Σ_h |v_h|‖B_h‖₂)
        over the scalar heads, and the threshold bound 1 − m.
    general : {"auto", "ray", "inert"}, optional
        How heads with non-scalar V_h are repaired (GENERAL).

    Returns
    -------
    Repair
        The layer, the change, the route and a certificate per start.

    Raises
    ------
    InvalidInputError
        params not a Params; cov0 not one or more d×d covariances; change, norm or general not
        one of CHANGES, NORMS, GENERAL; regime empty or not within SAFE_REGIMES; margin not in
        [0, 1).

    See Also
    --------
    Repair : the result.
    riccati_tf.stability.certificates.entry.certify : certifies each start.
    riccati_tf.design.target.attracting_layer : a layer with a prescribed attractor.

    Notes
    -----
    Scalar heads. Only the symmetric part S_h of ΔB_h moves G (skew parts only add to the norm,
    so they are 0), and G = G0 + C with C = −2 Σ_h v_h S_h. For a given C the least
    Σ_h ‖S_h‖_F² with Σ_h v_h S_h = −C/2 is the least-norm solution S_h = −v_h C / (2 Σ_k v_k²)
    (the constraint is a weighted sum; its minimiser is proportional to v_h), of cost
    ‖C‖_F² / (4 Σ_k v_k²). It remains to minimise ‖C‖_F over G0 + C ⪰ δI: the Frobenius
    projection onto the shifted PSD cone, C = U max(δ − λ, 0) Uᵀ for G0 = U diag(λ) Uᵀ. Hence
    distance = ‖C‖_F / (2 √Σ v_k²) and ‖ΔB_h‖ = |v_h| ‖C‖_F / (2 Σ v_k²); for one head this is
    the PSD clipping of the symmetric part of −vB, skew part untouched. With G ⪰ 0 the Gramian
    W(t) = ∫_0^t e^{Aᵀs}Ge^{As}ds is ⪰ 0, so I + L0ᵀW(t)L0 ⪰ I never becomes singular and
    Σ(t) = e^{At}Σ0(I + W(t)Σ0)⁻¹e^{Aᵀt} exists for all t from every start (SPEC §5); δ > 0
    makes G ≻ 0, which `certify` decides robustly (collapse for A Hurwitz or marginal,
    convergence for A anti-stable).

    General heads. For B_h = −c V_hᵀ (c ≥ 0), V_hΣB_h = −c V_hΣV_hᵀ ⪯ 0 for every Σ ⪰ 0 (the
    per-head opposite sign structure), so M = A + Σ_h V_hΣB_h has M + Mᵀ ⪯ A + Aᵀ plus the
    scalar heads' −ΣG: d/dt tr Σ = tr((A + Aᵀ)Σ) − 2Σ_h c_h ‖Σ^½V_hΣ^½‖_F² − tr(ΣGΣ) ≤
    2μ(A) tr Σ, and Σ(t) ⪯ tr Σ0 e^{2μ(A)t} I (μ the largest eigenvalue of (A + Aᵀ)/2): no
    blow-up. The nearest point of the ray is c = max(0, −⟨B_h, V_hᵀ⟩/‖V_h‖_F²); for
    Head(Q, K, V, O) the result is Head(−c Oᵀ, V, V, O). "inert" takes c = 0 (B_h = 0): without
    a Hurwitz A an active general head converges at best algebraically, which `certify`'s
    numerical evidence cannot certify, while inert heads are decided by its theorems.

    Numerical route (scalar heads, A Hurwitz). With G ⪯ 0, −W(t) grows in the Loewner order to
    W∞ (AᵀW∞ + W∞A = G), and the flow from Σ0 = L0L0ᵀ stays regular iff λ_max(L0ᵀW∞L0) < 1
    (SPEC §5): a start-dependent set in G, convex (W∞ is linear in G), that may lie nearer than
    G ⪰ δI. SLSQP minimises ‖C‖_F² over symmetric C subject to −(G0 + C) − δI ⪰ 0 and
    (1 − margin)I − L0ᵀW∞L0 ⪰ 0 for each start, each written X = MMᵀ with a free slack M
    (smooth equality constraints: the eigenvalue form λ_min(X) ≥ 0, with gradients −uuᵀ and
    Y (AY + YAᵀ = −L0uuᵀL0ᵀ), is not differentiable where eigenvalues coalesce at the optimum,
    as clipping makes them). The eigenvalue form runs first from the closed-form clipping of G0
    onto G ⪯ −δI, the slack form from its answer and from the clipping; the nearest feasible
    point is kept. Run for d ≤ NUMERICAL_MAX_D; its layer replaces the closed form's when it is
    nearer and every start is certified.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".
    .. [2] N. J. Higham, "Computing a nearest symmetric positive semidefinite matrix", Linear
       Algebra Appl. 103 (1988) 103–118.

    Examples
    --------
    Two scalar heads with G0 = −2(v_1 + v_2)I = −6I ≺ 0 (blow-up from Σ0 = I, A = 0): G is moved
    to δI (δ = 1e-6 · 6), the correction goes to the heads in proportion to v_h, and the repaired
    layer collapses.

    >>> import numpy as np
    >>> from riccati_tf.state.params import Params
    >>> from riccati_tf.design import nearest_stable
    >>> p = Params(np.zeros((2, 2)), heads=[(np.eye(2), np.eye(2)), (2 * np.eye(2), np.eye(2))])
    >>> rep = nearest_stable(p, np.eye(2))
    >>> bool(np.allclose(rep.params.G, rep.margin * np.eye(2))), rep.margin
    (True, 6e-06)
    >>> np.round(rep.per_head / rep.per_head[0], 6).tolist()
    [1.0, 2.0]
    >>> rep.certificates[0].regime, rep.all_certified
    ('collapses', True)
    """
    if not isinstance(params, Params):
        raise InvalidInputError(f"params must be a riccati_tf.Params, got {type(params).__name__}")
    starts = _starts(cov0, params.d)
    for name, value, allowed in (("change", change, CHANGES), ("norm", norm, NORMS),
                                 ("general", general, GENERAL)):
        if value not in allowed:
            raise InvalidInputError(f"{name} must be one of {allowed}, got {value!r}")
    accepted = tuple(regime) if not isinstance(regime, str) else (regime,)
    if not accepted or not set(accepted) <= set(SAFE_REGIMES):
        raise InvalidInputError(f"regime must be a non-empty subset of {SAFE_REGIMES}, got "
                                f"{regime!r}")
    m = MARGIN_RTOL if margin is None else as_real("margin", margin)
    if not 0 <= m < 1:
        raise InvalidInputError(f"margin must be in [0, 1), got {m}")
    hurwitz = bool(np.max(np.linalg.eigvals(params.A).real) < 0)
    inert = general == "inert" or (general == "auto" and not hurwitz)
    vs, G0 = _scalar_part(params)
    size = max(float(np.linalg.norm(G0, 2)),
               sum(abs(v) * float(np.linalg.norm(B, 2)) for v, (_, B) in
                   zip(vs, params.heads, strict=True) if v is not None))
    delta = m * size
    eig, U = eigh(G0)
    C = (U * np.maximum(delta - eig, 0.0)) @ U.T
    closed = _repaired(params, vs, C, inert, "closed_form", delta, starts, accepted)
    if not (hurwitz and params.d <= NUMERICAL_MAX_D and all(v is not None for v in vs)
            and any(vs) and np.any(C)):
        return closed
    Cn = _threshold_change(params.A, G0, starts, delta, m)
    if Cn is None or np.linalg.norm(Cn) >= np.linalg.norm(C):
        return closed
    numerical = _repaired(params, vs, Cn, inert, "numerical", delta, starts, accepted)
    return numerical if numerical.all_certified or not closed.all_certified else closed


def _starts(cov0: Any, d: int) -> list[np.ndarray]:
    """The start covariances: a Gaussian, a sequence of Gaussians, a d×d array or a (k, d, d)
    array, each validated as a d×d covariance."""
    if isinstance(cov0, Gaussian):
        items: list[Any] = [cov0.cov]
    elif isinstance(cov0, list | tuple) and cov0 and all(isinstance(s, Gaussian) for s in cov0):
        items = [s.cov for s in cov0]
    else:
        arr = as_array("cov0", cov0)
        if arr.ndim not in (2, 3) or arr.size == 0:
            raise InvalidInputError(f"cov0 must be a d×d covariance, a (k, d, d) stack of them "
                                    f"(k ≥ 1) or Gaussians (d = {d}), got shape {arr.shape}")
        items = list(arr) if arr.ndim == 3 else [arr]
    return [as_covariance(f"cov0[{i}]", s, d) for i, s in enumerate(items)]


def _scalar_part(p: Params) -> tuple[list[float | None], np.ndarray]:
    """(v_h or None per head, G0 = −Σ_h v_h (B_h + B_hᵀ) over the scalar heads)."""
    d = p.d
    vs: list[float | None] = []
    G0 = np.zeros((d, d))
    for V, B in p.heads:
        v = float(np.trace(V)) / d
        scalar = np.linalg.norm(V - v * np.eye(d)) <= SCALAR_RTOL * np.linalg.norm(V)
        vs.append(v if scalar else None)
        if scalar:
            G0 -= v * (B + B.T)
    return vs, G0


def _repaired(p: Params, vs: list[float | None], C: np.ndarray, inert: bool, route: str,
              delta: float, starts: list[np.ndarray],
              accepted: tuple[str, ...]) -> Repair:
    """The layer with ΔB_h = −v_h C/(2Σv²) on scalar heads and the ray (or apex) on the others,
    with its distances and certificates."""
    total = sum(v * v for v in vs if v is not None)
    entries: list[Head | tuple[np.ndarray, np.ndarray]] = []
    dist = []
    for (V, B), v, f in zip(p.heads, vs, p.factors, strict=True):
        if v is not None:
            dB = -v * C / (2 * total) if total else np.zeros_like(C)
            dist.append(float(np.linalg.norm(dB)))
            entries.append((V, B + dB) if f is None or np.any(dB) else f)
            continue
        c = 0.0 if inert else max(0.0, -float(np.sum(B * V.T)) / float(np.sum(V * V)))
        dist.append(float(np.linalg.norm(B + c * V.T)))
        entries.append((V, -c * V.T) if f is None else Head(-c * f.O.T, f.V, f.V, f.O))
    new = (Params(p.A, b=p.b, B=entries[0][1], V=entries[0][0])
           if p.B is not None and isinstance(entries[0], tuple) else
           Params(p.A, b=p.b, heads=entries))
    certs = tuple(certify(new, s) for s in starts)
    ok = tuple(c.regime in accepted and c.check() for c in certs)
    per_head = np.array(dist)
    per_head.setflags(write=False)
    return Repair(new, p, float(np.linalg.norm(per_head)), per_head, "fro", route, delta,
                  certs, ok)


def _threshold_change(A: np.ndarray, G0: np.ndarray, starts: list[np.ndarray], delta: float,
                      m: float) -> np.ndarray | None:
    """The least ‖C‖_F with −G0 − C − δI ⪰ 0 and (1 − m)I − L0ᵀW∞L0 ⪰ 0 per start
    (AᵀW∞ + W∞A = G0 + C), by SLSQP twice: on the top eigenvalues (analytic gradients), then
    from there and from the clipping of G0 with each constraint X ⪰ 0 written X = MMᵀ (M a free
    slack); the nearest feasible answer, None when none is."""
    d = A.shape[0]
    iu = np.triu_indices(d)
    n = iu[0].size
    w = np.where(iu[0] == iu[1], 1.0, 2.0)
    roots = [L for L in (psd_factor(s) for s in starts) if L.size]

    def sym(x: np.ndarray) -> np.ndarray:
        X = np.zeros((d, d))
        X[iu] = x
        return X + np.triu(X, 1).T

    def slacks(x: np.ndarray) -> list[np.ndarray]:
        G = G0 + sym(x)
        W = solve_continuous_lyapunov(A.T, G)
        return [-G - delta * np.eye(d)] + [(1 - m) * np.eye(L.shape[1]) - L.T @ W @ L
                                           for L in roots]

    def lowest(x: np.ndarray, j: int) -> tuple[float, np.ndarray]:
        """λ_min of slack j and its gradient in x: −uuᵀ (j = 0), Y with AY + YAᵀ = −zzᵀ,
        z = L0u (the others: d⟨W∞, zzᵀ⟩/dG = −Y)."""
        lam, vec = eigh(slacks(x)[j])
        u = vec[:, 0]
        if j == 0:
            return float(lam[0]), -w * np.outer(u, u)[iu]
        z = roots[j - 1] @ u
        return float(lam[0]), w * solve_continuous_lyapunov(A, -np.outer(z, z))[iu]

    def gaps(z: np.ndarray) -> np.ndarray:
        out, at = [], n
        for X in slacks(z[:n]):
            k = X.shape[0]
            M = z[at:at + k * k].reshape(k, k)
            out.append((X - M @ M.T)[np.triu_indices(k)])
            at += k * k
        return np.concatenate(out)

    def slack_run(x: np.ndarray) -> np.ndarray:
        z0 = np.concatenate([x] + [(U * np.sqrt(np.clip(e, 0.0, None))).ravel() for e, U in
                                   (eigh(X) for X in slacks(x))])
        res = minimize(lambda z: float(np.sum(w * z[:n] ** 2)), z0,
                       jac=lambda z: np.concatenate([2 * w * z[:n], np.zeros(z.size - n)]),
                       constraints=[{"type": "eq", "fun": gaps}], method="SLSQP",
                       options={"maxiter": 500, "ftol": 1e-14})
        return np.asarray(res.x[:n])

    eig, U = eigh(G0)
    x0 = ((U * np.minimum(-delta - eig, 0.0)) @ U.T)[iu]
    cons = [{"type": "ineq", "fun": lambda x, j=j: lowest(x, j)[0],
             "jac": lambda x, j=j: lowest(x, j)[1]} for j in range(len(roots) + 1)]
    x1 = np.asarray(minimize(lambda x: float(np.sum(w * x * x)), x0, jac=lambda x: 2 * w * x,
                             constraints=cons, method="SLSQP",
                             options={"maxiter": 500, "ftol": 1e-14}).x)
    feasible = [x for x in (x1, slack_run(x1), slack_run(x0))
                if all(float(np.linalg.eigvalsh(X)[0]) >=
                       -FEASIBILITY_RTOL * max(1.0, float(np.linalg.norm(X, 2)))
                       for X in slacks(x))]
    return sym(min(feasible, key=lambda x: float(np.sum(w * x * x)))) if feasible else None
