"""One entry point for trajectories of the Gaussian moment system (SPEC §2, §5).

`flow` composes the model (constant or time-varying `Params`), a method (`"exact"` closed form
for scalar value matrices, `"rk"` Runge–Kutta on the full system) and the blow-up event;
`layers` applies exact discrete residual layers x⁺ = x + τX(x).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.integrate import solve_ivp

from .errors import InvalidInputError, SolverError
from .exact import exact_flow
from .model import Gaussian, Params, check_dims
from .moments import moment_arrays
from .validation import as_count, as_time, as_time_grid

#: the rk blow-up event fires when tr Σ exceeds this factor times its starting scale
BLOWUP_GROWTH = 1e8
#: ... and is accepted as a finite-time blow-up when the quadratic (attention) terms make up at
#: least this share of d(tr Σ)/dt; the time is then t_event + tr Σ / (d tr Σ / dt).
BLOWUP_QUADRATIC_SHARE = 0.99
DEFAULT_OUTPUTS = 101


@dataclass(frozen=True, eq=False)
class Trajectory:
    """States of N(m(t), Σ(t)) at times t (all reached before any blow-up).

    t (k,), mean (k, d), cov (k, d, d); status "completed" or "blowup"; blowup_time T* and the
    unit direction along which Σ(t) diverges when status == "blowup"; method "exact", "rk" or
    "layers"; rtol/atol used (None for methods exact up to rounding).
    """

    t: np.ndarray
    mean: np.ndarray
    cov: np.ndarray
    status: str
    blowup_time: float | None
    method: str
    blowup_direction: np.ndarray | None = None
    rtol: float | None = None
    atol: float | None = None

    def __len__(self) -> int:
        return self.t.size

    def gaussian(self, i: int = -1) -> Gaussian:
        """The state at index i as a validated Gaussian."""
        return Gaussian(self.mean[i], self.cov[i])


def _default_grid(t_final: float, t_eval) -> np.ndarray:
    if t_eval is None:
        return np.linspace(0.0, t_final, DEFAULT_OUTPUTS)
    return as_time_grid("t_eval", t_eval, t_final)


def _tolerance(name: str, value) -> float:
    value = as_time(name, value)
    if value >= 1:
        raise InvalidInputError(f"{name} must be < 1, got {value}")
    return value


def flow(params: Params | Callable[[float], Params], gaussian: Gaussian, t_final: float, *,
         method: str = "auto", t_eval=None, rtol: float = 1e-10,
         atol: float = 1e-12) -> Trajectory:
    """Solve ṁ = (A + V)m + VΣBm + b, Σ̇ = AΣ + ΣAᵀ + VΣBΣ + ΣBᵀΣVᵀ on [0, t_final].

    params: a `Params` (time-invariant) or a callable t ↦ Params (time-varying; method "rk").
    method: "exact" (closed form Σ(t) = e^{At}Σ0(I + W(t)Σ0)⁻¹e^{Aᵀt} of SPEC §5, scalar value
    matrices only; blow-up time = first root of det(I + W(t)Σ0), located by Brent's method),
    "rk" (DOP853 on the full system with a blow-up event; rtol/atol apply), or "auto" (exact when
    it applies). t_eval: output times in [0, t_final] (default 101 equally spaced).
    A finite-time blow-up ends the trajectory: status "blowup", states before T* only.
    """
    t_final = as_time("t_final", t_final)
    rtol, atol = _tolerance("rtol", rtol), _tolerance("atol", atol)
    t_out = _default_grid(t_final, t_eval)
    if method not in ("auto", "exact", "rk"):
        raise InvalidInputError(f"method must be 'auto', 'exact' or 'rk', got {method!r}")
    if isinstance(params, Params):
        check_dims(params, gaussian)
        params_fn = None
        scalar = params.value_scalars is not None
    elif callable(params):
        check_dims(params(0.0), gaussian)
        params_fn, scalar = params, False
        if method == "exact":
            raise InvalidInputError("method 'exact' needs time-invariant Params; time-varying "
                                    "controls are integrated with method 'rk'")
    else:
        raise InvalidInputError(f"params must be Params or a callable t -> Params, "
                                f"got {type(params).__name__}")
    if method == "exact" and not scalar:
        raise InvalidInputError("method 'exact' needs scalar value matrices V_h = v_h I "
                                "(the Riccati case of SPEC §5); use method 'rk'")
    if method == "exact" or (method == "auto" and scalar):
        vs = params.value_scalars
        Bbar = sum(v * B for v, (_, B) in zip(vs, params.heads, strict=True))
        res = exact_flow(params.A, params.G, sum(vs), Bbar, params.b, gaussian.mean,
                         gaussian.cov, t_out, t_final)
        return Trajectory(res.t, res.mean, res.cov, "completed" if res.blowup_time is None
                          else "blowup", res.blowup_time, "exact", res.blowup_direction)
    return _rk_flow(params_fn or (lambda _t: params), gaussian, t_out, t_final, rtol, atol)


def _rk_flow(params_fn, gaussian: Gaussian, t_out, t_final, rtol, atol) -> Trajectory:
    d = gaussian.d

    def rhs(t, y):
        dm, dS = moment_arrays(params_fn(t), y[:d], y[d:].reshape(d, d))
        return np.concatenate([dm, dS.ravel()])

    y = np.concatenate([gaussian.mean, gaussian.cov.ravel()])
    scale = np.trace(gaussian.cov)
    threshold = BLOWUP_GROWTH * scale
    t0, ts, ys = 0.0, [], []
    blowup_time = direction = None
    while True:
        log_threshold = np.log(threshold) if scale > 0 else 0.0  # no event when Σ0 = 0

        def event(_t, y, log_thr=log_threshold):
            return np.log(max(np.trace(y[d:].reshape(d, d)), np.finfo(float).tiny)) - log_thr

        event.terminal, event.direction = True, 1
        grid = t_out[(t_out > t0) | ((t_out == 0) & (t0 == 0))]
        with np.errstate(over="ignore", invalid="ignore"):  # overflow is detected below
            sol = solve_ivp(rhs, (t0, t_final), y, method="DOP853", t_eval=grid, rtol=rtol,
                            atol=atol, events=event if scale > 0 else None)
        Y = np.asarray(sol.y, dtype=float).reshape(y.size, -1)
        if sol.status == -1 or not np.all(np.isfinite(Y)):
            reached = sol.t[-1] if sol.t.size else t0
            raise SolverError(f"the Runge–Kutta integration failed after t = {reached:.6g}: "
                              f"{sol.message}")
        ts.append(sol.t), ys.append(Y.T)
        if sol.status == 0:
            break
        t0, y = sol.t_events[0][0], sol.y_events[0][0]
        p = params_fn(t0)
        cov = y[d:].reshape(d, d)
        _, dS = moment_arrays(p, y[:d], cov)
        n, dn = np.trace(cov), np.trace(dS)
        dn_quad = dn - 2 * np.trace(p.A @ cov)
        if dn > 0 and dn_quad >= BLOWUP_QUADRATIC_SHARE * dn:
            blowup_time = t0 + n / dn
            _, vec = np.linalg.eigh(0.5 * (cov + cov.T))
            direction = vec[:, -1]
            break
        threshold *= BLOWUP_GROWTH
    t = np.concatenate(ts)
    Y = np.concatenate(ys).reshape(-1, d + d * d)
    cov = Y[:, d:].reshape(-1, d, d)
    cov = 0.5 * (cov + np.swapaxes(cov, 1, 2))
    return Trajectory(t, Y[:, :d], cov, "completed" if blowup_time is None else "blowup",
                      blowup_time, "rk", direction, rtol, atol)


def layers(params: Params | Sequence[Params], gaussian: Gaussian, n_layers: int,
           tau: float) -> Trajectory:
    """Exact discrete residual layers x⁺ = x + τ X(x) acting on N(m, Σ) (SPEC §2):

        m⁺ = (I + τM) m + τc,   Σ⁺ = (I + τM) Σ (I + τM)ᵀ,
        M = A + Σ_h V_h Σ B_h,   c = b + Σ_h V_h m.

    params: one Params for every layer, or a sequence of n_layers Params. Returns one state per
    layer (times 0, τ, ..., n_layers τ); status "blowup" if the state overflows.
    """
    n_layers = as_count("n_layers", n_layers)
    tau = as_time("tau", tau)
    if isinstance(params, Params):
        plist = [params] * n_layers
    else:
        plist = list(params) if isinstance(params, Sequence) else None
        if plist is None or len(plist) != n_layers:
            raise InvalidInputError("params must be a Params or a sequence of n_layers = "
                                    f"{n_layers} Params")
    for p in plist:
        check_dims(p, gaussian)
    d = gaussian.d
    m, S = gaussian.mean.copy(), gaussian.cov.copy()
    means, covs = [m], [S]
    status, t_blow = "completed", None
    with np.errstate(over="ignore", invalid="ignore"):
        for k, p in enumerate(plist):
            F = np.eye(d) + tau * p.M(S)
            m = F @ m + tau * p.c(m)
            S = F @ S @ F.T
            S = 0.5 * (S + S.T)
            if not (np.all(np.isfinite(S)) and np.all(np.isfinite(m))):
                status, t_blow = "blowup", (k + 1) * tau
                break
            means.append(m), covs.append(S)
    t = tau * np.arange(len(means))
    return Trajectory(t, np.array(means), np.array(covs), status, t_blow, "layers")
