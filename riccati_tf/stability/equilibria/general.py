"""General V: Newton's method on F from several starts (Σ = 0, the continuation from the
scalar case, the caller's starts, the state where the flow settles, and for which="all" fixed
random starts), keeping the distinct PSD equilibria of the kind asked for.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...state.params import Params
from .budget import _BudgetSpent, _Work
from .constants import KRONECKER_MAX_D, KRYLOV_BUDGET, NEWTON_MAXITER, RANDOM_STARTS, SAME_RTOL
from .continuation import _continuation
from .evidence import _verdict, decide_stability, is_psd, make_equilibrium
from .krylov import KrylovBudgetSpent, _KrylovBudget
from .newton import _newton
from .results import Equilibrium
from .scales import magnitude
from .settling import _settled

__all__: list[str] = []


def _search_general(params: Params, which: str, starts: list[np.ndarray], axis_rtol: float,
                    work: _Work,
                    progress: Callable[[int, int], None] | None) -> tuple[list[Equilibrium],
                                                                          str | None, str]:
    """Newton's method from Σ = 0, the continuation, the given starts, the state where the flow
    settles (`_settled`) and, for which="all" (d ≤ 30), RANDOM_STARTS fixed random starts, in
    this order, each start computed when its turn comes. Returns (the distinct PSD equilibria
    of the kind asked for, None or what stopped the search, the starts tried in words);
    progress(i, n) after start i of n."""
    d = params.d
    scale = magnitude(params)
    rng = np.random.default_rng(0)
    randoms = [rng.standard_normal((d, d))
               for _ in range(RANDOM_STARTS if d <= KRONECKER_MAX_D and which == "all" else 0)]
    plan: list[tuple[str, Callable[[], np.ndarray | None]]] = [
        ("zero", lambda: np.zeros((d, d))),
        ("continuation", lambda: _continuation(params, axis_rtol, work=work)),
        *(("given start", lambda S=S: S) for S in starts),
        ("flow", lambda: _settled(params, work=work)),
        *(("random start", lambda R=R: scale * (R @ R.T) / d) for R in randoms)]
    found: list[Equilibrium] = []
    tried: list[str] = []
    for i, (how, make_start) in enumerate(plan):
        try:
            S0 = make_start()
            got = None if S0 is None else _newton(params, S0, NEWTON_MAXITER,
                                                  _KrylovBudget(KRYLOV_BUDGET, work))
        except KrylovBudgetSpent as exc:
            if how != "flow":
                return found, f"Newton from the {how} start: {exc}", ", ".join(tried)
            got = None  # the search's own start: no equilibrium from it within the budget
        except _BudgetSpent as exc:
            return found, f"{exc} at the {how} start ({i + 1} of {len(plan)})", ", ".join(tried)
        tried.append(how if S0 is not None else f"{how} (none)")
        if progress is not None:
            progress(i + 1, len(plan))
        if got is None or not is_psd(got[0]):
            continue
        cov = got[0]
        ref = max(float(np.linalg.norm(cov)), scale)
        if any(np.linalg.norm(cov - e.cov) <= SAME_RTOL * max(ref, float(np.linalg.norm(e.cov)))
               for e in found):
            continue
        abscissa, stability = decide_stability(params, 0.5 * (cov + cov.T))
        if which == "all" or _verdict(abscissa, stability):
            found.append(make_equilibrium(params, cov, f"newton[{how}]", abscissa=abscissa,
                                          stability=stability))
    return found, None, ", ".join(tried)
