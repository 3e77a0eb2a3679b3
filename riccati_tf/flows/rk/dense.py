"""Dense output of the Runge–Kutta flow: the state at any time of an rk trajectory, integrated
again from its last stored state (`_RkDense`).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import InvalidInputError, SolverError
from ...state.params import Gaussian, Params
from ...state.schedule import checked_schedule
from ...state.validation import psd_part
from ..dense import _continued
from .run import _rk_flow

if TYPE_CHECKING:
    from ..trajectory import Trajectory

__all__: list[str] = []


@dataclass(frozen=True, eq=False)
class _RkDense:
    """What an rk trajectory needs to give its state at any time of the flow: the layer (a
    Params or a callable t ↦ Params), the initial state, the tolerances and budget, and the end
    of the interval (t_final, or the last time reached before a blow-up). The state at t is
    integrated again, as `flow` integrates it (DOP853, Sundman's time near a pole), from the last
    stored state t_k ≤ t (or from the initial state): memory independent of the number of steps,
    at the cost of one short integration per call."""

    params: Params | Callable[[float], Params] | None
    mean0: np.ndarray
    cov0: np.ndarray
    rtol: float
    atol: float
    max_steps: int
    end: float

    def interval(self, tr: Trajectory) -> tuple[float, float, bool, str]:
        why = ("" if tr.blowup_time is None else
               f": the integration stopped at t = {self.end:.10g}, where it detected the blow-up "
               f"at T* ≈ {tr.blowup_time:.10g}")
        return 0.0, self.end, True, why

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickled with its layer when that pickles (a Params, a module-level function), else
        without it (a lambda or closure): states between the stored times are then refused."""
        params: Any = self.params
        if not isinstance(params, Params):
            try:
                pickle.dumps(params)
            except (pickle.PicklingError, AttributeError, TypeError):
                params = None
        return _RkDense, (params, self.mean0, self.cov0, self.rtol, self.atol,
                          self.max_steps, self.end)

    def states(self, tr: Trajectory, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.params is None:
            raise InvalidInputError(
                "this rk trajectory was unpickled without its layer (a Python callable that "
                "does not pickle, such as a lambda): it has states only at its stored times; "
                "pickle a Params or a module-level function to keep the dense output")

        def run(start: float, mean: np.ndarray, cov: np.ndarray,
                offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            fn = self.params
            assert fn is not None  # refused above
            if not isinstance(fn, Params):
                fn = checked_schedule("params", fn, Params, tr.d)
            shifted = fn if isinstance(fn, Params) else lambda s: fn(start + s)
            try:
                res = _rk_flow(shifted, Gaussian(mean, psd_part(cov)), offsets,
                               float(offsets[-1]), self.rtol, self.atol, self.max_steps)
            except SolverError as exc:
                raise SolverError(f"the state at t = {start + offsets[-1]:.10g}, integrated "
                                  f"again from the stored state at t = {start:.10g}: "
                                  f"{exc}") from None
            if res.t.size < offsets.size:
                raise SolverError(
                    f"integrated again from t = {start:.10g}, the flow blows up at "
                    f"T* ≈ {start + float(res.blowup_time or np.nan):.10g} before "
                    f"t = {start + offsets[res.t.size]:.10g}: that time is within the "
                    f"integration's error of the blow-up")
            return res.mean, res.cov

        return _continued(tr, self.mean0, self.cov0, t, run)
