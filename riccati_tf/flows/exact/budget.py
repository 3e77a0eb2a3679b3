"""The work budget of one exact flow: covariance steps and the mean's collocation steps."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import SolverError

__all__: list[str] = []  # DEFAULT_MAX_STEPS is documented in riccati_tf.flows.exact

#: covariance steps plus mean sub-steps one flow may take (override with flow(max_steps=...))
DEFAULT_MAX_STEPS = 100_000


class _BudgetSpent(SolverError):
    """The flow needed more than max_steps steps."""


@dataclass
class _Budget:
    """Steps left to one flow: each covariance step and each collocation step of the mean
    costs one."""

    max_steps: int
    h: float
    left: int = -1

    def __post_init__(self) -> None:
        self.left = self.max_steps

    def spend(self, n: int, t: float, *detail: object) -> None:
        if n > self.left:
            what = (f"; one step alone needs {detail[1]} mean sub-steps of length {detail[2]:.3g}"
                    f" (‖A + v̄I‖₂ = {detail[3]:.3g})" if detail else "")
            steps = (f" (covariance steps are at most {self.h:.3g} long, bounded by the growth "
                     f"and conditioning of e^{{Ah}})" if np.isfinite(self.h) else "")
            raise _BudgetSpent(
                f"the exact flow needs more than max_steps = {self.max_steps} steps (covariance "
                f"steps and mean sub-steps) to pass t = {t:.6g}{what}{steps}, and the state "
                f"does not settle at a provably stable limit first; raise max_steps or shorten "
                f"t_final")
        self.left -= n
