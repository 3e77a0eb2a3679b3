"""`Certificate.check()`: the claims of a certificate re-decided from its stored layer and start.

A certificate passes when its regime and fields are consistent (an equilibrium exactly for
converges/collapses, T* exactly for blows_up, everything finite), the equilibrium's residual is
within ACCEPT_RTOL, P ≻ 0 and −(LᵀP + PL) ≻ 0 with L recomputed at Σ* (in exact rational
arithmetic for d ≤ EXACT_CHECK_MAX_D), the final state lies in the certified basin, a scalar-V T*
is bracketed by the sign change of λ_min(I + L0ᵀW(t)L0) across T*(1 ± BLOWUP_CHECK_RTOL), and the
premises of the cited theorem hold again (exactly, or with the stored tolerances).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from scipy.linalg import cholesky

from ...state.params import Params
from ..equilibria import (
    ACCEPT_RTOL,
    Equilibrium,
    linearization_matrix,
    relative_residual,
)

if TYPE_CHECKING:
    pass
from .blowup import blowup_check
from .constants import EXACT_CHECK_MAX_D, REGIMES
from .local import _level, _local_bounds, _zero_sublevel
from .premises import THEOREMS, premises, theorem_of
from .rationals import _exact_ok

if TYPE_CHECKING:
    from .certificate import Certificate

__all__: list[str] = []


def _verify(c: Certificate) -> bool:
    p = c.params
    if c.regime not in REGIMES or (c.global_ and not c.exact) or not _finite(c):
        return False
    if not isinstance(p, Params) or c.cov0.shape != (p.d, p.d):
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
    if c.lyapunov is None and c.basin is not None and not _zero_basin_ok(c):
        return False
    if c.regime == "blows_up":
        if c.blowup_time is None or not np.isfinite(c.blowup_time) or c.blowup_time <= 0:
            return False
        if p.value_scalars is not None and not blowup_check(p.A, p.G, c.cov0, c.blowup_time):
            return False
    elif c.blowup_time is not None:
        return False
    return _premises_ok(c)


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
    cholesky(-(L.T @ P + P @ L), lower=True)
    bounds = _local_bounds(p, eq.cov, L, P)
    if bounds is None:
        return False
    radius, rho_max = bounds
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
    numbers = [c.rate, c.blowup_time, c.threshold, c.horizon, c.kantorovich_radius]
    return all(a is None or np.all(np.isfinite(a)) for a in arrays) and \
        all(x is None or np.isfinite(x) for x in numbers) and \
        (c.basin is None or not np.isnan(c.basin))


def _premises_ok(c: Certificate) -> bool:
    """Re-check the premises of the theorem the certificate cites: exactly for an exact
    certificate, with the stored tolerances for a numerical one."""
    p, th = c.params, c.theorem
    if th == "zero":
        return not np.any(c.cov0) and c.regime == "collapses" and c.exact
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
    if pr.exact != c.exact or theorem_of(pr, p.d) != (th, c.regime):
        return False
    if c.global_ and not THEOREMS[th][1]:
        return False
    if th == "psd_gramian_pd":
        eq = c.equilibrium
        return eq is not None and eq.rank == pr.n_right and bool(eq.stable)
    return True
