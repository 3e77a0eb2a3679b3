"""Dense output of the closed-form ("exact") flow: the state at any time of an exact trajectory,
continued by `riccati_tf.flows.exact.exact_from` from its last stored state (SPEC §5).

`_continued` is shared with the Runge–Kutta dense output (`riccati_tf.flows.rk.dense`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import SolverError
from .exact import exact_from

if TYPE_CHECKING:
    from .trajectory import Trajectory

__all__: list[str] = []


def _continued(tr: Trajectory, mean0: np.ndarray, cov0: np.ndarray, t: np.ndarray,
               run: Callable[[float, np.ndarray, np.ndarray, np.ndarray],
                             tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """The states at times t (any order) of a trajectory continued from its last stored state
    t_k ≤ t (or from the initial state): run(t_k, m_k, Σ_k, offsets) gives the states at
    t_k + offsets (offsets > 0, increasing) — the dense output of both methods."""
    starts = np.concatenate([[0.0], tr.t])
    means = np.concatenate([mean0[None], tr.mean])
    covs = np.concatenate([cov0[None], tr.cov])
    which = np.searchsorted(starts, t, side="right") - 1  # the last start ≤ t
    mean, cov = np.empty((t.size, tr.d)), np.empty((t.size, tr.d, tr.d))
    for j in np.unique(which):
        sel = which == j
        offsets, back = np.unique(t[sel] - starts[j], return_inverse=True)
        m, S = np.empty((offsets.size, tr.d)), np.empty((offsets.size, tr.d, tr.d))
        m[offsets == 0], S[offsets == 0] = means[j], covs[j]
        moving = offsets > 0
        if moving.any():
            m[moving], S[moving] = run(float(starts[j]), means[j], covs[j], offsets[moving])
        mean[sel], cov[sel] = m[back], S[back]
    return mean, cov


@dataclass(frozen=True, eq=False)
class _ExactDense:
    """What the closed form needs to continue an exact trajectory from any of its states
    (`riccati_tf.flows.exact.exact_from`): A, G, v̄ = Σ_h v_h, B̄ = Σ_h v_h B_h, b, the initial
    state (a starting point at t = 0 whatever the stored times), t_final and the budget."""

    A: np.ndarray
    G: np.ndarray
    vbar: float
    Bbar: np.ndarray
    b: np.ndarray
    mean0: np.ndarray
    cov0: np.ndarray
    t_final: float
    max_steps: int

    def interval(self, tr: Trajectory) -> tuple[float, float, bool, str]:
        if tr.blowup_time is None:
            return 0.0, self.t_final, True, ""
        return 0.0, float(tr.blowup_time), False, (f": Σ(t) blows up at "
                                                   f"T* = {tr.blowup_time:.10g}")

    def states(self, tr: Trajectory, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        def run(start: float, mean: np.ndarray, cov: np.ndarray,
                offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            res = exact_from(self.A, self.G, self.vbar, self.Bbar, self.b, mean, cov, offsets,
                             max_steps=self.max_steps)
            if res.t.size < offsets.size:
                late = start + offsets[res.t.size]
                T = tr.blowup_time or start + float(res.blowup_time or 0.0)
                raise SolverError(
                    f"Σ(t) at t = {late:.12g} is within rounding of the blow-up at "
                    f"T* = {T:.12g}: the closed form is singular there in floating point")
            return res.mean, res.cov

        return _continued(tr, self.mean0, self.cov0, t, run)
