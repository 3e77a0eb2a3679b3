"""`Certificate.check()`: the claims of a certificate re-decided from its stored layer and start.

A certificate passes when its regime and fields are consistent (an equilibrium exactly for
converges/collapses, T* exactly for blows_up, everything finite), Σ0 is what `certify` stores (a
finite, exactly symmetric, positive semidefinite array), the equilibrium's every field is
recomputed (residual within ACCEPT_RTOL, rank, spectral abscissa and stable flag, m*), P ≻ 0 and
−(LᵀP + PL) ≻ 0 with L recomputed at Σ* (in exact rational arithmetic for d ≤
EXACT_CHECK_MAX_D), the final state lies in the certified basin, a scalar-V T* is the first root
of λ_min(I + L0ᵀW(t)L0) and is bracketed by its sign change across T*(1 ± BLOWUP_CHECK_RTOL),
the evidence of an integration (horizon and Σ there, "undetermined" included) is replayed, and
the premises of the cited theorem hold again (exactly, or with the stored tolerances). A theorem
listed in VERIFIERS is re-decided whole by its own verifier ("lyapunov_stable":
`bounded.bounded_ok`); a new theorem with fields of its own plugs in there.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from scipy.linalg import cholesky

from ...errors import InvalidInputError
from ...flows.exact import van_loan
from ...state.params import SCALAR_RTOL, Params
from ...state.validation import as_covariance
from ..equilibria import ACCEPT_RTOL, Equilibrium
from ..equilibria.evidence import decide_stability, mean_equilibrium, psd_rank_rel
from ..equilibria.field import relative_residual
from ..equilibria.linearization import linearization_matrix, spectral_abscissa
from ..equilibria.scales import drift_spectrum, quadratic_constant
from ..riccati import AXIS_RTOL
from . import basin, bounded
from .blowup import (
    _blowup_scale,
    _gramian,
    _grows,
    _rank0,
    _threshold,
    blowup_check,
    cov_root,
    state_scale,
)
from .constants import (
    BALL_RTOL,
    BLOWUP_CHECK_RTOL,
    BLOWUP_RTOL,
    CLOSE_RTOL,
    DIRECTION_RTOL,
    EPS,
    EVIDENCE_TOLERANCE,
    EXACT_CHECK_MAX_D,
    GROWTH_FACTOR,
    IMPLICIT_RTOL,
    INTEGRATION_ATOL,
    INTEGRATION_RTOL,
    RANGE_RTOL,
    REGIMES,
    REPLAY_RTOL,
    THRESHOLD_RTOL,
)
from .integration import _replay_run
from .local import _approaches, _level, _local_bounds, _zero_sublevel
from .premises import THEOREMS, bracket_agrees, default_tolerance, premises, theorem_of
from .rationals import _exact_ok, exact_rank

if TYPE_CHECKING:
    from .certificate import Certificate

__all__: list[str] = []



#: the theorems whose certificates one verifier re-decides whole (the form, the premises and the
#: conclusion), in place of the path of `_verify` shared by the SPEC §5 theorems and the
#: numerical evidence: theorem → verifier(certificate, replay) → bool. A verifier must accept
#: only its own regime and say which optional fields (constants.EVIDENCE_FIELDS) it sets.
VERIFIERS: dict[str, Callable[[Certificate, bool], bool]] = {
    bounded.THEOREM: bounded.bounded_ok,
    basin.THEOREM: basin.basin_ok,
}


def _verify(c: Certificate, replay: bool = True) -> bool:
    """Every claim of c re-decided from (params, cov0); replay=False skips the re-integration of
    numerical evidence (`certify` checks what it has just integrated)."""
    p = c.params
    if c.regime not in REGIMES or not isinstance(c.reason, str) or not _finite(c):
        return False
    if not isinstance(p, Params) or not _start_ok(c):
        return False
    if not isinstance(c.exact, bool) or not isinstance(c.global_, bool):
        return False
    if c.theorem in VERIFIERS:
        return VERIFIERS[c.theorem](c, replay)
    if c.regime == "bounded" or c.bound is not None or c.path_error is not None:
        return False  # the fields of theorems that are not this one
    if not _tolerance_ok(c) or c.global_ != _global(c):
        return False
    eq = c.equilibrium
    if c.regime in ("converges", "collapses"):
        if eq is None or not _equilibrium_ok(p, eq):
            return False
        if (c.regime == "collapses") != (not np.any(eq.cov)):
            return False
        if c.regime == "converges" and eq.rank < 1:
            return False
    elif eq is not None or c.lyapunov is not None:
        return False
    if c.lyapunov is not None and not _lyapunov_ok(c):
        return False
    if c.lyapunov is None and (c.operator is not None or c.lyapunov_rhs is not None
                               or c.kantorovich_radius is not None):
        return False
    if c.lyapunov is None and c.basin is not None and not _zero_basin_ok(c):
        return False
    if c.threshold is not None and not _threshold_ok(c):
        return False
    if c.regime == "blows_up":
        if c.blowup_time is None or not c.blowup_time > 0 or \
                (c.blowup_direction is None) != (p.value_scalars is None):
            return False
        if c.horizon is not None or c.final_cov is not None:
            return False
        if p.value_scalars is not None:
            if not (blowup_check(p.A, p.G, c.cov0, c.blowup_time)
                    and c.blowup_direction is not None
                    and _direction_ok(p, c.cov0, c.blowup_time, c.blowup_direction)):
                return False
        elif replay and not _rk_blowup_ok(c):
            return False
    elif c.blowup_time is not None or c.blowup_direction is not None:
        return False
    if not _rate_ok(c) or not _premises_ok(c):
        return False
    return not replay or _evidence_ok(c)


def _start_ok(c: Certificate) -> bool:
    """Σ0 is what `certify` accepts and stores: a finite (d, d) float array, exactly symmetric
    (both triangles are read: the closed form through a Cholesky factor reads one, the
    integration both), positive semidefinite within validation's tolerance; m0 a finite (d,)
    vector."""
    d, cov0, mean0 = c.params.d, c.cov0, c.mean0
    if not isinstance(cov0, np.ndarray) or cov0.dtype != np.float64 or cov0.shape != (d, d):
        return False
    if not isinstance(mean0, np.ndarray) or mean0.shape != (d,) or \
            not np.all(np.isfinite(mean0)):
        return False
    if not np.all(np.isfinite(cov0)) or not np.array_equal(cov0, cov0.T):
        return False
    try:
        as_covariance("cov0", cov0, d)
    except InvalidInputError:
        return False
    return True


def _global(c: Certificate) -> bool:
    """global_ as the theorem says: exact, and the theorem holds for every Σ0 ≻ 0 (a Lyapunov
    witness S bounds Σ(t) from every Σ0)."""
    return bool(c.exact and c.theorem in THEOREMS and THEOREMS[c.theorem][1])


def _tolerance_ok(c: Certificate) -> bool:
    """tolerance None exactly for an exact certificate (and for an "undetermined" one that used
    none: no integration); otherwise a dict of known names with the values `certify` uses:
    every premise tolerance of `default_tolerance` for a scalar-V theorem or where any of them
    is stated, every integration tolerance of numerical evidence (an "undetermined" one with a
    horizon included), blowup_check_rtol for a numerical blow-up."""
    tol = c.tolerance
    if c.exact or tol is None:  # an integration always has its tolerances
        return c.exact == (tol is None) or \
            (c.regime == "undetermined" and tol is None and c.horizon is None)
    if not isinstance(tol, dict) or not tol:
        return False
    known = {**default_tolerance(c.params), **EVIDENCE_TOLERANCE,
             "scalar_rtol": SCALAR_RTOL, "blowup_check_rtol": BLOWUP_CHECK_RTOL}
    for name, value in tol.items():
        if name not in known or not isinstance(value, float | int) or not np.isfinite(value) \
                or not value > 0:
            return False
        if name != "integration_rtol" and value != known[name]:
            return False
    if tol.get("integration_rtol", INTEGRATION_RTOL) not in (INTEGRATION_RTOL, BALL_RTOL):
        return False
    need: set[str] = set()
    premise = set(default_tolerance(c.params))
    if c.params.value_scalars is not None and (c.theorem in THEOREMS or premise & set(tol)):
        need |= premise  # the premises were decided with all of them, or none
    if c.theorem in ("numerical", "closed_form_root") and \
            (c.regime != "undetermined" or c.horizon is not None):
        need |= set(EVIDENCE_TOLERANCE)
    if c.regime == "blows_up" and c.theorem in ("numerical", "closed_form_root"):
        need.add("blowup_check_rtol")
    return need <= set(tol)


def _threshold_ok(c: Certificate) -> bool:
    """The stored λ_max(W∞Σ0) agrees with a recomputation (relative THRESHOLD_RTOL)."""
    p = c.params
    if p.value_scalars is None or c.threshold is None:
        return False
    tol = c.tolerance or {}
    lam, _ = _threshold(p.A, p.G, cov_root(c.cov0, _rank0(c.cov0)),
                        tol.get("axis_rtol", AXIS_RTOL), tol.get("range_rtol", RANGE_RTOL))
    return lam is not None and abs(lam - c.threshold) <= THRESHOLD_RTOL * max(abs(lam), 1.0)


def _direction_ok(p: Params, cov0: np.ndarray, T: float, u: np.ndarray) -> bool:
    """Scalar V: the stored unit direction is ±e^{AT*}L0v/‖·‖ with S(T*)v = 0, S(t) =
    I + L0ᵀW(t)L0 (v the eigenvector of λ_min(S(T*))), to 1 − |cos ∠| ≤ DIRECTION_RTOL."""
    L0 = cov_root(cov0, _rank0(cov0))
    E, _ = van_loan(p.A, p.G, T)
    W = _gramian(p.A, p.G, T)
    v = np.linalg.eigh(np.eye(L0.shape[1]) + L0.T @ W @ L0)[1][:, 0]
    return _aligned(E @ L0 @ v, u)


def _aligned(a: np.ndarray, u: np.ndarray) -> bool:
    """1 − |cos ∠(a, u)| ≤ DIRECTION_RTOL, u a unit vector (to 1e-12)."""
    if u.shape != a.shape or abs(np.linalg.norm(u) - 1) > 1e-12 or not np.linalg.norm(a) > 0:
        return False
    return 1 - abs(float(a @ u)) / float(np.linalg.norm(a)) <= DIRECTION_RTOL


def _rk_blowup_ok(c: Certificate) -> bool:
    """General V: a Runge–Kutta re-integration from Σ0 (at the stored integration tolerances)
    blows up within T*(1 ± blowup_check_rtol)."""
    tol = c.tolerance or {}
    T = float(c.blowup_time)  # type: ignore[arg-type]
    rtol = tol.get("blowup_check_rtol", BLOWUP_CHECK_RTOL)
    natural = state_scale(c.params, c.cov0)
    got = _replay(c, T * (1 + rtol), natural)
    start = state_scale(c.params, c.cov0, start=True)
    if (got is None or got[2] is None) and start != natural:  # as certify: Σ0's units next
        got = _replay(c, T * (1 + rtol), start)
    if got is None or got[2] is None:
        return False
    return abs(got[2][0] - T) <= rtol * T


def _replay(c: Certificate, until: float, sigma: float = 1.0) -> tuple[
        np.ndarray, np.ndarray, tuple[float, np.ndarray | None] | None] | None:
    """Σ integrated again from Σ0 to `until` as certify integrates it (`integration._replay_run`:
    closed form for scalar V, Runge–Kutta at the stored integration tolerances otherwise,
    continued by Rodas4 at the stored implicit_rtol where it turns stiff, in the units σ of
    `blowup.state_scale`, segments projected on the PSD cone), without its stop on the size of
    tr Σ: (state at until/2, state at until, (T*, direction) or None); None when the
    integration fails."""
    p = c.params
    tol = c.tolerance or {}
    run = _replay_run(p, np.asarray(c.cov0, dtype=float), until,
                      "exact" if p.value_scalars is not None else "rk", sigma=sigma,
                      rtol=tol.get("integration_rtol", INTEGRATION_RTOL),
                      atol=tol.get("integration_atol", INTEGRATION_ATOL),
                      blowup_rtol=tol.get("blowup_rtol", BLOWUP_RTOL),
                      implicit_rtol=tol.get("implicit_rtol", IMPLICIT_RTOL))
    if run.failure is not None:
        return None
    blowup = None if run.blowup_time is None else (run.blowup_time, run.blowup_direction)
    return run.mid, run.final, blowup


def _rate_ok(c: Certificate) -> bool:
    """The stated rate is the one the evidence gives (relative 1e-9): −2 max Re λ(A) for
    "psd_hurwitz" and a zero-sublevel collapse, 2 min |Re λ(A)| for "psd_gramian_pd", the
    slowest stable decay for an "nsd_threshold" collapse, −max Re λ(L) for a local Lyapunov
    certificate, the numerical-range bound of Σ* for an attracting ball; None for an algebraic
    collapse, a blow-up, "undetermined" and an approach without a Lyapunov set; "grows" is
    re-decided with the replayed integration (`_evidence_ok`)."""
    p, th, rate = c.params, c.theorem, c.rate
    if c.regime == "grows" and th == "numerical":
        return rate is not None and rate > 0
    eig = np.linalg.eigvals(p.A)
    want: float | None
    if c.regime in ("blows_up", "undetermined", "grows") or th in ("psd_marginal", "static"):
        want = None
    elif th == "psd_hurwitz" or th == "zero" or (th == "numerical" and c.lyapunov is None
                                                 and c.basin is not None):
        want = -2 * float(np.max(eig.real)) if th != "zero" else None
    elif th == "psd_gramian_pd":
        want = 2 * float(np.min(np.abs(drift_spectrum(p)[0].real)))
    elif th == "nsd_threshold":
        re = eig.real[eig.real < 0]
        want = -2 * float(np.max(re)) if re.size else None
    elif c.operator is not None:
        want = -float(np.max(np.linalg.eigvals(c.operator).real))
    elif th == "numerical" and c.rate is not None:
        st = c.equilibrium.stability if c.equilibrium is not None else None
        want = None if st is None or st.value is None else -float(st.value)
    else:
        want = None
    if want is None or rate is None:
        return want is None and rate is None
    return abs(rate - want) <= 1e-9 * max(abs(want), 1e-300)


def _evidence_ok(c: Certificate) -> bool:
    """Numerical evidence re-decided on a replayed integration from Σ0 to the stored horizon:
    the replayed end state agrees with final_cov (REPLAY_RTOL) and itself lies in the stated
    basin (Lyapunov sublevel set, zero sublevel set), approaches Σ* within close_rtol, or grows
    by growth_factor at the stated rate (relative 1e-3); for "undetermined" the replay reaches
    the horizon without blow-up and ends at final_cov. The static flow: Σ* = Σ0."""
    p = c.params
    if c.theorem == "static":
        return (c.regime == "converges" and not np.any(p.A) and quadratic_constant(p) == 0
                and c.equilibrium is not None and np.array_equal(c.equilibrium.cov, c.cov0)
                and c.horizon is None and c.final_cov is None)
    if c.horizon is None or c.final_cov is None:  # no integration: a theorem, or a blow-up
        return c.horizon is None and c.final_cov is None and \
            (c.theorem != "numerical" or c.regime in ("blows_up", "undetermined"))
    got = _replayed(c)
    if got is None:
        return False
    if c.regime == "undetermined":  # the evidence: Σ at the horizon, reached without blow-up
        return c.equilibrium is None
    mid, final = got
    tol = c.tolerance or {}
    eq = c.equilibrium
    if c.regime == "grows":
        rate = float(np.log(np.trace(final) / np.trace(mid)) / (c.horizon / 2))
        return _grows(c.cov0, mid, final, _growth_scale(p, c.cov0),
                      tol.get("growth_factor", GROWTH_FACTOR)) and \
            abs(rate - float(c.rate)) <= 1e-3 * abs(rate)  # type: ignore[arg-type]
    if eq is None or c.theorem != "numerical":
        return False
    if c.lyapunov is not None and c.operator is not None:
        bounds = _local_bounds(p, eq.cov, c.operator, c.lyapunov)
        return bounds is not None and c.basin is not None and \
            _level(c.lyapunov, eq.cov, final, bounds[0]) <= c.basin
    if c.basin is not None:
        ball = _zero_sublevel(p)
        return ball is not None and ball.gap(final) < c.basin
    if c.rate is not None:  # attracting ball: the replayed state is where the stored one is
        return True
    return _approaches(eq.cov, mid, final, tol.get("close_rtol", CLOSE_RTOL),
                       max(float(np.linalg.norm(c.cov0)), float(np.linalg.norm(final))))


def _replayed(c: Certificate) -> tuple[np.ndarray, np.ndarray] | None:
    """(state near horizon/2, state at the horizon) of the integration replayed from Σ0 to the
    stored horizon (≥ 0), when it reaches the horizon without blow-up and agrees with final_cov
    (REPLAY_RTOL of the larger norm); else None."""
    p = c.params
    if c.horizon is None or c.final_cov is None or not c.horizon >= 0 or \
            c.final_cov.shape != c.cov0.shape:
        return None
    if c.horizon == 0:  # an integration that failed in its first segment ends at Σ0
        return (c.cov0, c.cov0) if np.array_equal(c.final_cov, c.cov0) else None
    got = _replay(c, c.horizon, 1.0 if p.value_scalars is not None else state_scale(p, c.cov0))
    if got is None or got[2] is not None:
        return None
    mid, final, _ = got
    scale = max(float(np.linalg.norm(final)), float(np.linalg.norm(c.final_cov)), 1e-300)
    if np.linalg.norm(final - c.final_cov) > REPLAY_RTOL * scale:
        return None
    return mid, final


def _growth_scale(p: Params, cov0: np.ndarray) -> float:
    """The size past which growth is evidence of "grows" (as `numerical._classify_final`): 0
    when G ⪰ 0 is decided exactly (no blow-up), else the blow-up scale `_blowup_scale`."""
    if p.value_scalars is not None:
        pr = premises(p, cov0)
        if pr.exact and pr.g_psd:
            return 0.0
    return _blowup_scale(p)


def _equilibrium_ok(p: Params, eq: Equilibrium) -> bool:
    """Every field of Σ* re-decided: a finite symmetric (d, d) covariance (symmetric to 1e-12,
    PSD within validation's tolerance) whose residual is recomputed (≤ ACCEPT_RTOL, within a
    factor 2 of the stored one either way), its rank, the spectral abscissa of L and the stable
    flag, the mean m* and the method's and rcond's form (`_rank_ok`, `_stability_ok`,
    `_mean_ok`)."""
    if not isinstance(eq, Equilibrium):
        return False
    cov = eq.cov
    if not isinstance(cov, np.ndarray) or cov.shape != (p.d, p.d) or \
            not np.all(np.isfinite(cov)):
        return False
    if np.linalg.norm(cov - cov.T) > 1e-12 * max(float(np.linalg.norm(cov)), 1e-300):
        return False
    as_covariance("Σ*", cov, p.d)  # InvalidInputError (a ValueError): the check fails
    res = relative_residual(p, cov)
    if not (res <= ACCEPT_RTOL and res <= 2 * eq.residual + 1e-15
            and eq.residual <= 2 * res + 1e-15):
        return False
    if not isinstance(eq.method, str) or not _METHOD.fullmatch(eq.method):
        return False
    if eq.rcond is not None and not 0 <= eq.rcond <= 1 + 1e-9:  # an estimate of a value ≤ 1
        return False
    return _rank_ok(p, eq) and _stability_ok(p, eq) and _mean_ok(p, eq)


#: the forms of `Equilibrium.method`
_METHOD = re.compile(r"(bernoulli-schur|bernoulli-slycot|invariant-subspace|zero|static"
                     r"|newton\[[^\]]*\])(\+newton)?")


def _rank_ok(p: Params, eq: Equilibrium) -> bool:
    """rank Σ*: the number of eigenvalues above RANK_RTOL · λ_max, or the exact rank of the
    floats (d ≤ EXACT_MAX_D), or for a Bernoulli solution the dimension of its invariant
    subspace, the number of eigenvalues of A with Re λ > AXIS_RTOL ‖A‖₂."""
    rank = eq.rank
    if not isinstance(rank, int | np.integer) or isinstance(rank, bool) or \
            not 0 <= rank <= p.d:
        return False
    if rank == psd_rank_rel(eq.cov) or rank == exact_rank(eq.cov):
        return True
    lam, norm = drift_spectrum(p)
    return eq.method.startswith("bernoulli") and \
        rank == int(np.sum(lam.real > AXIS_RTOL * norm))


def _stability_ok(p: Params, eq: Equilibrium) -> bool:
    """The spectral abscissa of L at Σ* recomputed (`_abscissa`, to 1e-8 of the norm of A and of
    the quadratic term at Σ*) and stable its sign; where the abscissa was not computed
    (d > DENSE_SPECTRUM_MAX_D), the stability decision recomputed (`decide_stability`) with the
    same verdict, method and, to 1e-6 relative, value."""
    if eq.stable is not None and not isinstance(eq.stable, bool | np.bool_):
        return False
    if eq.spectral_abscissa is not None:
        if eq.stability is not None:
            return False
        a = _abscissa(p, eq.cov)
        scale = drift_spectrum(p)[1] + quadratic_constant(p) * float(np.linalg.norm(eq.cov, 2))
        # a repeated eigenvalue (A = cI, a Jordan block) moves by ε^{1/k} under rounding, k its
        # multiplicity: two ways of computing it agree only to that (k ≤ ABSCISSA_MULTIPLICITY)
        tol = max(1e-8, EPS ** (1 / min(p.d, ABSCISSA_MULTIPLICITY))) * max(scale, 1e-300)
        same_sign = abs(a) <= tol or (a < 0) == (eq.spectral_abscissa < 0)
        return abs(a - eq.spectral_abscissa) <= tol and same_sign and \
            eq.stable == (eq.spectral_abscissa < 0)
    if eq.stability is None:
        return False
    _, st = decide_stability(p, eq.cov)
    if st is None or st.method != eq.stability.method or st.stable != eq.stability.stable or \
            eq.stable != st.stable:
        return False
    v, w = st.value, eq.stability.value
    if v is None or w is None:
        return v is None and w is None
    return abs(v - w) <= 1e-6 * abs(v) + 1e-300


#: the largest multiplicity of an eigenvalue of L whose rounding the abscissa's re-check allows
ABSCISSA_MULTIPLICITY = 4


def _abscissa(p: Params, cov: np.ndarray) -> float:
    """max Re λ(L) at Σ*: 2 max Re λ(A) without an attention term (L(H) = AH + HAᵀ); for scalar
    V, where L(H) = (A − Σ*G)H + H(A − Σ*G)ᵀ, 2 max Re λ(A − Σ*G) (d × d, at any d); otherwise
    `spectral_abscissa`."""
    if quadratic_constant(p) == 0:
        return 2.0 * float(np.max(drift_spectrum(p)[0].real))
    if p.value_scalars is not None:
        return 2.0 * float(np.max(np.linalg.eigvals(p.A - cov @ p.G).real))
    return spectral_abscissa(p, cov)


def _mean_ok(p: Params, eq: Equilibrium) -> bool:
    """m*: with K* = A + Σ_h V_h + Σ_h V_hΣ*B_h, a stated m* solves K*m* + b = 0 (to 1e-9 of
    ‖K*‖‖m*‖ + ‖b‖) and K* is not visibly unstable (max Re λ(K*) < 1e-9‖K*‖); None is stated
    when K* is not Hurwitz or m* leaves the float range (`mean_equilibrium` finds none), or K*
    lies within 1e-9‖K*‖ of the imaginary axis."""
    K = p.M(eq.cov) + sum((V for V, _ in p.heads), start=0.0)
    norm = float(np.linalg.norm(K))
    top = float(np.max(np.linalg.eigvals(K).real))
    m = eq.mean
    if m is None:
        return top >= -1e-9 * norm or mean_equilibrium(p, eq.cov) is None
    if not isinstance(m, np.ndarray) or m.shape != (p.d,) or not np.all(np.isfinite(m)):
        return False
    gap = float(np.linalg.norm(K @ m + p.b))
    return top < 1e-9 * norm and \
        gap <= 1e-9 * (norm * float(np.linalg.norm(m)) + float(np.linalg.norm(p.b)))


def _zero_basin_ok(c: Certificate) -> bool:
    """A collapse on the evidence of `_ZeroSublevel` (basin without a Lyapunov matrix): with P and
    the level recomputed from the layer, the stored basin is at most that level (to 1e-9
    relative: another BLAS may round the solves differently) and the final state lies below
    the basin."""
    ball = _zero_sublevel(c.params)
    return (c.regime == "collapses" and ball is not None and c.final_cov is not None
            and c.basin is not None and c.basin <= ball.radius * (1 + 1e-9)
            and ball.gap(c.final_cov) < c.basin)


def _lyapunov_ok(c: Certificate) -> bool:
    p, eq, P = c.params, c.equilibrium, c.lyapunov
    if eq is None or P is None or c.operator is None or c.lyapunov_rhs is None:
        return False
    L = linearization_matrix(p, eq.cov)
    if L.shape != c.operator.shape or \
            np.linalg.norm(L - c.operator) > 1e-12 * max(float(np.linalg.norm(L)), 1e-300):
        return False
    if np.linalg.norm(P - P.T) > 1e-12 * np.linalg.norm(P):
        return False
    cholesky(0.5 * (P + P.T), lower=True)
    LP = L.T @ P + P @ L
    cholesky(-LP, lower=True)
    Q = c.lyapunov_rhs
    if Q.shape != P.shape or np.linalg.norm(LP + Q) > 1e-9 * max(float(np.linalg.norm(Q)),
                                                                 1e-300):
        return False
    bounds = _local_bounds(p, eq.cov, L, P)
    if bounds is None:
        return False
    radius, rho_max = bounds
    if c.kantorovich_radius is None or \
            abs(c.kantorovich_radius - radius) > 1e-6 * radius + 1e-300:
        return False
    if c.basin is not None:
        if c.final_cov is None or c.basin > rho_max:
            return False
        if _level(P, eq.cov, c.final_cov, radius) > c.basin:
            return False
    if p.d <= EXACT_CHECK_MAX_D:
        return _exact_ok(p, eq.cov, P)
    return True


def _finite(c: Certificate) -> bool:
    """No NaN/Inf in anything the certificate reports (the basin level may be +∞: with no
    attention term the whole space is the basin)."""
    arrays = [c.lyapunov, c.lyapunov_rhs, c.operator, c.blowup_direction, c.final_cov]
    numbers = [c.rate, c.blowup_time, c.threshold, c.horizon, c.kantorovich_radius, c.bound]
    return all(a is None or np.all(np.isfinite(a)) for a in arrays) and \
        all(x is None or np.isfinite(x) for x in numbers) and \
        (c.basin is None or not np.isnan(c.basin))


def _premises_ok(c: Certificate) -> bool:
    """Re-check the premises of the theorem the certificate cites: exactly for an exact
    certificate, with the stored tolerances for a numerical one."""
    p, th = c.params, c.theorem
    if th == "zero":
        return not np.any(c.cov0) and c.regime == "collapses" and c.exact
    if th == "static":
        return c.exact and c.regime == "converges"
    if c.exact == (c.tolerance is not None) and th != "numerical":
        return False
    if th == "numerical":  # a scalar-V blow-up located by the closed form is "closed_form_root"
        return not c.exact and not (c.regime == "blows_up" and p.value_scalars is not None)
    if p.value_scalars is None:
        return False
    if th == "closed_form_root":
        if c.exact or c.regime != "blows_up":
            return False
        pr = premises(p, c.cov0)
        return not (pr.exact and pr.g_psd)  # G ⪰ 0 exactly: no blow-up
    if th not in THEOREMS:
        return False
    pr = premises(p, c.cov0, c.tolerance)
    if pr.exact != c.exact or theorem_of(pr, p.d) != (th, c.regime) or \
            not bracket_agrees(p, c.cov0, pr):
        return False
    if c.global_ and not THEOREMS[th][1]:
        return False
    if th == "psd_gramian_pd":
        eq = c.equilibrium
        return eq is not None and eq.rank == pr.n_right and bool(eq.stable)
    return True
