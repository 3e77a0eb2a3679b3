"""Scalar value matrices (V_h = v_h I): the equilibria are the covariance solutions of the
Bernoulli equation AΣ + ΣAᵀ − ΣGΣ = 0 (G = −Σ_h v_h (B_h + B_hᵀ)); the stable one is the
stabilizing solution (riccati.bernoulli), the only one with L Hurwitz, and which="all" takes
every one from the invariant-subspace enumeration (`enumeration`).
"""

from __future__ import annotations

import numpy as np

from ...errors import SolverError
from ...state.params import Params
from ..riccati import NoStabilizingSolution, bernoulli
from .budget import _Work
from .constants import ACCEPT_RTOL
from .enumeration import _scalar_all
from .evidence import is_psd, make_equilibrium, scalar_mean_hurwitz
from .newton import _accepted
from .results import Equilibrium

__all__: list[str] = []


def _scalar_stable(params: Params, axis_rtol: float,
                   work: _Work | None = None) -> list[Equilibrium]:
    """The stabilizing Bernoulli solution when it is a covariance, else none: the only
    equilibrium with L Hurwitz, since L(H) = (A − ΣG)H + H(A − ΣG)ᵀ for scalar V. Polishing
    Newton steps are charged to `work` (a new unlimited one by default)."""
    work = _Work() if work is None else work
    try:
        sol = bernoulli(params.A, params.G, axis_rtol=axis_rtol)
    except NoStabilizingSolution:
        return []
    if not (sol.psd or is_psd(sol.X)):
        return []
    method = "bernoulli-" + ("schur" if sol.method == "schur" else "slycot")
    abscissa = 2.0 * float(np.max(sol.closed_loop.real))
    eq = make_equilibrium(params, sol.X, method, abscissa=abscissa, rcond=sol.rcond,
                          rank=sol.rank,
                          mean_hurwitz=scalar_mean_hurwitz(params, sol.rank, sol.closed_loop))
    got = _accepted(params, eq, work)
    if got is None:
        raise SolverError(f"the stabilizing solution has relative residual {eq.residual:.3g} "
                          f"above the accepted {ACCEPT_RTOL:g} even after Newton polishing: the "
                          f"Bernoulli equation is too ill-conditioned here")
    return [got]


def _scalar_search(params: Params, which: str, axis_rtol: float,
                   work: _Work) -> tuple[list[Equilibrium], bool, str]:
    """Scalar V: (the equilibria, complete, reason)."""
    if which == "stable":
        found = _scalar_stable(params, axis_rtol, work)
        return found, True, (
            "scalar V: L(H) = (A − Σ*G)H + H(A − Σ*G)ᵀ is Hurwitz exactly when Σ* is the "
            "stabilizing Bernoulli solution, which is unique" + (
                "" if found else "; it does not exist or is no covariance, so no covariance "
                                 "equilibrium is stable"))
    found, left_out = _scalar_all(params, axis_rtol, work)
    if left_out:
        return found, False, (f"scalar V: every A-invariant subspace was enumerated, but "
                              f"{len(left_out)} were left out undecided: "
                              f"{'; '.join(left_out)}")
    return found, True, ("scalar V (distinct eigenvalues of A, none on iℝ): the covariance "
                         "equilibria are one to one the A-invariant subspaces on which P ≻ 0, "
                         "and every invariant subspace was enumerated")
