"""`Certificate.check()`: the claims of a certificate re-decided from its stored layer and start.

A certificate passes when its regime and fields are consistent (an equilibrium exactly for
converges/collapses, T* exactly for blows_up, everything finite), the equilibrium's residual is
within ACCEPT_RTOL, P ≻ 0 and −(LᵀP + PL) ≻ 0 with L recomputed at Σ* (in exact rational
arithmetic for d ≤ EXACT_CHECK_MAX_D), the final state lies in the certified basin, a scalar-V T*
is bracketed by the sign change of λ_min(I + L0ᵀW(t)L0) across T*(1 ± BLOWUP_CHECK_RTOL), and the
premises of the cited theorem hold again (exactly, or with the stored tolerances). A "bounded"
certificate is re-decided by `bounded.bounded_ok`: the attention term, the witness S and the bound.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from scipy.linalg import cholesky

from ...flows.exact import van_loan
from ...state.params import SCALAR_RTOL, Params
from ..equilibria import ACCEPT_RTOL, Equilibrium
from ..equilibria.field import relative_residual
from ..equilibria.linearization import linearization_matrix
from ..equilibria.scales import drift_spectrum, quadratic_constant
from ..riccati import AXIS_RTOL
from . import basin, bounded
from .blowup import (
    _blowup_scale,
    _gramian,
    _rank0,
    _threshold,
    blowup_check,
    cov_root,
    state_scale,
)
from .constants import (
    BALL_RTOL,
    BASIN_SAFETY,
    BLOWUP_CHECK_RTOL,
    BLOWUP_RTOL,
    CLOSE_RTOL,
    DIRECTION_RTOL,
    EXACT_CHECK_MAX_D,
    GROWTH_FACTOR,
    INTEGRATION_ATOL,
    INTEGRATION_RTOL,
    RANGE_RTOL,
    REGIMES,
    REPLAY_RTOL,
    THRESHOLD_RTOL,
)
from .integration import _Integrator
from .local import _approaches, _level, _local_bounds, _zero_sublevel
from .premises import THEOREMS, bracket_agrees, default_tolerance, premises, theorem_of
from .rationals import _exact_ok

if TYPE_CHECKING:
    from .certificate import Certificate

__all__: list[str] = []

#: the tolerances of numerical evidence and the values `certify` uses (integration_rtol is
#: INTEGRATION_RTOL, or BALL_RTOL in an attracting-ball run)
EVIDENCE_TOLERANCE = {"integration_rtol": INTEGRATION_RTOL, "integration_atol": INTEGRATION_ATOL,
                      "blowup_rtol": BLOWUP_RTOL,
                      "close_rtol": CLOSE_RTOL, "basin_safety": BASIN_SAFETY,
                      "growth_factor": GROWTH_FACTOR}


def _verify(c: Certificate, replay: bool = True) -> bool:
    """Every claim of c re-decided from (params, cov0); replay=False skips the re-integration of
    numerical evidence (`certify` checks what it has just integrated)."""
    p = c.params
    if c.regime not in REGIMES or not _finite(c):
        return False
    if not isinstance(p, Params) or c.cov0.shape != (p.d, p.d):
        return False
    if c.theorem == basin.THEOREM or c.path_error is not None:
        return basin.basin_ok(c, replay)
    if not _tolerance_ok(c) or c.global_ != _global(c):
        return False
    if c.regime == "bounded" or c.theorem == bounded.THEOREM or c.bound is not None:
        return c.regime == "bounded" and bounded.bounded_ok(c)
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


def _global(c: Certificate) -> bool:
    """global_ as the theorem says: exact, and the theorem holds for every Σ0 ≻ 0 (a Lyapunov
    witness S bounds Σ(t) from every Σ0)."""
    return bool(c.exact and ((c.theorem in THEOREMS and THEOREMS[c.theorem][1])
                             or c.theorem == bounded.THEOREM))


def _tolerance_ok(c: Certificate) -> bool:
    """tolerance None exactly for an exact certificate (and for an "undetermined" one that used
    none); otherwise a dict of known names with the values `certify` uses: every premise
    tolerance of `default_tolerance` for a scalar-V theorem, every integration tolerance of the
    numerical evidence, blowup_check_rtol for a numerical blow-up."""
    tol = c.tolerance
    if c.exact or tol is None:
        return c.exact == (tol is None) or (c.regime == "undetermined" and tol is None)
    if not isinstance(tol, dict) or not tol:
        return False
    known = {**default_tolerance(c.params), **EVIDENCE_TOLERANCE, **bounded.TOLERANCE,
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
    if c.params.value_scalars is not None and c.theorem in THEOREMS:
        need |= set(default_tolerance(c.params))
    if c.theorem in ("numerical", "closed_form_root") and c.regime != "undetermined":
        need |= set(EVIDENCE_TOLERANCE)
    if c.regime == "blows_up" and c.theorem in ("numerical", "closed_form_root"):
        need.add("blowup_check_rtol")
    if c.theorem == bounded.THEOREM:
        need |= set(bounded.TOLERANCE)
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
    """Σ integrated again from Σ0 to `until` as certify integrates it (`integration._Integrator`:
    closed form for scalar V, Runge–Kutta at the stored integration tolerances otherwise, in
    the units σ of `blowup.state_scale`, segments projected on the PSD cone), without its stop
    on the size of tr Σ: (state near until/2, state at until, (T*, direction) or None); None
    when the integration fails."""
    p = c.params
    tol = c.tolerance or {}
    run = _Integrator(p, np.asarray(c.cov0, dtype=float),
                      "exact" if p.value_scalars is not None else "rk",
                      rtol=tol.get("integration_rtol", INTEGRATION_RTOL),
                      atol=tol.get("integration_atol", INTEGRATION_ATOL), sigma=sigma,
                      bounded=False, blowup_rtol=tol.get("blowup_rtol", BLOWUP_RTOL)
                      ).advance(until)
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
    by growth_factor at the stated rate (relative 1e-3). The static flow: Σ* = Σ0."""
    p = c.params
    if c.theorem == "static":
        return (c.regime == "converges" and not np.any(p.A) and quadratic_constant(p) == 0
                and c.equilibrium is not None and np.array_equal(c.equilibrium.cov, c.cov0)
                and c.horizon is None and c.final_cov is None)
    if c.regime == "undetermined":  # no claim to re-decide
        return True
    if c.horizon is None or c.final_cov is None:  # no integration: a theorem, or a blow-up
        return c.horizon is None and c.final_cov is None and \
            (c.theorem != "numerical" or c.regime == "blows_up")
    if not c.horizon > 0:
        return False
    got = _replay(c, c.horizon, 1.0 if p.value_scalars is not None else state_scale(p, c.cov0))
    if got is None or got[2] is not None:
        return False
    mid, final, _ = got
    scale = max(float(np.linalg.norm(final)), float(np.linalg.norm(c.final_cov)),
                1e-300)
    if np.linalg.norm(final - c.final_cov) > REPLAY_RTOL * scale:
        return False
    tol = c.tolerance or {}
    eq = c.equilibrium
    if c.regime == "grows":
        tr0, trm, trf = np.trace(c.cov0), np.trace(mid), np.trace(final)
        factor = tol.get("growth_factor", GROWTH_FACTOR)
        rate = float(np.log(trf / trm) / (c.horizon / 2))
        return bool(trf >= factor * max(tr0, _growth_scale(p, c.cov0))
                    and trf >= factor ** 0.5 * trm
                    and abs(rate - float(c.rate)) <= 1e-3 * abs(rate))  # type: ignore[arg-type]
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


def _growth_scale(p: Params, cov0: np.ndarray) -> float:
    """The size past which growth is evidence of "grows" (as `numerical._classify_final`): 0
    when G ⪰ 0 is decided exactly (no blow-up), else the blow-up scale `_blowup_scale`."""
    if p.value_scalars is not None:
        pr = premises(p, cov0)
        if pr.exact and pr.g_psd:
            return 0.0
    return _blowup_scale(p)


def _equilibrium_ok(p: Params, eq: Equilibrium) -> bool:
    cov = eq.cov
    if cov.shape != (p.d, p.d) or not np.all(np.isfinite(cov)):
        return False
    if np.linalg.norm(cov - cov.T) > 1e-12 * max(float(np.linalg.norm(cov)), 1e-300):
        return False
    res = relative_residual(p, cov)
    return res <= ACCEPT_RTOL and res <= 2 * eq.residual + 1e-15


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
    if th == "numerical":
        return not c.exact
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
