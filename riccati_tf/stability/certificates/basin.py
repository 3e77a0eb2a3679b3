"""Convergence by a Lyapunov basin at a computed equilibrium Σ̂ and the flow's path entering it
(SPEC §6), for general V up to d = STIFF_MAX_D (the stiff regime, where explicit steps stall).

Theorem. Write F(Σ̂ + H) = f + L(H) + R(H) with f = F(Σ̂), L the linearisation at Σ̂ and
R(H) = Σ_h (V_hHB_hH + HB_hᵀHV_hᵀ), ‖R(H)‖_F ≤ c‖H‖_F², c = 2Σ_h‖V_h‖₂‖B_h‖₂. Let P ≻ 0 on
Sym(d) (orthonormal coordinates, n_s × n_s), ‖H‖_P² = hᵀPh, q ≤ λ_min(−(LᵀP + PL)),
0 < p₋ ≤ λ_min(P), p₊ ≥ λ_max(P), and

    a = q/p₊,   k = c √p₊ / p₋,   g ≥ ‖f‖_P,   a² > 16 k g,
    s₋ = 4g / (a + √(a² − 16kg)),   a* = (q − 4c p₊ s₋/√p₋) / p₊ > 0.

(i) d‖H‖_P²/dt ≤ −a s² + 2gs + 2ks³ (s = ‖H‖_P) is negative for s₋ < s < s₊ = (a + √(a² −
16kg))/(4k); every ball {‖H‖_P ≤ s'}, s₋ < s' < s₊, is compact, convex and forward invariant,
so it holds an equilibrium (Brouwer), and no equilibrium lies in s₋ < s < s₊: there is an
exact equilibrium Σ* with ‖Σ* − Σ̂‖_P ≤ s₋. (ii) At Σ*, L* = L + DR(Σ* − Σ̂) with
‖DR(E)‖ ≤ 2c‖E‖_F, so −(L*ᵀP + PL*) ⪰ (q − 4c p₊ ‖Σ* − Σ̂‖_F) I and, with F(Σ*) = 0,
d‖Σ − Σ*‖_P/dt ≤ −(a*/2) s + k s² for s = ‖Σ − Σ*‖_P. Every Σ with ‖Σ − Σ*‖_P < a*/(2k)
converges to Σ*, at the rate a*/2 − k s(0) > 0 in ‖·‖_P. (iii) So the ball
{‖Σ − Σ̂‖_P < r_B}, r_B = a*/(2k) − s₋, lies in the basin of Σ*; the certificate's basin is
ρ = r_B² (a level of ‖Σ − Σ̂‖_P²).

Membership: the flow from Σ0 integrated by `equilibria.settling.implicit_flow` (Radau IIA, exact
Jacobian) at PATH_RTOL and again at PATH_RTOL · PATH_TIGHTEN to t1; the tighter run's state Σ̃(t1)
is stored, and its error is estimated as ε = PATH_SAFETY ‖Σ̃_loose(t1) − Σ̃(t1)‖_F + PATH_FLOOR
‖Σ̃(t1)‖_F (an a posteriori estimate, the one numerical premise of the certificate). The
certificate holds when ‖Σ̃(t1) − Σ̂‖_P + √p₊ ε ≤ r_B: every state within ε of Σ̃(t1) then converges
to Σ*.

Rounding. q, p₋, p₊, g and c are computed in floating point and moved outward by
ROUNDING_ULPS · n_s · eps times the Frobenius norms of their operands (the error bound of an
n_s-term product, ≤ n_s eps |X||Y|, and of a backward-stable symmetric eigensolver, ≤ p(n) eps
‖Q‖, with a factor 64 of room), L's own rounding (M and the head products, d-term sums) counted
the same way; the few scalar operations after that (a, k, s₋, a*, r_B) are taken with a
relative margin SCALAR_MARGIN = 1e-10, far above their ≤ 20 roundings of eps each.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ...state.params import Params
from ..equilibria import ACCEPT_RTOL, NEWTON_MAXITER, Equilibrium
from ..equilibria.coords import to_coords
from ..equilibria.evidence import is_psd, make_equilibrium
from ..equilibria.field import F, relative_residual
from ..equilibria.krylov import _KrylovBudget
from ..equilibria.linearization import linearization_matrix
from ..equilibria.newton import _newton
from ..equilibria.scales import head_norms
from ..equilibria.settling import implicit_flow
from ..stiffpath import STIFF_MAX_D
from .constants import EPS, ROUNDING_ULPS
from .local import lyapunov_matrix

if TYPE_CHECKING:
    from .certificate import Certificate

__all__ = ["PATH_FLOOR", "PATH_RTOL", "PATH_SAFETY", "PATH_TIGHTEN", "SCALAR_MARGIN",
           "SETTLED_RTOL", "THEOREM", "TOLERANCE"]

#: the theorem name of a basin certificate (`Certificate.theorem`)
THEOREM = "lyapunov_basin"
#: the path: Radau at PATH_RTOL (atol PATH_RTOL · tr Σ0 / d) and at PATH_RTOL · PATH_TIGHTEN
PATH_RTOL = 1e-8
PATH_TIGHTEN = 1e-2
#: the error estimate of the tighter run: PATH_SAFETY times its distance to the looser one, plus
#: PATH_FLOOR times its size (the tighter run's own error is not below its tolerance)
PATH_SAFETY = 10.0
PATH_FLOOR = 1e-11
#: the path is integrated until the relative residual of F is at most this (Newton from there)
SETTLED_RTOL = 1e-9
#: relative margin on the scalar inequalities after the outward-rounded matrix quantities
SCALAR_MARGIN = 1e-10
#: the tolerances a basin certificate is decided with (`Certificate.tolerance`)
TOLERANCE = {"path_rtol": PATH_RTOL, "path_tighten": PATH_TIGHTEN,
             "path_safety": PATH_SAFETY, "path_floor": PATH_FLOOR}


@dataclass(frozen=True)
class Basin:
    """The rounding-safe constants of the theorem (module docstring) for P at Σ̂: q, p₋, p₊,
    c, g, s₋, a*, k and the radius r_B of the ball {‖Σ − Σ̂‖_P < r_B} in the basin of Σ*."""

    q: float
    p_min: float
    p_max: float
    c: float
    g: float
    s_minus: float
    a_star: float
    k: float
    radius: float


def basin_of(params: Params, cov: np.ndarray, P: np.ndarray,
             L: np.ndarray | None = None) -> Basin | None:
    """`Basin` of P (n_s × n_s, symmetric) at Σ̂ = cov, or None when an inequality of the
    theorem fails (q ≤ 0, p₋ ≤ 0, a² ≤ 16kg, a* ≤ 0, r_B ≤ 0) or anything is not finite. L: the
    linearisation at cov when already formed (recomputed otherwise)."""
    d = params.d
    L = linearization_matrix(params, cov) if L is None else L
    n = L.shape[0]
    slack = ROUNDING_ULPS * n * EPS
    up, down = 1 + SCALAR_MARGIN, 1 - SCALAR_MARGIN
    norms = head_norms(params)
    head_f = sum(float(np.linalg.norm(V)) * float(np.linalg.norm(B)) for V, B in params.heads)
    sig = float(np.linalg.norm(cov))
    a_f = float(np.linalg.norm(params.A))
    # L's rounding: M = A + Σ V_hΣB_h and the products H ↦ MH, V_hHB_hΣ (d-term sums)
    err_L = ROUNDING_ULPS * d * EPS * n * (2 * a_f + 8 * head_f * sig)
    P = 0.5 * (P + P.T)
    p_f, l_f = float(np.linalg.norm(P)), float(np.linalg.norm(L))
    LP = L.T @ P
    Q = -(LP + LP.T)
    q = float(np.linalg.eigvalsh(Q)[0]) - slack * (float(np.linalg.norm(Q)) + 2 * l_f * p_f) \
        - 2 * p_f * err_L
    pe = np.linalg.eigvalsh(P)
    p_min, p_max = float(pe[0]) - slack * p_f, float(pe[-1]) + slack * p_f
    c = 2.0 * sum(v * b for v, b in norms) * (1 + slack)
    f = to_coords(F(params, cov))
    err_f = ROUNDING_ULPS * d * EPS * (2 * a_f * sig + 2 * head_f * sig * sig)
    g = np.sqrt(p_max) * (float(np.linalg.norm(f)) * (1 + slack) + err_f) * up
    if not (np.isfinite([q, p_min, p_max, c, g]).all() and q > 0 and p_min > 0 and c > 0):
        return None
    a = q / p_max * down
    k = c * np.sqrt(p_max) / p_min * up
    disc = (a * a * down - 16 * k * g * up)
    if not disc > 0:
        return None
    s_minus = 4 * g / (a + np.sqrt(disc) * down) * up
    a_star = (q - 4 * c * p_max * s_minus / np.sqrt(p_min) * up) / p_max * down
    if not a_star > 0:
        return None
    radius = (a_star / (2 * k) * down - s_minus) * down
    if not radius > 0:
        return None
    return Basin(q, p_min, p_max, c, float(g), float(s_minus), float(a_star), float(k),
                 float(radius))


def p_distance(P: np.ndarray, cov: np.ndarray, state: np.ndarray) -> float:
    """An upper bound of ‖state − cov‖_P = √(hᵀPh): hᵀPh plus ROUNDING_ULPS n_s eps ‖P‖_F|h|²."""
    h = to_coords(state - cov)
    slack = ROUNDING_ULPS * h.size * EPS
    return float(np.sqrt(max(float(h @ P @ h), 0.0) + slack * float(np.linalg.norm(P))
                         * float(h @ h))) * (1 + SCALAR_MARGIN)


@dataclass(frozen=True)
class Path:
    """The flow's path to t1: the tighter run's Σ̃(t1), its error estimate ε (module docstring)
    and the work of both runs (steps, right-hand sides, Jacobians)."""

    t1: float
    state: np.ndarray
    error: float
    work: tuple[int, int, int]


def path_to(params: Params, cov0: np.ndarray, t1: float | None, horizon: float,
            top: float) -> Path | None:
    """The tighter run to t1 (None: until the relative residual of F is ≤ SETTLED_RTOL, within
    horizon), the looser one to the same t1, and the error estimate; None when either run ends
    otherwise (a runaway past top, a collapse, the step budget, a failed step)."""
    d = params.d
    atol = PATH_RTOL * float(np.trace(cov0)) / d
    tight = implicit_flow(params, cov0, horizon if t1 is None else t1,
                            rtol=PATH_RTOL * PATH_TIGHTEN, atol=atol * PATH_TIGHTEN,
                            settle_rtol=SETTLED_RTOL if t1 is None else None, top=top)
    if tight.status not in (("settled",) if t1 is None else ("end",)):
        return None
    loose = implicit_flow(params, cov0, tight.t, rtol=PATH_RTOL, atol=atol, top=top)
    if loose.status != "end":
        return None
    error = PATH_SAFETY * float(np.linalg.norm(loose.cov - tight.cov)) + \
        PATH_FLOOR * float(np.linalg.norm(tight.cov))
    work = tuple(int(getattr(tight, k) + getattr(loose, k))
                 for k in ("steps", "evaluations", "jacobians"))
    return Path(tight.t, tight.cov, error, work)  # type: ignore[arg-type]


def basin_evidence(params: Params, cov0: np.ndarray, horizon: float,
                   top: float) -> tuple[Equilibrium, np.ndarray, np.ndarray, Basin, Path] | None:
    """(Σ̂, L, P, Basin, Path) when the flow settles within horizon (d ≤ STIFF_MAX_D), Newton
    from its end state reaches an equilibrium Σ̂ ⪰ 0, L at Σ̂ has a Lyapunov matrix P whose
    `basin_of` exists, and the path's error ball lies inside it; None otherwise."""
    if params.d > STIFF_MAX_D:
        return None
    path = path_to(params, cov0, None, horizon, top)
    if path is None:
        return None
    got = _newton(params, path.state, NEWTON_MAXITER, _KrylovBudget(1))
    if got is None or not is_psd(got[0]) or not np.any(got[0]):  # Σ̂ = 0 is no convergence
        return None
    cov = 0.5 * (got[0] + got[0].T)
    L = linearization_matrix(params, cov)
    P = lyapunov_matrix(L)
    if P is None:
        return None
    basin = basin_of(params, cov, P, L)
    if basin is None or not inside(P, cov, path.state, path.error, basin.radius):
        return None
    eq = make_equilibrium(params, cov, "newton[flow]",
                          abscissa=float(np.max(np.linalg.eigvals(L).real)))
    return eq, L, P, basin, path


def inside(P: np.ndarray, cov: np.ndarray, state: np.ndarray, error: float,
           radius: float) -> bool:
    """‖state − Σ̂‖_P + √p₊ ε ≤ radius (p₊ bounded above as in `basin_of`)."""
    p_max = float(np.linalg.eigvalsh(P)[-1]) + ROUNDING_ULPS * P.shape[0] * EPS * \
        float(np.linalg.norm(P))
    return p_distance(P, cov, state) + np.sqrt(p_max) * error * (1 + SCALAR_MARGIN) <= radius


def rate_of(P: np.ndarray, cov: np.ndarray, state: np.ndarray, error: float,
            basin: Basin) -> float:
    """The proven rate a*/2 − k s(0) of ‖Σ(t) − Σ*‖_P from the stored state's error ball, with
    s(0) ≤ ‖Σ̃ − Σ̂‖_P + √p₊ ε + s₋."""
    s0 = p_distance(P, cov, state) + np.sqrt(basin.p_max) * error + basin.s_minus
    return float(basin.a_star / 2 - basin.k * s0 * (1 + SCALAR_MARGIN))


def basin_ok(c: Certificate, replay: bool) -> bool:
    """`Certificate.check()` of a basin certificate: the form; Σ̂'s residual; L recomputed at Σ̂;
    P's basin recomputed with the stored level at most r_B²; the stored state's error ball
    inside it; the rate recomputed; with replay, both runs of the path integrated again to the
    stored t1, the tighter one's state within the stored ε of the stored state, and the error
    estimate recomputed not above the stored ε."""
    p, eq, P = c.params, c.equilibrium, c.lyapunov
    if c.regime != "converges" or c.theorem != THEOREM or c.exact or c.global_ or \
            c.tolerance != TOLERANCE or eq is None or P is None or c.final_cov is None or \
            c.horizon is None or c.path_error is None or c.basin is None or \
            c.operator is None or c.lyapunov_rhs is None or c.blowup_time is not None or \
            c.blowup_direction is not None or c.threshold is not None or \
            c.kantorovich_radius is not None or c.bound is not None:
        return False
    if not (np.isfinite(c.horizon) and c.horizon > 0 and np.isfinite(c.path_error)
            and c.path_error > 0 and np.isfinite(c.basin) and c.basin > 0):
        return False
    if not isinstance(p, Params) or p.d > STIFF_MAX_D or c.cov0.shape != (p.d, p.d):
        return False
    cov = np.asarray(eq.cov, dtype=float)
    if cov.shape != (p.d, p.d) or not np.array_equal(cov, cov.T) or eq.rank < 1 or \
            not np.all(np.isfinite(cov)):
        return False
    res = relative_residual(p, cov)
    if not (res <= ACCEPT_RTOL and res <= 2 * eq.residual + 1e-15):
        return False
    L = linearization_matrix(p, cov)
    if c.operator.shape != L.shape or P.shape != L.shape or \
            not np.array_equal(P, P.T) or \
            np.linalg.norm(L - c.operator) > 1e-12 * float(np.linalg.norm(L)):
        return False
    LP = L.T @ P
    if np.linalg.norm(c.lyapunov_rhs + LP + LP.T) > 1e-9 * float(np.linalg.norm(c.lyapunov_rhs)):
        return False
    basin = basin_of(p, cov, P, L)
    if basin is None or not c.basin <= basin.radius ** 2:
        return False
    radius = float(np.sqrt(c.basin))
    if not inside(P, cov, c.final_cov, c.path_error, radius):
        return False
    if c.rate is None or abs(c.rate - rate_of(P, cov, c.final_cov, c.path_error, basin)) > \
            1e-9 * abs(c.rate) or not c.rate > 0:
        return False
    if not replay:
        return True
    path = path_to(p, np.asarray(c.cov0, dtype=float), c.horizon, c.horizon, np.inf)
    return path is not None and path.error <= c.path_error and \
        float(np.linalg.norm(path.state - c.final_cov)) <= c.path_error
