"""The stiff flow of a time-invariant layer from one state to the output times: Rodas4 steps
(`stepper`) with the structured solves of `linear`, error control to rtol/atol on (m, vec Σ),
steps ending on every output time, and the blow-up test of the caller at each 1e8-fold growth
of tr Σ."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...errors import SolverError
from ...state.params import Params
from . import tableau
from .linear import LinearFailure, Linearisation, StepSolver
from .stepper import SHRINK, error_norm, next_step, rodas_step

__all__: list[str] = []  # the entry point is riccati_tf.flow(..., method="implicit")

#: the Krylov solves' relative residual, KRYLOV_RTOL_SHARE · rtol (at least KRYLOV_RTOL_FLOOR)
KRYLOV_RTOL_SHARE, KRYLOV_RTOL_FLOOR = 1e-2, 1e-13
#: the first step, FIRST_STEP_SHARE of the solution's time scale ‖y‖/‖f(y)‖ (scaled norms)
FIRST_STEP_SHARE = 1e-3
#: consecutive steps whose Krylov solves fail before the run gives up (SolverError)
KRYLOV_FAILURES = 4
#: steps shorter than this share of t are refused (no progress in floating point)
MIN_STEP_SHARE = 1e3 * np.finfo(float).eps


class StepBudgetSpent(SolverError):
    """The run spent its max_steps attempted steps before t_final."""


@dataclass(frozen=True)
class ImplicitResult:
    """The states at the output times reached, and how: t (k,), mean (k, d), cov (k, d, d);
    blowup = (T_est, uncertainty, Σ at the last step) when a blow-up before t_final ended the
    run, else None; steps (attempted), stage solves and Krylov products."""

    t: np.ndarray
    mean: np.ndarray
    cov: np.ndarray
    blowup: tuple[float, float, np.ndarray] | None
    steps: int
    solves: int
    products: int


def implicit_flow(p: Params, mean0: np.ndarray, cov0: np.ndarray, t0: float,
                  t_out: np.ndarray, t_final: float, rtol: float, atol: np.ndarray,
                  max_steps: int, *, with_mean: bool, first_step: float | None = None,
                  blowup: Callable[[float, np.ndarray], tuple[float, float, np.ndarray] | None]
                  | None = None, growth: float = 1e8) -> ImplicitResult:
    """Integrate ṁ = (M + V̄) m + b, Σ̇ = MΣ + ΣMᵀ (M = A + Σ_h V_h Σ B_h) from (t0, m0, Σ0) by
    Rodas4 to t_final, returning the states at the times of t_out in [t0, t_final].

    atol: per entry of (m, vec Σ) (d + d²); with_mean False integrates Σ alone (m ≡ 0, b = 0).
    blowup(t, (m, vec Σ)) is called where tr Σ has grown past growth^k · tr Σ0 (k = 1, 2, …)
    and returns a blow-up estimate (T_est, u, Σ) or None; one with T_est + u ≤ t_final ends
    the run. SolverError when max_steps steps are spent, the step size falls below rounding of
    t, or a state leaves the floating-point range.
    """
    d = cov0.shape[0]
    k = d if with_mean else 0
    y = np.concatenate([mean0, cov0.ravel()])[d - k:]
    atol = atol[d - k:]

    def f(z: np.ndarray) -> np.ndarray:
        S = z[k:].reshape(d, d)
        M = p.M(S)
        X = M @ S
        dS = (X + X.T).ravel()
        if not with_mean:
            return dS
        m = z[:d]
        return np.concatenate([M @ m + p.c(m), dS])

    def trace(z: np.ndarray) -> float:
        return float(z[k::d + 1].sum())

    times = t_out[t_out >= t0]
    ts: list[float] = []
    ys: list[np.ndarray] = []
    if times.size and times[0] == t0:
        ts.append(t0)
        ys.append(y)
        times = times[1:]
    t, steps, solves, products = t0, 0, 0, 0
    scale0 = trace(y)
    threshold = growth * scale0 if scale0 > 0 else np.inf
    tol = max(KRYLOV_RTOL_SHARE * rtol, KRYLOV_RTOL_FLOOR)
    h = first_step or _first_step(f, y, rtol, atol, t_final - t0)
    found = None
    i = failures = 0
    with np.errstate(over="ignore", invalid="ignore"):
        while i < times.size:
            target = float(times[i])
            h_try = min(h, target - t)
            if h_try <= MIN_STEP_SHARE * max(abs(t), 1.0):
                raise SolverError(f"the implicit integration's step fell to {h_try:.3g} at "
                                  f"t = {t:.6g}: the flow is not resolved in floating point")
            steps += 1
            if steps > max_steps:
                raise StepBudgetSpent(f"the implicit (Rodas4) integration used its budget of "
                                      f"max_steps = {max_steps} steps by t = {t:.6g} of "
                                      f"t_final = {t_final:.6g}")
            lin = Linearisation(p, y[:d] if with_mean else None, y[k:].reshape(d, d))
            if not np.all(np.isfinite(lin.M)):
                raise _overflow(t)
            solver = StepSolver(lin, 1.0 / (tableau.GAMMA * h_try), tol)
            try:
                y_new, err = rodas_step(f, solver.solve, y, h_try)
            except LinearFailure:
                failures += 1
                if failures >= KRYLOV_FAILURES:
                    raise SolverError(
                        f"the implicit method's GMRES solves (Lyapunov-part preconditioner) did "
                        f"not converge in {KRYLOV_FAILURES} successive steps at t = {t:.6g}, "
                        f"d = {d}: the attention part of the Jacobian dominates there") from None
                h = SHRINK * h_try
                continue
            finally:
                solves, products = solves + solver.solves, products + solver.products
            failures = 0
            y_new = _symmetric(y_new, k, d)
            e = error_norm(err, y, y_new, rtol, atol)
            if not np.isfinite(e):
                if not np.all(np.isfinite(y_new)) and h_try > 1e-3 * (t_final - t0):
                    h = SHRINK * h_try
                    continue
                raise _overflow(t)
            if e > 1.0:
                h = next_step(h_try, e)
                continue
            t = target if h_try == target - t else t + h_try
            y = y_new
            h = max(h, next_step(h_try, e)) if h_try < h else next_step(h_try, e)
            if t == target:
                ts.append(t)
                ys.append(y)
                i += 1
            if trace(y) >= threshold and blowup is not None:
                est = blowup(t, np.concatenate([np.zeros(d), y]) if not with_mean else y)
                if est is not None and est[0] + est[1] <= t_final:
                    found = est
                    break
                threshold *= growth
    Y = np.array(ys).reshape(len(ys), y.size)
    mean = Y[:, :d] if with_mean else np.zeros((len(ys), d))
    return ImplicitResult(np.array(ts), mean, Y[:, k:].reshape(-1, d, d), found, steps, solves,
                          products)


def _symmetric(y: np.ndarray, k: int, d: int) -> np.ndarray:
    S = y[k:].reshape(d, d)
    out = y.copy()
    out[k:] = ((S + S.T) / 2).ravel()
    return out


def _first_step(f: Callable[[np.ndarray], np.ndarray], y: np.ndarray, rtol: float,
                atol: np.ndarray, span: float) -> float:
    """FIRST_STEP_SHARE of ‖y‖/‖f(y)‖ in the error norm's scale, at most the span."""
    scale = atol + rtol * np.abs(y)
    ny = float(np.sqrt(np.mean((y / scale) ** 2)))
    nf = float(np.sqrt(np.mean((f(y) / scale) ** 2)))
    if not (nf > 0 and np.isfinite(nf)) or ny == 0:
        return min(span, 1e-6)
    return min(span, FIRST_STEP_SHARE * max(ny, 1.0) / nf)


def _overflow(t: float) -> SolverError:
    return SolverError(f"the state left the floating-point range near t = {t:.6g}: the "
                       f"products of the moment equations (Σ_h V_h Σ B_h Σ) overflow float64 "
                       f"(exponential growth, not a finite-time blow-up)")
