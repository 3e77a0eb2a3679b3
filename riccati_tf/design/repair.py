"""The nearest stable layer within a named set: a change of the query–key matrices B_h, of the
value matrices V_h or of A that moves a layer into a certified non-blow-up regime, the least
one within the set of layers the route searches (`Repair.searched`; SPEC §5–§6).

change="B", scalar heads V_h = v_h I: the layer is projected (Frobenius norm, summed over heads)
onto G = −Σ_h v_h (B_h + B_hᵀ) ⪰ δI, which rules out blow-up from every start; in closed form,

    ΔB_h = (v_h / (2 Σ_k v_k²)) (G0 − P_δ(G0)),   P_δ: eigenvalues of G0 clipped from below at δ.

Other heads are projected onto the ray B_h = −c_h V_hᵀ (c_h ≥ 0), on which the attention term
never increases tr Σ. With A Hurwitz and scalar heads the route "relaxed" searches the larger
convex set G = P − N, P, N ⪰ 0, λ_max(L0ᵀW∞(N)L0) ≤ 1 − margin for every start
(`riccati_tf.design.relaxed`), which contains G ⪰ 0 and the threshold set G ⪯ 0,
λ_max(W∞Σ0) ≤ 1 of SPEC §5, and returns the nearest layer it finds there with its witness N.
Neither set holds every safe layer: a layer outside it may still be certified by `certify`.

change="V", scalar heads: G(v) = −Σ_h v_h (B_h + B_hᵀ) is linear in v = (v_h), and the least
‖Δv‖ with G ⪰ δI (or, A Hurwitz, the threshold set) is a convex problem in H unknowns, solved
by SLSQP; other heads go onto the ray V_h = −c_h B_hᵀ or its apex V_h = 0.

change="A": the least shift A − cI that `certify` certifies (bisection on its verdict; for
A = a0 I from the blow-up time of the attention flow, Σ_c(t) = e^{−2(c−a0)t} Y(τ)), refined for
scalar heads with G ≺ 0 at small d by SLSQP over all of ΔA on the threshold set.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from scipy.linalg import eigh, solve_continuous_lyapunov
from scipy.optimize import minimize

from ..errors import InvalidInputError
from ..stability.certificates.certificate import Certificate
from ..stability.certificates.entry import certify
from ..state.params import Gaussian, Head, HeadEntry, Params
from ..state.validation import ReadOnlyArrays, as_array, as_covariance, as_real, psd_factor
from ._arguments import names
from ._slsqp import FEASIBILITY_RTOL, is_feasible, lmi_projection, slack_run
from .relaxed import RELAXED_SET, SEMIDEFINITE_SET, nearest_relaxed, witness_holds

__all__ = ["CHANGES", "FEASIBILITY_RTOL", "GENERAL", "MARGIN_RTOL", "NORMS", "NUMERICAL_MAX_D",
           "SAFE_REGIMES", "SHIFT_DOUBLINGS", "SHIFT_RTOL", "Repair", "nearest_stable"]

#: what may change: the query–key matrices B_h, the value matrices V_h, or A
CHANGES = ("B", "V", "A")
#: the norm of the change: Frobenius, summed over heads, ‖ΔB‖² = Σ_h ‖ΔB_h‖_F² (likewise ΔV;
#: ‖ΔA‖_F for A)
NORMS = ("fro",)
#: the regimes `certify` may conclude for a repaired layer
SAFE_REGIMES = ("converges", "collapses", "bounded")
#: how heads with a non-scalar V_h are repaired: onto the ray B_h = −c V_hᵀ (change "B") or
#: V_h = −c B_hᵀ (change "V"), c ≥ 0, or onto its apex B_h = 0 or V_h = 0 (inert heads, which
#: `certify` decides by a theorem), or "auto": the ray when A is Hurwitz, the apex otherwise
GENERAL = ("auto", "ray", "inert")
#: the default relative margin: δ = MARGIN_RTOL · max(‖G0‖₂, Σ_h |v_h| ‖B_h‖₂) and the threshold
#: bound 1 − MARGIN_RTOL of the numerical routes
MARGIN_RTOL = 1e-6
#: the numerical routes (B: d(d+1)/2 + (k + 1)d² unknowns for k starts; A: d²) run up to this d
NUMERICAL_MAX_D = 16
#: change "A": the shift c of A − cI is found to within SHIFT_RTOL · c (the bisection's width;
#: for A = a0 I, c − a0 = (1 + SHIFT_RTOL)/(2T*))
SHIFT_RTOL = 1e-3
#: the sets the other routes search, in words (`Repair.searched`)
_RAY_B = "the ray B_h = −c_h V_hᵀ (c_h ≥ 0) for the other heads"
_APEX_B = "B_h = 0 for the other heads"
_VALUE_SET = ("scalar v: G(v) ⪰ δI, or (A Hurwitz, all heads scalar) G(v) ⪯ −δI below the "
              "threshold, or v = 0; other heads on the ray V_h = −c_h B_hᵀ (c_h ≥ 0) or at 0")
_SHIFT_SET = "shifts A − cI, c ≥ 0, that certify certifies (bisection)"
_FEEDFORWARD_SET = ("A + ΔA with W∞ ⪰ 0 and λ_max(L0ᵀW∞L0) ≤ 1 − margin (not convex: the point "
                    "SLSQP reaches from the least shift)")
#: change "A": how often the bracket's upper end (a shift proven to collapse Σ) is doubled when
#: `certify` does not certify it
SHIFT_DOUBLINGS = 4


@dataclass(frozen=True, eq=False)
class Repair(ReadOnlyArrays):
    """A repaired layer, the change that made it, and its certificates.

    The repaired layer differs from the original only in what `change` names: the query–key
    matrices B_h ↦ B_h + ΔB_h, the value matrices V_h ↦ V_h + ΔV_h, or A ↦ A + ΔA, with

        distance² = Σ_h ‖ΔB_h‖_F²,   Σ_h ‖ΔV_h‖_F²   or   ‖ΔA‖_F²,

    the least such change over the set of the route (`nearest_stable`, Notes).

    Parameters
    ----------
    params : Params
        The repaired layer (everything but the changed matrices as given; factored heads stay
        factored).
    original : Params
        The layer given.
    change : str
        What changed: "B", "V" or "A" (CHANGES).
    distance : float
        The change in the norm `norm`: (Σ_h ‖ΔB_h‖_F²)^½, (Σ_h ‖ΔV_h‖_F²)^½ or ‖ΔA‖_F.
    per_head : (H,) ndarray
        ‖ΔB_h‖_F or ‖ΔV_h‖_F for each head (zeros for change "A", which no head carries).
    norm : str
        The norm of the change ("fro").
    route : str
        "closed_form" (the sign-structure projection of B; for V, only the ray or apex of
        heads none of which is scalar), "relaxed" (change B, A Hurwitz: the relaxed set, with
        a witness), "numerical" (SLSQP: the threshold set of a Hurwitz A for A, the
        semidefinite sets of G for V), "inert" (change V: every scalar V_h = 0) or "shift"
        (change A: A − cI).
    margin : float
        δ ≥ 0: G ⪰ δI or G ⪯ −δI for the scalar heads (changes "B", "V"); for route "relaxed"
        and change "A" the relative margin m of the threshold bound 1 − m.
    certificates : tuple of Certificate
        `certify` of the repaired layer from each start.
    certified : tuple of bool
        Per start: the regime is one of the accepted ones and `Certificate.check()` passes.
    searched : str
        The set of layers the route searched, in words: the repaired layer is the nearest of
        that set found (exactly the nearest for the closed form), not of every safe layer.
    witness : (d, d) ndarray or None
        Route "relaxed": the N ⪰ 0 with G + N ⪰ 0 and λ_max(L0ᵀW∞(N)L0) < 1 for every start,
        which proves that no start blows up (`riccati_tf.design.relaxed`); None otherwise.

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
    >>> rep.change, rep.route, round(rep.distance, 12), rep.params.B.tolist(), rep.all_certified
    ('B', 'closed_form', 1.0, [[0.0]], True)
    """

    params: Params
    original: Params
    change: str
    distance: float
    per_head: np.ndarray
    norm: str
    route: str
    margin: float
    certificates: tuple[Certificate, ...]
    certified: tuple[bool, ...]
    searched: str = SEMIDEFINITE_SET
    witness: np.ndarray | None = None

    @property
    def all_certified(self) -> bool:
        """Whether every start is certified."""
        return all(self.certified)

    def check(self) -> bool:
        """Re-decide every field: the layers differ only in what `change` names (and A, b
        agree otherwise); per_head and distance are the norms of that difference; each
        certificate is of this layer, passes `Certificate.check()` and `certified` says so
        only for a safe regime; the witness (route "relaxed") proves every start safe
        (`relaxed.witness_holds`) and a closed-form answer lies in G ⪰ δI."""
        p, q = self.params, self.original
        if self.change not in CHANGES or len(p.heads) != len(q.heads) or p.d != q.d:
            return False
        dV = [float(np.linalg.norm(a[0] - b[0])) for a, b in zip(p.heads, q.heads, strict=True)]
        dB = [float(np.linalg.norm(a[1] - b[1])) for a, b in zip(p.heads, q.heads, strict=True)]
        dA = float(np.linalg.norm(p.A - q.A))
        moved: list[float] = {"B": dB, "V": dV, "A": [0.0] * len(dB)}[self.change]
        still = [x for c, x in (("B", dB), ("V", dV)) if c != self.change]
        dist = dA if self.change == "A" else float(np.linalg.norm(moved))
        scale = max(1.0, dist)
        if (any(any(x) for x in still) or (self.change != "A" and dA) or
                np.any(p.b != q.b) or not np.allclose(self.per_head, moved, rtol=1e-9,
                                                      atol=1e-12 * scale)
                or not abs(self.distance - dist) <= 1e-9 * scale):
            return False
        certs_ok = all(_same_layer(c.params, p) and c.check() for c in self.certificates)
        flags_ok = len(self.certified) == len(self.certificates) and all(
            not f or c.regime in SAFE_REGIMES for f, c in zip(self.certified, self.certificates,
                                                              strict=True))
        roots = [L for L in (psd_factor(c.cov0) for c in self.certificates) if L.size]
        if self.witness is not None:
            member = (self.searched == RELAXED_SET and p.value_scalars is not None
                      and witness_holds(p.A, p.G, self.witness, roots))
        elif self.route == "relaxed":
            member = False
        elif self.searched == SEMIDEFINITE_SET:
            vs = p.value_scalars
            terms = 0.0 if vs is None else sum(abs(v) * float(np.linalg.norm(B + B.T, 2))
                                               for v, (_, B) in zip(vs, p.heads, strict=True))
            member = vs is not None and bool(np.linalg.eigvalsh(p.G)[0] >= self.margin - 8 * p.d
                                             * len(vs) * np.finfo(float).eps * terms)
        else:
            member = bool(self.searched)
        return certs_ok and flags_ok and member


def nearest_stable(params: Params,
                   cov0: npt.ArrayLike | Gaussian | Sequence[npt.ArrayLike | Gaussian], *,
                   change: str = "B", norm: str = "fro",
                   regime: Sequence[str] = SAFE_REGIMES, margin: float | None = None,
                   general: str = "auto") -> Repair:
    """The least change of B, V or A (Frobenius, summed over heads) within a named set of safe
    layers (`Repair.searched`), certified safe from every start.

        change "B":  min Σ_h ‖ΔB_h‖_F²   s.t.   G = −Σ_h v_h (B_h + ΔB_h + (B_h + ΔB_h)ᵀ) ⪰ δI,
        change "V":  min Σ_h d Δv_h²     s.t.   G = −Σ_h (v_h + Δv_h)(B_h + B_hᵀ) ⪰ δI,
        change "A":  min ‖ΔA‖_F          s.t.   `certify` finds A + ΔA safe from every start.

    "B" is solved in closed form, ΔB_h = (v_h / (2 Σ_k v_k²)) (G0 − P_δ(G0)) with P_δ the
    eigenvalue clipping of G0 at δ (scalar heads V_h = v_h I; other heads: the ray
    B_h = −c_h V_hᵀ, c_h ≥ 0): the nearest layer with G ⪰ δI. With A Hurwitz and every head
    scalar (d ≤ NUMERICAL_MAX_D) it is nearest within the relaxed set (route "relaxed",
    `riccati_tf.design.relaxed.RELAXED_SET`): G = P − N, P, N ⪰ 0 and
    λ_max(L0ᵀW∞(N)L0) ≤ 1 − margin for every start Σ0 = L0L0ᵀ, a convex set that contains
    G ⪰ 0 and SPEC §5's threshold set and whose witness N proves that no start blows up. "V"
    by SLSQP in the H scalars, against the apex v = 0 (other heads: the ray V_h = −c_h B_hᵀ),
    with A Hurwitz also on G ⪯ −δI, λ_max(W∞Σ0) ≤ 1 − margin. "A" takes the least shift
    A − cI and, for scalar heads with G ≺ 0 at small d, the threshold set over all of ΔA. The
    result names the set searched (`Repair.searched`): it is the nearest of that set, not of
    every layer `certify` certifies.

    Parameters
    ----------
    params : Params
        The layer: dense (V_h, B_h) pairs or `Head` factors, any A.
    cov0 : (d, d) array_like, Gaussian, or a sequence of them, or a (k, d, d) array_like
        The start covariance(s) Σ0 ⪰ 0.
    change : {"B", "V", "A"}, optional
        What changes: the query–key matrices (default), the value matrices (scalar ones stay
        scalar), or A.
    norm : {"fro"}, optional
        The norm of the change: Σ_h ‖ΔB_h‖_F², Σ_h ‖ΔV_h‖_F² (= Σ_h d Δv_h² for scalar heads)
        or ‖ΔA‖_F² (the only choice).
    regime : sequence of str, optional
        The regimes accepted as certified, a non-empty subset of SAFE_REGIMES (default all).
    margin : float, optional
        The relative margin m ≥ 0 (default MARGIN_RTOL): δ = m · max(‖G0‖₂, Σ_h |v_h|‖B_h‖₂)
        over the scalar heads, and the threshold bound 1 − m.
    general : {"auto", "ray", "inert"}, optional
        How heads with non-scalar V_h are repaired under changes "B" and "V" (GENERAL).

    Returns
    -------
    Repair
        The layer, the change, the route and a certificate per start.

    Raises
    ------
    InvalidInputError
        params not a Params; cov0 not one or more d×d covariances; change, norm or general not
        one of CHANGES, NORMS, GENERAL; general other than "auto" with change "A"; regime empty
        or not within SAFE_REGIMES; margin not in [0, 1).

    See Also
    --------
    Repair : the result.
    riccati_tf.stability.certificates.entry.certify : certifies each start.
    riccati_tf.design.target.attracting_layer : a layer with a prescribed attractor.

    Notes
    -----
    Change "B", scalar heads. Only the symmetric part S_h of ΔB_h moves G (skew parts only add
    to the norm, so they are 0), and G = G0 + C with C = −2 Σ_h v_h S_h. For a given C the least
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
    blow-up. The nearest point of the ray is c = max(0, −tr(V_hB_h)/‖V_h‖_F²); for
    Head(Q, K, V, O) the result is Head(−c Oᵀ, V, V, O). "inert" takes c = 0 (B_h = 0): without
    a Hurwitz A an active general head converges at best algebraically, which `certify`'s
    numerical evidence cannot certify, while inert heads are decided by its theorems. Change
    "V" mirrors this: V_h = −c B_hᵀ, c = max(0, −tr(V_hB_h)/‖B_h‖_F²), Head(Q, K, −cK, Qᵀ), or
    V_h = 0. A factored head's tr(V_hB_h) and norms come from its factors (QR of the stacked
    factors), without its dense pair.

    Relaxed route of "B" (scalar heads, A Hurwitz). For G = P − N with P, N ⪰ 0,
    W(t) = W_P(t) − W_N(t) ⪰ −W∞(N) (AᵀW∞(N) + W∞(N)A = −N), so I + L0ᵀW(t)L0 ⪰
    I − L0ᵀW∞(N)L0 ≻ 0 for all t when λ_max(L0ᵀW∞(N)L0) < 1: the flow from Σ0 = L0L0ᵀ exists
    for all t. The set of such G is convex (W∞ is linear in N) and holds G ⪰ 0 (N = 0) and the
    threshold set G ⪯ 0, λ_max(L0ᵀW∞(−G)L0) < 1 (N = −G). For a fixed N the least C with
    G0 + C + N ⪰ 0 is the negative part of G0 + N, so the distance is a convex function of N,
    minimised by SLSQP over N = MMᵀ under the threshold (1 − margin) for every start, from
    N = 0 and N = the negative part of G0 (`riccati_tf.design.relaxed.nearest_relaxed`); the
    answer's witness N is re-decided with the Lyapunov residual and eigenvalue rounding
    allowed for (`witness_holds`), and `Repair.check()` re-decides it. Run for
    d ≤ NUMERICAL_MAX_D; its layer replaces the closed form's when it is nearer and every start
    is certified by `certify` (else the closed form is returned, searched = "G ⪰ δI").

    Change "V" (scalar heads, which stay scalar: V_h ↦ (v_h + Δv_h) I). ‖ΔV_h‖_F = √d |Δv_h|,
    and G(v) = −Σ_h v_h S_h (S_h = B_h + B_hᵀ) and W∞(v) = Σ_h v_h W_h (AᵀW_h + W_hA = −S_h)
    are linear in v: each set, G ⪰ δI, and (A Hurwitz, every head scalar) G ⪯ −δI with
    (1 − m)I − L0ᵀW∞L0 ⪰ 0, is convex, an LMI in H unknowns. SLSQP minimises ‖v − v0‖² on
    each with the constraints λ_min(X(v)) ≥ 0 (gradients uᵀ(∂X/∂v_h)u; a run whose iterates
    leave the finite numbers gives no answer); the feasible answers and the apex v = 0 (every
    scalar head inert) are certified in order of distance and the first certified one is
    returned (the nearest one when none is).

    Change "A". Shifts A − cI: `certify` decides each c, the bracket's upper end is
    c₁ = μ(A) + κ λ_max(Σ0) (κ = Σ_h ‖V_h‖₂‖B_h‖₂), where d λ_max(Σ)/dt ≤ 2λ_max(Σ)(μ(A) − c +
    κ λ_max(Σ)) keeps λ_max(Σ) ≤ λ_max(Σ0) and collapses Σ, doubled up to SHIFT_DOUBLINGS
    times, and bisection on the verdict narrows [0, c₁] to a width SHIFT_RTOL · c; the
    distance is c√d. For A = a0 I, Σ_c(t) = e^{−2(c−a0)t} Y(τ) with τ = (1 − e^{−2(c−a0)t})/
    (2(c − a0)) and Y the flow of the attention alone (A = 0) from Σ0: Σ_c exists for all t
    and → 0 iff Y exists on [0, 1/(2(c − a0))], so the least shift is c = a0 + 1/(2T*) with T*
    the blow-up time `certify` gives Y; c = a0 + (1 + SHIFT_RTOL)/(2T*) is certified first
    (two `certify` calls, no bisection). For scalar heads with G ≺ 0, A + ΔA collapses iff it
    is Hurwitz and λ_max(L0ᵀW∞L0) ≤ 1 with (A + ΔA)ᵀW∞ + W∞(A + ΔA) = G; W∞ ⪰ 0 with G ≺ 0
    makes A + ΔA Hurwitz (Lyapunov). For d ≤ NUMERICAL_MAX_D SLSQP minimises ‖ΔA‖_F² from the
    shift subject to λ_min(W∞) ≥ 0 and λ_max(L0ᵀW∞L0) ≤ 1 − m (gradients 2W∞Y with
    (A + ΔA)Y + Y(A + ΔA)ᵀ = −zzᵀ, z the eigenvector u or L0u); its layer replaces the shift
    when it is nearer and certified. This set is not convex: the answer is the nearest point
    SLSQP reaches.

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

    Changing A instead: G = −6I from Σ0 = I blows up at T* = 1/6 with A = 0; the shift
    c = (1 + SHIFT_RTOL)/(2T*) is certified, and the threshold set, λ_max(W∞) ≤ 1 − m with
    AᵀW∞ + W∞A = −6I, brings it to A = −3(1 + m)I.

    >>> rep = nearest_stable(p, np.eye(2), change="A")
    >>> rep.route, bool(np.allclose(rep.params.A, -3 * np.eye(2), atol=1e-4))
    ('numerical', True)
    >>> round(rep.distance / float(np.sqrt(2)), 4), rep.certificates[0].regime
    (3.0, 'collapses')
    """
    if not isinstance(params, Params):
        raise InvalidInputError(f"params must be a riccati_tf.Params, got {type(params).__name__}")
    starts = _starts(cov0, params.d)
    for name, value, allowed in (("change", change, CHANGES), ("norm", norm, NORMS),
                                 ("general", general, GENERAL)):
        if value not in allowed:
            raise InvalidInputError(f"{name} must be one of {allowed}, got {value!r}")
    if change == "A" and general != "auto":
        raise InvalidInputError(f"general applies to change 'B' or 'V' (the heads change), not "
                                f"to change 'A', got general={general!r}")
    accepted = names("regime", regime, SAFE_REGIMES)
    m = MARGIN_RTOL if margin is None else as_real("margin", margin)
    if not 0 <= m < 1:
        raise InvalidInputError(f"margin must be in [0, 1), got {m}")
    if change == "A":
        return _feedforward_change(params, starts, accepted, m)
    hurwitz = bool(np.max(np.linalg.eigvals(params.A).real) < 0)
    inert = general == "inert" or (general == "auto" and not hurwitz)
    vs, G0 = _scalar_part(params)
    size = max(float(np.linalg.norm(G0, 2)),
               sum(abs(v) * float(np.linalg.norm(params.heads[h][1], 2))
                   for h, v in enumerate(vs) if v))
    delta = m * size
    if change == "V":
        return _value_change(params, vs, starts, accepted, inert, hurwitz, delta, m)
    eig, U = eigh(G0)
    C = (U * np.maximum(delta - eig, 0.0)) @ U.T
    scalar = all(v is not None for v in vs)
    searched = (SEMIDEFINITE_SET if scalar else
                f"{SEMIDEFINITE_SET} over the scalar heads, {_RAY_B if not inert else _APEX_B}")
    closed = _repaired(params, vs, C, inert, "closed_form", delta, starts, accepted, searched)
    if not (hurwitz and params.d <= NUMERICAL_MAX_D and scalar and any(vs) and np.any(C)):
        return closed
    roots = [L for L in (psd_factor(s) for s in starts) if L.size]
    found = nearest_relaxed(params.A, G0, roots, m, [np.zeros_like(G0), (U * np.maximum(
        -eig, 0.0)) @ U.T])
    if found is None or np.linalg.norm(found[0]) >= np.linalg.norm(C):
        return closed
    relaxed = _repaired(params, vs, found[0], inert, "relaxed", m, starts, accepted,
                        RELAXED_SET, found[1])
    return relaxed if relaxed.all_certified or not closed.all_certified else closed


def _same_layer(p: Params, q: Params) -> bool:
    """Whether two layers have equal A, b and heads (V_h, B_h)."""
    return (p.d == q.d and len(p.heads) == len(q.heads) and np.array_equal(p.A, q.A)
            and np.array_equal(p.b, q.b) and all(
                np.array_equal(x, y) for a, b in zip(p.heads, q.heads, strict=True)
                for x, y in zip(a, b, strict=True)))


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


def _entry(p: Params, h: int) -> HeadEntry:
    """Head h as given: its `Head` factors or its dense pair."""
    f = p.factors[h]
    return p.heads[h] if f is None else f


def _scalar_part(p: Params) -> tuple[list[float | None], np.ndarray]:
    """(v_h or None per head, G0 = −Σ_h v_h (B_h + B_hᵀ) over the scalar heads). Each head is
    tested by `Params.value_scalars` on its own (a factored head of value rank < d is scalar
    only when V_h = 0, and its B_h is not formed); B_h is formed only for v_h ≠ 0."""
    G0 = np.zeros((p.d, p.d))
    vs: list[float | None] = []
    for h in range(len(p.heads)):
        one = Params(heads=[_entry(p, h)]).value_scalars
        v = None if one is None else one[0]
        vs.append(v)
        if v:
            B = p.heads[h][1]
            G0 -= v * (B + B.T)
    return vs, G0


def _fro(X: np.ndarray, Y: np.ndarray, order: Literal["fro"] | int = "fro") -> float:
    """‖XY‖ (Frobenius or 2-norm) for X d×k, Y k×n without forming XY: XY = Q(RY) with
    X = QR (orthonormal columns Q), O(dk² + k²n) instead of O(dkn)."""
    return float(np.linalg.norm(np.linalg.qr(X, mode="r") @ Y, order))


def _general(entry: HeadEntry, change: str, inert: bool) -> tuple[HeadEntry, float]:
    """A non-scalar head moved onto the ray B_h = −cV_hᵀ (change "B") or V_h = −cB_hᵀ ("V"),
    c ≥ 0 nearest, or its apex c = 0 (inert); with ‖ΔB_h‖_F or ‖ΔV_h‖_F. A `Head` stays
    factored and its dense pair is not formed."""
    if isinstance(entry, Head):
        Q, K, V, O = entry.Q, entry.K, entry.V, entry.O
        cross = float(np.sum((Q @ O) * (K @ V.T)))  # tr(V_hB_h) = tr(QO VKᵀ)
        if change == "B":
            c = 0.0 if inert else max(0.0, -cross / _fro(O, V) ** 2)
            return (Head(-c * O.T, V, V, O),
                    _fro(np.hstack([K.T, c * V.T]), np.vstack([Q, O.T])))
        c = 0.0 if inert else max(0.0, -cross / _fro(K.T, Q) ** 2)
        return Head(Q, K, -c * K, Q.T), _fro(np.hstack([O, c * Q.T]), np.vstack([V, K]))
    Vd, Bd = entry
    cross = float(np.sum(Vd * Bd.T))
    if change == "B":
        c = 0.0 if inert else max(0.0, -cross / float(np.sum(Vd * Vd)))
        return (Vd, -c * Vd.T), float(np.linalg.norm(Bd + c * Vd.T))
    c = 0.0 if inert else max(0.0, -cross / float(np.sum(Bd * Bd)))
    return (-c * Bd.T, Bd), float(np.linalg.norm(Vd + c * Bd.T))


def _layer(p: Params, A: np.ndarray, entries: list[HeadEntry]) -> Params:
    """p with A and the heads replaced (a one-head layer given by B and V stays so)."""
    if p.B is not None and isinstance(entries[0], tuple):
        return Params(A, b=p.b, B=entries[0][1], V=entries[0][0])
    return Params(A, b=p.b, heads=entries)


def _judged(p: Params, original: Params, change: str, per_head: list[float], route: str,
            margin: float, starts: list[np.ndarray], accepted: tuple[str, ...], searched: str,
            distance: float | None = None, witness: np.ndarray | None = None) -> Repair:
    """The Repair of layer p: `certify` from each start, verdicts in `accepted` and checked."""
    certs = tuple(certify(p, s) for s in starts)
    ok = tuple(c.regime in accepted and c.check() for c in certs)
    heads = np.array(per_head, dtype=float)
    heads.setflags(write=False)
    dist = float(np.linalg.norm(heads)) if distance is None else distance
    if witness is not None:
        witness = witness.copy()
        witness.setflags(write=False)
    return Repair(p, original, change, dist, heads, "fro", route, margin, certs, ok, searched,
                  witness)


def _repaired(p: Params, vs: list[float | None], C: np.ndarray, inert: bool, route: str,
              delta: float, starts: list[np.ndarray], accepted: tuple[str, ...], searched: str,
              witness: np.ndarray | None = None) -> Repair:
    """The layer with ΔB_h = −v_h C/(2Σv²) on scalar heads and the ray (or apex) on the others,
    with its distances and certificates."""
    total = sum(v * v for v in vs if v is not None)
    entries: list[HeadEntry] = []
    dist = []
    for h, v in enumerate(vs):
        entry = _entry(p, h)
        if v is None:
            entry, gap = _general(entry, "B", inert)
            entries.append(entry)
            dist.append(gap)
            continue
        dB = -v * C / (2 * total) if total else np.zeros_like(C)
        dist.append(float(np.linalg.norm(dB)))
        entries.append((p.heads[h][0], p.heads[h][1] + dB) if np.any(dB) else entry)
    return _judged(_layer(p, p.A, entries), p, "B", dist, route, delta, starts, accepted,
                   searched, witness=witness)


def _value_change(p: Params, vs: list[float | None], starts: list[np.ndarray],
                  accepted: tuple[str, ...], inert: bool, hurwitz: bool, delta: float,
                  m: float) -> Repair:
    """Change "V": the scalar heads' v by SLSQP on G ⪰ δI and (A Hurwitz, all heads scalar)
    on the threshold set, and the apex v = 0; the others onto the ray or apex; the nearest
    certified candidate."""
    d = p.d
    idx = [h for h, v in enumerate(vs) if v is not None]
    v0 = np.array([vs[h] for h in idx], dtype=float)
    S = [p.heads[h][1] + p.heads[h][1].T for h in idx]
    eye = np.eye(d)
    sets = [[(-delta * eye, [-Sk for Sk in S])]]
    if hurwitz and len(idx) == len(vs):
        W = [solve_continuous_lyapunov(p.A.T, -Sk) for Sk in S]  # W∞(v) = Σ v_k W_k
        sets.append([(-delta * eye, S)] +
                     [((1 - m) * np.eye(L.shape[1]), [-L.T @ Wk @ L for Wk in W])
                      for L in (psd_factor(s) for s in starts) if L.size])
    candidates = [(x, "numerical") for x in (lmi_projection(v0, lmis) for lmis in sets if idx)
                  if x is not None]
    candidates.append((np.zeros_like(v0), "inert" if idx else "closed_form"))
    general = {h: _general(_entry(p, h), "V", inert) for h, v in enumerate(vs) if v is None}
    tried: list[Repair] = []
    for x, route in sorted(candidates, key=lambda c: float(np.linalg.norm(c[0] - v0))):
        entries: list[HeadEntry] = []
        dist = []
        new = dict(zip(idx, x, strict=True))
        for h in range(len(vs)):
            if h in general:
                entries.append(general[h][0])
                dist.append(general[h][1])
                continue
            dv = new[h] - v0[idx.index(h)]
            entries.append((new[h] * eye, p.heads[h][1]) if dv else _entry(p, h))
            dist.append(float(np.sqrt(d) * abs(dv)))
        rep = _judged(_layer(p, p.A, entries), p, "V", dist, route, delta, starts, accepted,
                      _VALUE_SET)
        if rep.all_certified:
            return rep
        tried.append(rep)
    return tried[0]  # none certified: the nearest (the apex is always a candidate)


def _feedforward_change(p: Params, starts: list[np.ndarray], accepted: tuple[str, ...],
                        m: float) -> Repair:
    """Change "A": the least certified shift A − cI (from T* of the attention flow when
    A = a0 I, else bisection on `certify`), then for scalar heads with G ≺ 0 and
    d ≤ NUMERICAL_MAX_D the threshold set over all of ΔA; the nearer certified layer. A layer
    certified as given comes back unchanged (c = 0)."""
    d, A = p.d, p.A
    entries = [_entry(p, h) for h in range(len(p.heads))]
    zeros = [0.0] * len(entries)

    def shifted(c: float) -> Repair:
        return _judged(_layer(p, A - c * np.eye(d), entries), p, "A", zeros, "shift", m,
                       starts, accepted, _SHIFT_SET, distance=c * np.sqrt(d))

    rep = shifted(0.0)
    if rep.all_certified:
        return rep
    top = _least_shift(A, entries, starts, rep, shifted)
    if not top.all_certified or p.value_scalars is None or d > NUMERICAL_MAX_D or \
            not np.linalg.eigvalsh(p.G)[-1] < 0:
        return top
    A2 = _feedforward_threshold(A, top.params.A, p.G, starts, m)
    if A2 is None or np.linalg.norm(A2 - A) >= top.distance:
        return top
    refined = _judged(_layer(p, A2, entries), p, "A", zeros, "numerical", m, starts, accepted,
                      _FEEDFORWARD_SET, distance=float(np.linalg.norm(A2 - A)))
    return refined if refined.all_certified else top


def _least_shift(A: np.ndarray, entries: list[HeadEntry], starts: list[np.ndarray],
                 unshifted: Repair, shifted: Callable[[float], Repair]) -> Repair:
    """The least certified shift A − cI: c = a0 + (1 + SHIFT_RTOL)/(2T*) for A = a0 I when
    the attention flow blows up from every start and that shift is certified; otherwise
    bisection on the verdict in [0, c₁] (c₁ = μ(A) + κ λ_max(Σ0), doubled while not certified)
    to a width SHIFT_RTOL · c; the last uncertified shift when no c₁ · 2^k is certified."""
    d = A.shape[0]
    a0 = float(A[0, 0])
    if not np.any(A - a0 * np.eye(d)):  # A = a0 I: Σ_c(t) = e^{−2(c−a0)t} Y(τ)
        attn = unshifted.certificates if a0 == 0 else tuple(
            certify(Params(np.zeros((d, d)), heads=entries), s) for s in starts)
        times = [c.blowup_time for c in attn if c.regime == "blows_up"]
        if len(times) == len(attn) and all(times):
            first = shifted(a0 + (1 + SHIFT_RTOL) / (2 * min(t for t in times if t)))
            if first.all_certified:
                return first
    kappa = sum(_spectral(e) for e in entries)
    mu = float(np.linalg.eigvalsh(A + A.T)[-1]) / 2
    hi = max(mu + kappa * max(float(np.linalg.eigvalsh(s)[-1]) for s in starts), 0.0)
    hi = hi * (1 + SHIFT_RTOL) or 1.0
    top = shifted(hi)
    for _ in range(SHIFT_DOUBLINGS):
        if top.all_certified:
            break
        hi *= 2
        top = shifted(hi)
    if not top.all_certified:
        return top
    lo = 0.0
    while hi - lo > SHIFT_RTOL * hi:
        mid = shifted((lo + hi) / 2)
        if mid.all_certified:
            hi, top = (lo + hi) / 2, mid
        else:
            lo = (lo + hi) / 2
    return top


def _spectral(entry: HeadEntry) -> float:
    """‖V_h‖₂‖B_h‖₂ (from the factors for a `Head`)."""
    if isinstance(entry, Head):
        return _fro(entry.O, entry.V, 2) * _fro(entry.K.T, entry.Q, 2)
    return float(np.linalg.norm(entry[0], 2) * np.linalg.norm(entry[1], 2))


def _feedforward_threshold(A0: np.ndarray, A1: np.ndarray, G: np.ndarray,
                           starts: list[np.ndarray], m: float) -> np.ndarray | None:
    """The least ‖A − A0‖_F found by SLSQP from A1 (a certified shift of A0) subject to
    W∞ ⪰ 0 and (1 − m)I − L0ᵀW∞L0 ⪰ 0 per start, AᵀW∞ + W∞A = G: on the lowest eigenvalues
    (analytic gradients, within ‖A − A0‖_F ≤ ‖A1 − A0‖_F, outside which W∞ → 0 as A grows
    makes the eigenvalue form degenerate), then with each constraint X ⪰ 0 written X = MMᵀ
    from there and from A1; the nearest feasible answer (FEASIBILITY_RTOL), None when none is."""
    d = A0.shape[0]
    roots = [L for L in (psd_factor(s) for s in starts) if L.size]

    def slacks(x: np.ndarray) -> list[np.ndarray]:
        W = solve_continuous_lyapunov((A0 + x.reshape(d, d)).T, G)
        return [W] + [(1 - m) * np.eye(L.shape[1]) - L.T @ W @ L for L in roots]

    def lowest(x: np.ndarray, j: int) -> tuple[float, np.ndarray]:
        """λ_min of slack j and its gradient: d(zᵀW∞z)/dA = 2W∞Y, AY + YAᵀ = −zzᵀ, with z = u
        (j = 0, slack W∞) or z = L0u (slack (1 − m)I − L0ᵀW∞L0, gradient negated)."""
        xs = slacks(x)
        lam, vec = eigh(xs[j])
        u = vec[:, 0]
        z = u if j == 0 else roots[j - 1] @ u
        Y = solve_continuous_lyapunov(A0 + x.reshape(d, d), -np.outer(z, z))
        return float(lam[0]), (1 if j == 0 else -1) * (2 * xs[0] @ Y).ravel()

    x0 = (A1 - A0).ravel()
    radius = float(x0 @ x0)
    cons = [{"type": "ineq", "fun": lambda x, j=j: lowest(x, j)[0],
             "jac": lambda x, j=j: lowest(x, j)[1]} for j in range(len(roots) + 1)]
    cons.append({"type": "ineq", "fun": lambda x: radius - float(x @ x),
                 "jac": lambda x: -2 * x})
    x1 = np.asarray(minimize(lambda y: float(y @ y), x0, jac=lambda y: 2 * y,
                             constraints=cons, method="SLSQP",
                             options={"maxiter": 500, "ftol": 1e-15}).x)
    w = np.ones_like(x0)
    feasible = [x for x in (x1, slack_run(x1, slacks, w), slack_run(x0, slacks, w))
                if np.all(np.isfinite(x)) and all(is_feasible(X) for X in slacks(x))]
    return A0 + min(feasible, key=lambda x: float(x @ x)).reshape(d, d) if feasible else None
