"""Hostile cases for the numerical flows (area "numerics"): `flow` (exact and rk) and `layers`
over very long horizons, just before and after a blow-up, with tiny variances along unstable
directions, with G indefinite only at the level of rounding, at huge and tiny scales, with stiff
spectra, with time-varying callables that misbehave, and with work budgets.

Every result is checked against a reference written here, independent of the package:
- closed forms in mpmath: Σ(t) = e^{At}Σ0(I + W(t)Σ0)⁻¹e^{Aᵀt} from the block exponential of
  [[−Aᵀ, G], [0, A]]t, at enough digits for the growth e^{2ρ(A)t}; for decoupled (diagonal) data
  the scalar Riccati σ(t) = σ0e^{2at}/(1 + gσ0(e^{2at} − 1)/(2a)) with blow-up at
  T* = ln(1 − 2a/(gσ0))/(2a), and the mean m_i(t) = m_i0 e^{(a_i+v)t} den_i(t)^{−1/2} (b = 0,
  V = vI, B diagonal: ∫σ_i = ln(den_i)/g_i);
- limits (SPEC §5): Σ* = P*⁻¹ with AᵀP* + P*A = G solved in mpmath, Σ → 0 for Hurwitz A and
  G ⪰ 0, m* = −K∞⁻¹b for the mean;
- scipy's DOP853 (rtol 1e-12) on the moment equations written here, the covariance carried as a
  factor Σ = LLᵀ, L̇ = (A + Σ_h V_hΣB_h)L, so that tiny variances keep their relative accuracy;
- the first root of det(I + W(t)Σ0) in mpmath on the floats as given, for G whose sign is
  decided by rounding.
A clean SolverError is accepted ("either") where the honest answer may be "cannot vouch": t_final
within rounding of T*, rounding-level G in a rotated basis, cancellation in the mean's drift.
"""

from __future__ import annotations

import mpmath as mp
import numpy as np
from scipy.integrate import solve_ivp

from riccati_tf import Gaussian, Params, flow, layers
from riccati_tf.errors import InvalidInputError, SolverError

from . import case, cases_of

AREA = "numerics"
I2 = np.eye(2)


# ---------------------------------------------------------------- references


def rel_err(got, ref) -> float:
    ref = np.asarray(ref, dtype=float)
    scale = np.abs(ref).max()
    diff = np.abs(np.asarray(got, dtype=float) - ref).max()
    return float(diff / scale) if scale > 0 else float(diff)


def close(got, ref, rtol, what) -> None:
    err = rel_err(got, ref)
    assert err <= rtol, f"{what}: relative error {err:.3g} > {rtol:g}"


def finite_psd(tr) -> None:
    assert np.all(np.isfinite(tr.cov)) and np.all(np.isfinite(tr.mean)), "non-finite state"
    for S in tr.cov:
        assert np.array_equal(S, S.T), "Σ not symmetric"
        e = np.linalg.eigvalsh(S)
        assert e[0] >= -1e-9 * max(e[-1], 0.0), f"Σ not PSD: λ_min = {e[0]:.3g}"


def _mp(M):
    return mp.matrix(np.asarray(M, dtype=float).tolist())


def _np(M):
    return np.array([[float(M[i, j]) for j in range(M.cols)] for i in range(M.rows)])


def g_of(p: Params) -> np.ndarray:
    """G = −Σ_h v_h (B_h + B_hᵀ) from the value matrices' (scalar) diagonals, in floats."""
    return -sum(V[0, 0] * (B + B.T) for V, B in p.heads)


def mp_van_loan(A, G, t):
    """(E, W) = (e^{At}, W(t) = e^{Aᵀt}F12) in mpmath at the working precision, from
    F = expm([[−Aᵀ, G], [0, A]] t)."""
    d = A.shape[0]
    blk = mp.matrix(2 * d, 2 * d)
    for i in range(d):
        for j in range(d):
            blk[i, j] = -A[j, i]
            blk[i, d + j] = G[i, j]
            blk[d + i, d + j] = A[i, j]
    F = mp.expm(blk * mp.mpf(t))
    return F[d:, d:], F[d:, d:].T * F[:d, d:]


def mp_cov(A, G, S0, t, extra_dps=30):
    """Σ(t) = e^{At}Σ0(I + W(t)Σ0)⁻¹e^{Aᵀt}, W(t) = e^{Aᵀt}F12 (F = expm([[−Aᵀ, G], [0, A]]t));
    S0 may be an mpmath matrix (exact data that floats cannot hold)."""
    A, G = (np.asarray(X, dtype=float) for X in (A, G))
    d = A.shape[0]
    rho = float(np.abs(np.linalg.eigvals(A)).max()) if d else 0.0
    with mp.workdps(extra_dps + int(2.2 * rho * t / 2.3) + 10):
        E, W = mp_van_loan(A, G, t)
        S = S0 if isinstance(S0, mp.matrix) else _mp(S0)
        out = E * S * mp.inverse(mp.eye(d) + W * S) * E.T
        return _np(out)


def mp_first_root(A, G, S0, T, n=400):
    """First t in (0, T] with det(I + W(t)Σ0) = 0 for the floats as given (mpmath, W by the
    semigroup W(t + h) = W(t) + E(t)ᵀW(h)E(t) on a grid, then bisection), or None."""
    A, G, S0 = (np.asarray(X, dtype=float) for X in (A, G, S0))
    d = A.shape[0]
    rho = float(np.abs(np.linalg.eigvals(A)).max())
    h = T / n
    with mp.workdps(40 + int(2.2 * rho * T / 2.3)):
        S = _mp(S0)

        def f(W):
            return mp.det(mp.eye(d) + W * S)

        Eh, Wh = mp_van_loan(A, G, h)
        E, W = mp.eye(d), mp.zeros(d, d)
        for k in range(1, n + 1):
            W = W + E.T * Wh * E
            E = Eh * E
            if f(W) <= 0:
                lo, hi = mp.mpf(h) * (k - 1), mp.mpf(h) * k
                for _ in range(80):
                    mid = (lo + hi) / 2
                    if f(mp_van_loan(A, G, mid)[1]) > 0:
                        lo = mid
                    else:
                        hi = mid
                return float((lo + hi) / 2)
    return None


def mp_sigma(a, g, s0, t):
    """σ(t) for σ̇ = 2aσ − gσ² (a = 0: σ0/(1 + gσ0t)), at 50 digits."""
    with mp.workdps(50):
        a, g, s0, t = (mp.mpf(x) for x in (a, g, s0, t))
        den = 1 + g * s0 * t if a == 0 else 1 + g * s0 * mp.expm1(2 * a * t) / (2 * a)
        return float(s0 * mp.exp(2 * a * t) / den)


def mp_tstar(a, g, s0):
    """Blow-up time of σ̇ = 2aσ − gσ² from σ0 > 0, or None."""
    with mp.workdps(50):
        a, g, s0 = (mp.mpf(x) for x in (a, g, s0))
        if g >= 0 or s0 == 0:
            return None
        if a == 0:
            return float(1 / (-g * s0))
        arg = 1 - 2 * a / (g * s0)  # e^{2aT*}: > 1 for a > 0, in (0, 1) for a < 0
        return float(mp.log(arg) / (2 * a)) if arg > 0 and mp.log(arg) / a > 0 else None


def mp_diag_mean(a, g, v, s0, m0, t):
    """m(t) = m0 e^{(a+v)t} den(t)^{−1/2} for decoupled coordinates (b = 0, g = −2vβ)."""
    with mp.workdps(50):
        a, g, v, s0, m0, t = (mp.mpf(x) for x in (a, g, v, s0, m0, t))
        den = 1 + g * s0 * t if a == 0 else 1 + g * s0 * mp.expm1(2 * a * t) / (2 * a)
        power = mp.mpf(-0.5) if g != 0 else mp.mpf(0)
        return float(m0 * mp.exp((a + v) * t) * den ** power)


def mp_equilibrium(A, G):
    """Σ* = P*⁻¹ with AᵀP* + P*A = G (A anti-stable, G ≻ 0), as a d² linear system at 40 digits."""
    A, G = np.asarray(A, dtype=float), np.asarray(G, dtype=float)
    d = A.shape[0]
    with mp.workdps(40):
        M = mp.zeros(d * d, d * d)
        for i in range(d):
            for j in range(d):
                for k in range(d):
                    M[i * d + j, k * d + j] += A[k, i]
                    M[i * d + j, i * d + k] += A[k, j]
        p = mp.lu_solve(M, mp.matrix([G[i, j] for i in range(d) for j in range(d)]))
        P = mp.matrix(d, d)
        for i in range(d):
            for j in range(d):
                P[i, j] = p[i * d + j]
        return _np(mp.inverse(P))


def ode_ref(params, g: Gaussian, t_eval, t_final=None):
    """DOP853 (rtol 1e-12) on ṁ = (A + Σ V_h)m + Σ V_hΣB_hm + b, L̇ = (A + Σ V_hΣB_h)L, Σ = LLᵀ,
    for a Params or a callable t ↦ Params. Returns (means, covariances) at t_eval."""
    fn = params if callable(params) and not isinstance(params, Params) else (lambda _t: params)
    d = g.d
    e, U = np.linalg.eigh(g.cov)
    keep = e > 0
    L0 = U[:, keep] * np.sqrt(e[keep])
    r = L0.shape[1]

    def rhs(t, y):
        p = fn(t)
        m, L = y[:d], y[d:].reshape(d, r)
        S = L @ L.T
        M = p.A + sum(V @ S @ B for V, B in p.heads)
        dm = p.A @ m + p.b + sum(V @ m + V @ S @ B @ m for V, B in p.heads)
        return np.concatenate([dm, (M @ L).ravel()])

    y0 = np.concatenate([g.mean, L0.ravel()])
    scale = np.where(y0 != 0, np.abs(y0), max(np.abs(y0).max(), 1e-300))
    t_eval = np.asarray(t_eval, dtype=float)
    sol = solve_ivp(rhs, (0.0, t_final or t_eval[-1]), y0, method="DOP853", t_eval=t_eval,
                    rtol=1e-12, atol=1e-14 * scale, max_step=np.inf)
    assert sol.status == 0, f"the reference integration failed: {sol.message}"
    Y = sol.y.T
    Ls = Y[:, d:].reshape(-1, d, r)
    return Y[:, :d], Ls @ np.swapaxes(Ls, 1, 2)


def scalar_v(A, G, v=-1.0, b=None) -> Params:
    """Params with V = vI and B = −G/(2v), so that G = −v(B + Bᵀ) (exactly when G/(2v) is)."""
    A, G = np.asarray(A, dtype=float), np.asarray(G, dtype=float)
    d = A.shape[0]
    return Params(A=A, B=-G / (2 * v), V=v * np.eye(d), b=b)


def rotation(d: int, seed: int) -> np.ndarray:
    Q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((d, d)))
    return Q


def expect_clean(fn, error=InvalidInputError, *fragments) -> None:
    """fn() must raise `error` with every fragment in its message (then re-raised: clean)."""
    try:
        fn()
    except error as exc:
        text = str(exc)
        for frag in fragments:
            assert frag in text, f"the message {text!r} does not name {frag!r}"
        raise
    raise AssertionError("accepted")


# ---------------------------------------------------------------- the reported examples

S0_REPORT = np.array([[1.0, 0.3], [0.3, 0.5]])
#: the exact flow's work budget (max_steps: covariance and mean steps) where it settles over a
#: long horizon: a bound on the work that does not depend on the machine, unlike a time
SETTLE_STEPS = 400


@case(AREA, "result")
def report_exact_one_output_interval_800():
    """A = 0.5I, G = 2I: one output interval of length 800 (e^{400} in one Van Loan step was
    NaN with status "completed"). Σ → Σ* = 0.5I."""
    p = Params(A=0.5 * I2, B=I2, V=-I2)
    tr = flow(p, Gaussian([0, 0], S0_REPORT), 800, t_eval=[0, 800])
    assert tr.status == "completed" and tr.method == "exact"
    close(tr.cov[-1], mp_cov(p.A, g_of(p), S0_REPORT, 800.0), 1e-12, "Σ(800)")
    close(tr.cov[-1], 0.5 * I2, 1e-12, "Σ(800) = Σ*")


@case(AREA, "result")
def report_exact_long_interval_with_mean():
    """The same with a non-zero mean (was a raw LinAlgError): m(t) = m0 e^{(a+v)t} den^{−1/2} in
    the eigenbasis of Σ0, and 0 (underflow) at t = 800."""
    p = Params(A=0.5 * I2, B=I2, V=-I2)
    m0 = np.array([1.0, -0.5])
    tr = flow(p, Gaussian(m0, S0_REPORT), 800, t_eval=[0, 10, 40, 800])
    lam, Q = np.linalg.eigh(S0_REPORT)
    for k, t in enumerate(tr.t):
        c0 = Q.T @ m0
        ref = Q @ np.array([mp_diag_mean(0.5, 2.0, -1.0, lam[i], c0[i], t) for i in range(2)])
        assert np.abs(tr.mean[k] - ref).max() <= 1e-9 * max(np.abs(ref).max(), 1e-300) + 1e-300, \
            f"m({t:g}) = {tr.mean[k]}, reference {ref}"
    close(tr.cov[-1], 0.5 * I2, 1e-12, "Σ(800)")


def stable_layer():
    A = np.array([[-0.5, 0.3], [-0.2, -0.8]])
    return Params(A=A, B=np.array([[1.0, 0.2], [0.2, 0.5]]), V=-I2, b=[0.3, -0.1])


@case(AREA, "result", timeout=20)
def report_exact_stable_layer_t_1e12():
    """A Hurwitz, G ≻ 0: Σ → 0 and m → m* = −(A − I)⁻¹b; the exact flow must finish quickly
    (it settles: the collapse closed form)."""
    p = stable_layer()
    # quickly: within SETTLE_STEPS steps (it takes 27), a count of work, not a time
    tr = flow(p, Gaussian([1.0, 2.0], S0_REPORT), 1e12, method="exact", max_steps=SETTLE_STEPS)
    assert tr.status == "completed" and tr.t[-1] == 1e12
    assert np.abs(tr.cov[-1]).max() == 0.0, "Σ(1e12) must be 0 (e^{−1e12} underflows)"
    close(tr.mean[-1], -np.linalg.solve(p.A - I2, p.b), 1e-13, "m(1e12)")
    tr = flow(p, Gaussian([1.0, 2.0], S0_REPORT), 1e12, method="exact",
              t_eval=[0.0, 5.0, 30.0, 1e12])
    m_ref, S_ref = ode_ref(p, Gaussian([1.0, 2.0], S0_REPORT), [0.0, 5.0, 30.0])
    close(tr.mean[1:3], m_ref[1:], 1e-9, "m(5), m(30)")
    close(tr.cov[1], S_ref[1], 1e-9, "Σ(5)")


@case(AREA, "either", timeout=20)
def report_rk_stable_layer_t_1e12():
    """rk must not run for hours: a work budget (refused up front here)."""
    p = stable_layer()
    tr = flow(p, Gaussian([1.0, 2.0], S0_REPORT), 1e12, method="rk")
    close(tr.mean[-1], -np.linalg.solve(p.A - I2, p.b), 1e-8, "m(1e12)")


def near_blowup(method, gap, a=0.5, v=1.0, b=1.0, s0=0.3):
    """σ̇ = 2aσ + 2vbσ² at t_final = T* + gap·T*: status and end state against mpmath."""
    g = -2 * v * b
    T = mp_tstar(a, g, s0)
    t_final = T * (1 + gap)
    tr = flow(Params(A=a, B=b, V=v), Gaussian([1.0], [[s0]]), t_final, method=method,
              t_eval=[0.0, t_final])
    finite_psd(tr)
    if t_final < T:
        assert tr.status == "completed", f"{tr.status} at T* {gap:+g}·T* (T* = {T!r})"
        assert tr.t[-1] == t_final, "the requested end state was dropped"
        close(tr.cov[-1, 0, 0], mp_sigma(a, g, s0, t_final), 1e-6, "Σ(t_final)")
    else:
        assert tr.status == "blowup", f"{tr.status} at T* {gap:+g}·T*"
        assert tr.blowup_time <= t_final, "blow-up reported after t_final"
        assert abs(tr.blowup_time - T) <= 1e-7 * T, f"T* = {tr.blowup_time!r}, reference {T!r}"
        assert np.all(tr.t < tr.blowup_time)


def t_final_just_below_blowup(method):
    """t_final = T* − 1e-9 (rk was "blowup" at a time after t_final, end state dropped): the end
    state, or a clean refusal when it cannot be vouched for."""
    a, v, b, s0 = 0.5, 1.0, 1.0, 0.3
    T = mp_tstar(a, -2 * v * b, s0)
    tr = flow(Params(A=a, B=b, V=v), Gaussian([1.0], [[s0]]), T - 1e-9, method=method)
    assert tr.status == "completed" and tr.t[-1] == T - 1e-9
    close(tr.cov[-1, 0, 0], mp_sigma(a, -2 * v * b, s0, T - 1e-9), 1e-6, "Σ(t_final)")


cases_of(AREA, "either", {"report_rk_t_final_just_below_blowup": "rk",
                          "report_exact_t_final_just_below_blowup": "exact"},
         t_final_just_below_blowup)


def tiny_report(method):
    p = Params(A=np.diag([-1.0, 5.0]), B=I2, V=I2)
    tr = flow(p, Gaussian([0, 0], np.diag([1.0, 1e-16])), 5.0, method=method,
              t_eval=[0.0, 3.0, 5.0])
    T = mp_tstar(5.0, -2.0, 1e-16)
    assert tr.status == "blowup", f"{tr.status}: the 1e-16 variance was dropped"
    assert abs(tr.blowup_time - T) <= (1e-10 if method == "exact" else 1e-6) * T, \
        f"T* = {tr.blowup_time!r}, reference {T!r}"
    assert abs(abs(tr.blowup_direction[1]) - 1) < 1e-8
    close(tr.cov[1, 1, 1], mp_sigma(5.0, -2.0, 1e-16, 3.0), 1e-6, "Σ22(3)")
    close(tr.cov[1, 0, 0], mp_sigma(-1.0, -2.0, 1.0, 3.0), 1e-8, "Σ11(3)")


@case(AREA, "result")
def report_exact_tiny_variance_along_unstable_direction():
    """Σ0 = diag(1, 1e-16), A = diag(−1, 5), G = −2I: T* = ln(5e16)/10 = 3.845 (Σ22(5) was 0)."""
    tiny_report("exact")


@case(AREA, "either")
def report_rk_tiny_variance_along_unstable_direction():
    tiny_report("rk")


def indefinite_report(method, eps=1e-13):
    p = Params(A=I2, B=np.diag([1.0, -eps]), V=-0.5 * I2)
    tr = flow(p, Gaussian([0, 0], I2), 20.0, method=method)
    T = mp_tstar(1.0, -eps, 1.0)
    assert abs(T - 0.5 * np.log1p(2 / eps)) < 1e-12 * T
    assert tr.status == "blowup", f"{tr.status}: G = diag(1, −{eps:g}) blows up at {T:.10g}"
    assert abs(tr.blowup_time - T) <= (1e-10 if method == "exact" else 1e-6) * T, \
        f"T* = {tr.blowup_time!r}, reference {T!r}"


@case(AREA, "result")
def report_exact_g_indefinite_1e13():
    indefinite_report("exact")


@case(AREA, "either", timeout=30)
def report_rk_g_indefinite_1e13():
    indefinite_report("rk")


def iso_reference(a, beta, v, m0, S0, t):
    """A = aI, B = βI, V = vI: Σ(t) and m(t) in the eigenbasis of Σ0 (mpmath)."""
    g = -2 * v * beta
    lam, Q = np.linalg.eigh(S0)
    c0 = Q.T @ np.asarray(m0, dtype=float)
    sig = np.array([mp_sigma(a, g, lam[i], t) for i in range(len(lam))])
    mean = np.array([mp_diag_mean(a, g, v, lam[i], c0[i], t) for i in range(len(lam))])
    return Q @ np.diag(sig) @ Q.T, Q @ mean


def iso_case(spec):
    """A = aI, B = βI, V = vI at extreme scales: any answer must match the closed form."""
    a, beta, v, scale0, m0, t, method = spec
    S0 = scale0 * S0_REPORT
    tr = flow(Params(A=a * I2, B=beta * I2, V=v * I2), Gaussian(m0, S0), t, method=method,
              t_eval=[0.0, t])
    finite_psd(tr)
    S_ref, m_ref = iso_reference(a, beta, v, m0, S0, t)
    assert tr.status == "completed"
    close(tr.cov[-1], S_ref, 1e-9, "Σ(t)")
    if np.any(m_ref):
        close(tr.mean[-1], m_ref, 1e-6, "m(t)")


cases_of(AREA, "either", {
    "report_huge_A_1e150_with_mean_exact": (1e150, 1.0, -1.0, 1.0, [1.0, 0.0], 1.0, "exact"),
    "report_huge_A_1e150_with_mean_rk": (1e150, 1.0, -1.0, 1.0, [1.0, 0.0], 1.0, "rk"),
    "huge_A_1e150_centred_exact": (1e150, 1.0, -1.0, 1.0, [0.0, 0.0], 1.0, "exact"),
    "huge_A_1e100_centred_exact": (1e100, 1.0, -1.0, 1.0, [0.0, 0.0], 1e-90, "exact"),
    "huge_hurwitz_A_1e150_with_mean_exact": (-1e150, 1.0, -1.0, 1.0, [1.0, 0.5], 1.0, "exact"),
    "tiny_A_1e-150_with_mean_exact": (1e-150, 1.0, -1.0, 1.0, [1.0, 0.5], 2.0, "exact"),
    "tiny_A_1e-150_with_mean_rk": (1e-150, 1.0, -1.0, 1.0, [1.0, 0.5], 2.0, "rk"),
    "huge_B_1e150_with_mean_exact": (0.5, 1e150, -1.0, 1.0, [1.0, 0.5], 2.0, "exact"),
    "huge_B_1e300_with_mean_exact": (0.5, 1e300, -1.0, 1.0, [1.0, 0.5], 2.0, "exact"),
    "huge_cov_1e150_with_mean_exact": (0.5, 1.0, -1.0, 1e150, [1.0, 0.5], 2.0, "exact"),
    "huge_cov_1e150_with_mean_rk": (0.5, 1.0, -1.0, 1e150, [1.0, 0.5], 2.0, "rk"),
    "tiny_cov_1e-300_blowing_layer_exact": (0.5, 1.0, 1.0, 1e-300, [1.0, 0.5], 2.0, "exact"),
    "tiny_cov_1e-300_blowing_layer_rk": (0.5, 1.0, 1.0, 1e-300, [1.0, 0.5], 2.0, "rk"),
}, iso_case, timeout=30)


@case(AREA, "either", timeout=30)
def report_huge_triangular_A_exact():
    """A = [[1e150, 1], [0, −1e150]], G = 2I: Σ → 1e150 e₁e₁ᵀ (e₁ spans the unstable subspace
    exactly) within ~1e-148 of t = 0; step_length is 3e-150, so only settling can finish."""
    A = np.array([[1e150, 1.0], [0.0, -1e150]])
    tr = flow(Params(A=A, B=I2, V=-I2), Gaussian([0, 0], S0_REPORT), 1.0, method="exact")
    finite_psd(tr)
    assert tr.status == "completed"
    assert abs(tr.cov[-1, 0, 0] / 1e150 - 1) < 1e-10
    assert np.abs(tr.cov[-1]).ravel()[1:].max() <= 1e-10 * 1e150


@case(AREA, "either", timeout=30)
def report_huge_triangular_A_rk():
    A = np.array([[1e150, 1.0], [0.0, -1e150]])
    tr = flow(Params(A=A, B=I2, V=-I2), Gaussian([1, 0], S0_REPORT), 1.0, method="rk")
    finite_psd(tr)
    assert abs(tr.cov[-1, 0, 0] / 1e150 - 1) < 1e-6


# ---------------------------------------------------------------- time-varying callables


def _p(d=2, a=-0.5):
    return Params(A=a * np.eye(d), B=np.eye(d), V=-np.eye(d))


def _dimension_change(t):
    return _p(3) if t > 0.5 else _p(2)


def _bad_type(value):
    return lambda t: value if t > 0.25 else _p()


def _raises(t):
    if t > 0.3:
        raise RuntimeError("sensor failure")
    return _p()


def _nan_params():
    bad = _p()
    bad.A.setflags(write=True)
    bad.A[0, 0] = np.nan
    return lambda t: bad if t > 0.2 else _p()


cases_of(AREA, "error", {
    "report_callable_dimension_changes": _dimension_change,
    "callable_returns_none_later": _bad_type(None),
    "callable_returns_dict_later": _bad_type({"A": -I2}),
    "callable_returns_number_later": _bad_type(1.0),
    "callable_raises_later": _raises,
    "callable_returns_nan_params": _nan_params(),
    "callable_returns_wrong_dimension_at_start": lambda t: _p(3),
}, lambda fn: expect_clean(lambda: flow(fn, Gaussian([0, 0], I2), 1.0),
                           InvalidInputError, "params(t)", "t = "))


@case(AREA, "error")
def callable_with_exact_method_is_refused():
    expect_clean(lambda: flow(lambda t: _p(), Gaussian([0, 0], I2), 1.0, method="exact"),
                 InvalidInputError, "time-invariant")


@case(AREA, "result")
def callable_piecewise_constant_matches_composed_exact_flows():
    """A switch at t = 0.5 (rk steps across it): the composition of two exact flows."""
    p0 = Params(A=[[0.3, 1.0], [-1.0, 0.2]], B=[[1.0, 0.2], [0.2, 0.5]], V=-I2, b=[0.1, 0.0])
    p1 = Params(A=[[-0.4, 0.0], [0.5, 0.1]], B=[[0.5, 0.0], [0.0, 1.0]], V=0.5 * I2)
    g = Gaussian([1.0, -1.0], S0_REPORT)
    tr = flow(lambda t: p0 if t < 0.5 else p1, g, 1.0, t_eval=[0.0, 0.5, 1.0], rtol=1e-12,
              atol=1e-14)
    first = flow(p0, g, 0.5, t_eval=[0.0, 0.5], method="exact")
    second = flow(p1, first.gaussian(-1), 0.5, t_eval=[0.0, 0.5], method="exact")
    close(tr.cov[-1], second.cov[-1], 1e-7, "Σ(1)")
    close(tr.mean[-1], second.mean[-1], 1e-7, "m(1)")


@case(AREA, "result")
def callable_smooth_general_v_matches_dop853():
    def fn(t):
        c, s = np.cos(3 * t), np.sin(3 * t)
        return Params(A=[[-0.2, c], [-s, 0.1]], B=[[1.0, 0.3 * s], [0.0, 0.5]],
                      V=[[0.5 * c, 0.1], [0.0, -0.7]], b=[s, 0.2])

    g = Gaussian([0.5, 0.0], S0_REPORT)
    te = np.linspace(0, 2, 5)
    tr = flow(fn, g, 2.0, t_eval=te, rtol=1e-12, atol=1e-14)
    m_ref, S_ref = ode_ref(fn, g, te)
    close(tr.cov, S_ref, 1e-8, "Σ(t)")
    close(tr.mean, m_ref, 1e-8, "m(t)")


@case(AREA, "either", timeout=30)
def callable_blowup_before_t_final_matches_dop853():
    """A callable driving a blow-up: rk's T* against a DOP853 reference run to near T*."""
    def fn(t):
        return Params(A=[[0.2, 0.0], [0.0, 0.1 + 0.1 * np.sin(t)]], B=I2, V=(1 + 0.2 * t) * I2)

    g = Gaussian([0, 0], np.diag([1.0, 0.5]))
    tr = flow(fn, g, 5.0, rtol=1e-12, atol=1e-14)
    assert tr.status == "blowup"
    T = tr.blowup_time
    _, S = ode_ref(fn, g, [0.0, T * (1 - 1e-4)])
    close(tr.cov[tr.t <= T * (1 - 1e-4)][-1],
          ode_ref(fn, g, [0.0, tr.t[tr.t <= T * (1 - 1e-4)][-1]])[1][-1], 1e-6, "Σ before T*")
    assert np.trace(S[-1]) > 1e3 * np.trace(g.cov), "the reference does not blow up near T*"


# ---------------------------------------------------------------- long horizons


def long_case(spec):
    """Settling over long horizons: anti-stable (Σ* = P*⁻¹), Hurwitz (Σ → 0) or mixed spectra
    (the stabilizing equilibrium), with mean and bias; Σ against mpmath, m against m*."""
    d, kind, T, seed = spec
    rng = np.random.default_rng(seed)
    Q = rotation(d, seed)
    lam = rng.uniform(0.3, 1.5, d)
    if kind == "hurwitz":
        lam = -lam
    elif kind == "mixed":
        lam = lam * np.where(np.arange(d) % 2, -1, 1)
    A = Q @ np.diag(lam) @ Q.T + (0.3 * np.triu(rng.standard_normal((d, d)), 1)
                                  if kind != "normal" else 0)
    C = rng.standard_normal((d, d))
    G = C @ C.T / d + 0.5 * np.eye(d)
    p = scalar_v(A, G, v=-1.0, b=rng.standard_normal(d))
    X = rng.standard_normal((d, d))
    g = Gaussian(rng.standard_normal(d), X @ X.T / d + 0.1 * np.eye(d))
    # the exact flow settles: at most SETTLE_STEPS steps whatever T (these take 25 to 80)
    tr = flow(p, g, T, t_eval=[0.0, T], method="exact", max_steps=SETTLE_STEPS)
    assert tr.status == "completed"
    finite_psd(tr)
    Gf = g_of(p)
    ev = np.linalg.eigvals(A).real
    if np.all(ev > 0):
        S_ref = mp_equilibrium(A, Gf)
    elif np.all(ev < 0):
        S_ref = np.zeros((d, d))
    else:  # converged by t_conv (rates ≥ 0.3 minus non-normal transients)
        S_ref = mp_cov(A, Gf, g.cov, 120.0)
    if np.any(S_ref):
        close(tr.cov[-1], S_ref, 1e-10, f"Σ({T:g})")
    else:
        assert np.abs(tr.cov[-1]).max() <= 1e-200, f"Σ({T:g}) should have collapsed"
    K = A - np.eye(d) - S_ref @ p.B
    if np.all(np.linalg.eigvals(K).real < 0):
        close(tr.mean[-1], -np.linalg.solve(K, p.b), 1e-9, f"m({T:g}) = m*")


cases_of(AREA, "result", {
    f"long_{kind}_d{d}_T{T:g}": (d, kind, T, 10 * d + i)
    for i, (d, kind, T) in enumerate([
        (1, "anti", 800.0), (2, "anti", 1e12), (3, "anti", 800.0), (5, "anti", 1e12),
        (8, "normal", 1e6), (2, "hurwitz", 800.0), (3, "hurwitz", 1e12), (6, "hurwitz", 1e5),
        (2, "mixed", 1e12), (3, "mixed", 800.0), (4, "mixed", 1e9)])
}, long_case, timeout=40)


@case(AREA, "result")
def long_singular_start_converges_on_its_stratum():
    """Σ0 of rank 1 (exact zeros) with A = diag(1, 2), G = 2I: the range stays span(e₁) exactly,
    Σ → diag(1, 0) (an equilibrium unstable off its stratum); also rank 1 rotated by an exact
    permutation."""
    p = scalar_v(np.diag([1.0, 2.0]), 2 * I2)
    tr = flow(p, Gaussian([0, 0], np.diag([3.0, 0.0])), 1e9, t_eval=[0.0, 1e9])
    close(tr.cov[-1], np.diag([1.0, 0.0]), 1e-13, "Σ(1e9)")
    P = np.eye(2)[[1, 0]]
    tr = flow(scalar_v(P @ p.A @ P.T, 2 * I2), Gaussian([0, 0], np.diag([0.0, 3.0])), 800.0)
    close(tr.cov[-1], np.diag([0.0, 1.0]), 1e-13, "Σ(800), permuted")


@case(AREA, "result")
def long_singular_start_rotated_range():
    """Σ0 = uuᵀ exactly singular in floats (u = (0.5, 1)), A = aI anti-stable (every subspace is
    invariant), G ≻ 0: Σ → σ*uuᵀ with σ* = 2a/(uᵀGu); against mpmath at t = 60."""
    u = np.array([0.5, 1.0])
    G = np.array([[2.0, 0.5], [0.5, 1.0]])
    p = scalar_v(0.7 * I2, G)
    S0 = np.outer(u, u)
    assert S0[0, 0] * S0[1, 1] == S0[0, 1] ** 2  # exactly singular as given
    tr = flow(p, Gaussian([0, 0], S0), 1e6, t_eval=[0.0, 60.0, 1e6])
    close(tr.cov[1], mp_cov(p.A, g_of(p), S0, 60.0), 1e-12, "Σ(60)")
    close(tr.cov[-1], S0 * 2 * 0.7 / (u @ g_of(p) @ u), 1e-12, "Σ(1e6)")


@case(AREA, "result")
def long_computed_rank_one_start_keeps_its_stratum():
    """Σ0 = uuᵀ computed in floats for u = (0.6, 0.8): its determinant 5.3e-17 is the rounding of
    the products, not a variance (the factor drops pivots at the level of their own
    cancellation). Σ → σ*uuᵀ, σ* = 2a/(uᵀGu), against the mpmath closed form from the exact
    rank-1 uuᵀ; restarting from the flow's own output (a float LLᵀ) stays on the stratum too."""
    u = np.array([0.6, 0.8])
    G = np.array([[2.0, 0.5], [0.5, 1.0]])
    p = scalar_v(0.7 * I2, G)
    with mp.workdps(60):
        um = mp.matrix([mp.mpf(3) / 5, mp.mpf(4) / 5])
        S_exact = um * um.T  # rank 1 exactly (not representable in floats)
        ref15 = mp_cov(p.A, g_of(p), S_exact, 15.0)
        limit = _np(S_exact) * 2 * 0.7 / (u @ g_of(p) @ u)
    tr = flow(p, Gaussian([0, 0], np.outer(u, u)), 1e6, t_eval=[0.0, 15.0, 60.0, 1e6])
    close(tr.cov[1], ref15, 1e-12, "Σ(15)")
    close(tr.cov[2], limit, 1e-12, "Σ(60)")
    close(tr.cov[-1], limit, 1e-12, "Σ(1e6)")
    again = flow(p, tr.gaussian(1), 45.0, t_eval=[0.0, 45.0])
    close(again.cov[-1], limit, 1e-12, "Σ(60) restarted at 15")
    assert np.linalg.eigvalsh(again.cov[-1])[0] <= 1e-14 * np.trace(limit)


@case(AREA, "result")
def long_tiny_variance_grows_to_its_equilibrium():
    """Σ0 = diag(1, 1e-300), A = diag(−1, 1), G = 2I: Σ11 → 0, Σ22 grows like e^{2t}·1e-300 and
    only reaches its equilibrium 1 near t ≈ 345 — the settling test must not freeze it early."""
    p = scalar_v(np.diag([-1.0, 1.0]), 2 * I2)
    tr = flow(p, Gaussian([0, 0], np.diag([1.0, 1e-300])), 800.0, t_eval=[0, 100, 340, 800])
    for k, t in enumerate(tr.t):
        close(tr.cov[k, 1, 1], mp_sigma(1.0, 2.0, 1e-300, t), 1e-9, f"Σ22({t:g})")
    assert tr.cov[-1, 0, 0] <= 1e-300


@case(AREA, "result")
def long_zero_attention_hurwitz_rotation():
    """G = 0 (no attention), A Hurwitz with a large rotation: Σ(t) = e^{At}Σ0e^{Aᵀt} → 0."""
    A = np.array([[-0.01, 5.0], [-5.0, -0.01]])
    tr = flow(Params(A=A), Gaussian([1.0, 0.0], S0_REPORT), 2e3, t_eval=[0.0, 50.0, 2e3])
    close(tr.cov[1], mp_cov(A, np.zeros((2, 2)), S0_REPORT, 50.0), 1e-9, "Σ(50)")
    assert np.abs(tr.cov[-1]).max() < 1e-15


# ---------------------------------------------------------------- near the blow-up time


cases_of(AREA, "either", {
    f"near_blowup_{m}_{label}": (m, gap, abvs)
    for m in ("exact", "rk")
    for label, gap, abvs in [("below_1e-3", -1e-3, (0.5, 1.0, 1.0, 0.3)),
                             ("below_1e-6", -1e-6, (-1.0, 0.8, 2.0, 2.0)),
                             ("below_1e-9", -1e-9, (2.0, -1.0, -1.0, 0.1)),
                             ("below_1e-12", -1e-12, (0.0, 1.0, 0.5, 1.0)),
                             ("above_1e-9", 1e-9, (0.5, 1.0, 1.0, 0.3)),
                             ("above_1e-6", 1e-6, (-1.0, 0.8, 2.0, 2.0))]
}, lambda s: near_blowup(s[0], s[1], *s[2]))


@case(AREA, "result")
def near_blowup_exact_a_thousandth_below_must_answer():
    near_blowup("exact", -1e-3)


@case(AREA, "result")
def near_blowup_exact_after_t_final_diagonal_2d():
    """Two decoupled directions blowing up at T1 < T2: T* = T1; with t_final between T1(1 − 1e-5)
    and T1 the flow completes, each variance on its closed form."""
    p = Params(A=np.diag([0.3, 1.0]), B=np.diag([1.0, 0.5]), V=I2)
    T1, T2 = mp_tstar(0.3, -2.0, 2.0), mp_tstar(1.0, -1.0, 0.4)
    assert T1 < T2
    tr = flow(p, Gaussian([0, 0], np.diag([2.0, 0.4])), 3.0, t_eval=[0.0, 0.1, 3.0])
    assert tr.status == "blowup" and abs(tr.blowup_time - T1) <= 1e-10 * T1, tr.blowup_time
    assert abs(abs(tr.blowup_direction[0]) - 1) < 1e-8
    close(tr.cov[1], np.diag([mp_sigma(0.3, -2.0, 2.0, 0.1), mp_sigma(1.0, -1.0, 0.4, 0.1)]),
          1e-11, "Σ(0.1)")
    t_final = T1 * (1 - 1e-5)
    tr = flow(p, Gaussian([0, 0], np.diag([2.0, 0.4])), t_final, method="exact")
    assert tr.status == "completed" and tr.t[-1] == t_final
    close(np.diag(tr.cov[-1]), [mp_sigma(0.3, -2.0, 2.0, t_final),
                                mp_sigma(1.0, -1.0, 0.4, t_final)], 1e-8, "diag Σ(t_final)")


@case(AREA, "either")
def near_blowup_exact_and_rk_agree_on_status():
    """Both methods on the same t_final grid around T*: never "blowup" with T* > t_final, and
    the same verdict wherever both answer."""
    a, v, b, s0 = 0.4, 1.0, 1.5, 0.5
    T = mp_tstar(a, -2 * v * b, s0)
    p, g = Params(A=a, B=b, V=v), Gaussian([0.3], [[s0]])
    for factor in (0.999, 1 - 1e-7, 1 + 1e-7, 1.001):
        verdicts = []
        for method in ("exact", "rk"):
            try:
                tr = flow(p, g, T * factor, method=method)
            except SolverError:
                continue
            assert tr.status != "blowup" or tr.blowup_time <= T * factor
            verdicts.append(tr.status)
        assert len(set(verdicts)) <= 1, f"exact and rk disagree at {factor}·T*: {verdicts}"
        assert not verdicts or verdicts[0] == ("blowup" if factor > 1 else "completed")


# ---------------------------------------------------------------- tiny variances


def tiny_case(spec):
    """Decoupled diagonal data, tiny variance ε on an unstable mode: blow-up (g < 0) or growth
    to 2a/g (g > 0), against the scalar closed forms."""
    eps, a, g, t_final, method, permute = spec
    A, G, S0 = np.diag([-1.0, a]), np.diag([2.0, g]), np.diag([1.0, eps])
    if permute:
        P = np.eye(2)[[1, 0]]
        A, G, S0 = P @ A @ P.T, P @ G @ P.T, P @ S0 @ P.T
    k = 0 if permute else 1
    tr = flow(scalar_v(A, G, v=1.0), Gaussian([0, 0], S0), t_final, method=method,
              t_eval=[0.0, t_final / 2, t_final])
    finite_psd(tr)
    T = mp_tstar(a, g, eps)
    if T is not None and T <= t_final:
        assert tr.status == "blowup", f"missed the blow-up at {T:.10g}"
        assert abs(tr.blowup_time - T) <= (1e-9 if method == "exact" else 1e-6) * T, \
            f"T* = {tr.blowup_time!r}, reference {T!r}"
        return
    assert tr.status == "completed"
    for i, t in enumerate(tr.t):
        ref = mp_sigma(a, g, eps, t)
        got = tr.cov[i, k, k]
        assert abs(got - ref) <= (1e-9 if method == "exact" else 1e-6) * ref, \
            f"σ({t:g}) = {got!r}, reference {ref!r}"


cases_of(AREA, "result", {
    f"tiny_variance_{eps:g}_a{a:g}_g{g:g}{'_perm' if perm else ''}": (eps, a, g, t, "exact",
                                                                       perm)
    for eps, a, g, t, perm in [(1e-16, 5.0, -2.0, 5.0, False), (1e-20, 1.0, -1.0, 40.0, True),
                               (1e-100, 2.0, -2.0, 100.0, False),
                               (1e-300, 1.0, -2.0, 400.0, True), (1e-16, 1.0, 2.0, 30.0, False),
                               (1e-200, 0.5, 1.0, 500.0, True), (5e-324, 1.0, -1.0, 400.0, False)]
}, tiny_case, timeout=30)

cases_of(AREA, "either", {
    f"tiny_variance_rk_{eps:g}_a{a:g}_g{g:g}": (eps, a, g, t, "rk", False)
    for eps, a, g, t in [(1e-16, 5.0, -2.0, 5.0), (1e-20, 1.0, -1.0, 40.0),
                         (1e-16, 1.0, 2.0, 30.0)]
}, tiny_case, timeout=30)


@case(AREA, "result")
def tiny_variance_singular_start_keeps_it():
    """Σ0 = diag(1, 1e-16, 0): rank 2 as given (the 1e-16 direction blows up), the zero stays."""
    p = scalar_v(np.diag([-1.0, 5.0, 3.0]), -2 * np.eye(3), v=1.0)
    tr = flow(p, Gaussian(np.zeros(3), np.diag([1.0, 1e-16, 0.0])), 5.0, t_eval=[0.0, 3.0, 5.0])
    T = mp_tstar(5.0, -2.0, 1e-16)
    assert tr.status == "blowup" and abs(tr.blowup_time - T) <= 1e-10 * T, tr.blowup_time
    assert np.all(tr.cov[:, 2, :] == 0), "the exactly-zero direction must stay zero"
    close(tr.cov[1, 1, 1], mp_sigma(5.0, -2.0, 1e-16, 3.0), 1e-9, "Σ22(3)")


@case(AREA, "result")
def tiny_variance_coupled_by_a():
    """A = [[5, 1], [0, −1]] couples the tiny variance into the blowing-up direction: against
    the mpmath closed form before T*, T* against the closed form's singularity."""
    A = np.array([[5.0, 0.0], [1.0, -1.0]])
    G = -2 * I2
    S0 = np.diag([1e-16, 1.0])
    p = scalar_v(A, G, v=1.0)
    tr = flow(p, Gaussian([0, 0], S0), 6.0, t_eval=[0.0, 2.0, 6.0])
    close(tr.cov[1], mp_cov(A, G, S0, 2.0), 1e-9, "Σ(2)")
    T = mp_first_root(A, G, S0, 6.0)
    assert tr.status == "blowup" and abs(tr.blowup_time - T) <= 1e-9 * T, (tr.blowup_time, T)


# ---------------------------------------------------------------- rounding-level G


def eps_diag_case(spec):
    """G = diag(1, −ε) exactly (diagonal data): T* = ½ ln(1 + 2/ε) from Σ0 = I, A = I."""
    eps, method = spec
    p = Params(A=I2, B=np.diag([1.0, -eps]), V=-0.5 * I2)
    T = mp_tstar(1.0, -eps, 1.0)
    tr = flow(p, Gaussian([0, 0], I2), 1.5 * T, method=method)
    assert tr.status == "blowup", f"{tr.status}; G = diag(1, −{eps:g}) blows up at {T:.10g}"
    assert abs(tr.blowup_time - T) <= (1e-9 if method == "exact" else 1e-6) * T, \
        f"T* = {tr.blowup_time!r}, reference {T!r}"
    assert tr.blowup_time <= 1.5 * T


cases_of(AREA, "result", {f"g_eps_{eps:g}_diagonal_exact": (eps, "exact")
                          for eps in (1e-15, 2e-16, 1e-17, 1e-30, 1e-300)}, eps_diag_case)
cases_of(AREA, "either", {f"g_eps_{eps:g}_diagonal_rk": (eps, "rk")
                          for eps in (2e-16, 1e-30)}, eps_diag_case, timeout=30)


def rotated_eps_case(spec):
    """A = Q diag(a) Qᵀ (anti-stable, sharing G's eigenbasis), G = Q diag(1, ε) Qᵀ in floats,
    Σ0 = I: the float data decide whether and when Σ blows up; any verdict must be the one of
    det(I + W(t)Σ0) in mpmath on those floats."""
    eps, seed, a, t_final, method = spec
    Q = rotation(2, seed)
    A = Q @ np.diag(a) @ Q.T
    G = Q @ np.diag([1.0, eps]) @ Q.T
    G = 0.5 * (G + G.T)
    p = scalar_v(A, G, v=-0.5)
    tr = flow(p, Gaussian([0, 0], I2), t_final, method=method, max_steps=3000)
    finite_psd(tr)
    T = mp_first_root(A, g_of(p), I2, t_final)
    if T is None:
        assert tr.status == "completed", f"blow-up at {tr.blowup_time} not in the float data"
    else:
        assert tr.status == "blowup", f"missed the blow-up of the float data at {T:.10g}"
        assert abs(tr.blowup_time - T) <= 1e-6 * T, f"T* = {tr.blowup_time!r}, reference {T!r}"


cases_of(AREA, "either", {
    f"g_eps_{eps:g}_rotated_{method}_seed{seed}": (eps, seed, a, t, method)
    for eps, seed, a, t, method in [(-1e-13, 1, (1.0, 1.0), 20.0, "exact"),
                                    (-2e-16, 2, (1.0, 2.0), 25.0, "exact"),
                                    (2e-16, 3, (1.0, 1.0), 45.0, "exact"),
                                    (0.0, 4, (0.5, 1.5), 40.0, "exact"),
                                    (-1e-15, 5, (1.0, 2.0), 25.0, "exact"),
                                    (-1e-13, 1, (1.0, 1.0), 20.0, "rk"),
                                    (2e-16, 3, (1.0, 1.0), 45.0, "rk")]
}, rotated_eps_case, timeout=60)


@case(AREA, "either", timeout=60)
def g_rounding_level_brentq_never_leaks():
    """The example that raised scipy's ValueError from brentq: ε = 1e-15 in a rotated basis."""
    rotated_eps_case((-1e-15, 0, (1.0, 1.0), 60.0, "exact"))


@case(AREA, "result")
def g_rounding_level_short_horizon_is_decided():
    """Rounding-level G is harmless on a short horizon: no blow-up by t = 5 for any G within
    rounding (the brackets agree), Σ(5) against mpmath."""
    Q = rotation(2, 7)
    A, G = Q @ np.diag([1.0, 2.0]) @ Q.T, Q @ np.diag([1.0, -2e-16]) @ Q.T
    p = scalar_v(A, 0.5 * (G + G.T), v=-0.5)
    tr = flow(p, Gaussian([0, 0], I2), 5.0)
    assert tr.status == "completed"
    close(tr.cov[-1], mp_cov(A, g_of(p), I2, 5.0), 1e-10, "Σ(5)")


@case(AREA, "result")
def g_semidefinite_exactly_uncoupled_coordinate():
    """G = diag(2, 0) exactly with diagonal A: no rounding uncertainty (an uncoupled coordinate);
    Σ22 grows like e^{2t} without blow-up over a long horizon."""
    p = scalar_v(np.diag([0.5, 0.2]), np.diag([2.0, 0.0]))
    tr = flow(p, Gaussian([0, 0], I2), 200.0, t_eval=[0.0, 200.0])
    assert tr.status == "completed"
    close(tr.cov[-1], np.diag([mp_sigma(0.5, 2.0, 1.0, 200.0), mp_sigma(0.2, 0.0, 1.0, 200.0)]),
          1e-10, "Σ(200)")


# ---------------------------------------------------------------- stiff spectra, overflow


def diag_mean_case(spec):
    """Diagonal A, B, Σ0 (decoupled) with a stiff spectrum and a mean: σ_i and m_i closed forms."""
    a, beta, v, s0, m0, t, method = spec
    p = Params(A=np.diag(a), B=np.diag(beta), V=v * I2)
    tr = flow(p, Gaussian(m0, np.diag(s0)), t, method=method, t_eval=[0.0, t])
    finite_psd(tr)
    g = [-2 * v * x for x in beta]
    sig = [mp_sigma(a[i], g[i], s0[i], t) for i in range(2)]
    mean = [mp_diag_mean(a[i], g[i], v, s0[i], m0[i], t) for i in range(2)]
    assert tr.status == "completed"
    close(np.diag(tr.cov[-1]), sig, 1e-9, "diag Σ(t)")
    for i in range(2):
        assert abs(tr.mean[-1, i] - mean[i]) <= 1e-6 * max(abs(mean[i]), 1e-300) + 1e-300, \
            f"m_{i}(t) = {tr.mean[-1, i]!r}, reference {mean[i]!r}"


cases_of(AREA, "either", {
    "stiff_diag_-1e6_1e6_mean_exact": ((-1e6, 1e6), (1.0, 1.0), -1.0, (1.0, 0.5), (1.0, 1.0),
                                       1.0, "exact"),
    "stiff_diag_-1e6_1e6_mean_rk": ((-1e6, 1e6), (1.0, 1.0), -1.0, (1.0, 0.5), (1.0, 1.0),
                                    1.0, "rk"),
    "stiff_diag_-1e4_-1_mean_exact": ((-1e4, -1.0), (1.0, 2.0), -1.0, (1.0, 0.5), (1.0, 1.0),
                                      3.0, "exact"),
    "stiff_diag_-1e3_0.5_blowing_exact": ((-1e3, 0.5), (1.0, 0.1), 1.0, (0.01, 0.01),
                                          (1.0, 0.5), 2.0, "exact"),
    "huge_rate_1e100_diag_mean_exact": ((1e100, -1e100), (1.0, 1.0), -1.0, (1.0, 1.0),
                                        (1.0, 1.0), 1e-98, "exact"),
}, diag_mean_case, timeout=30)


@case(AREA, "error")
def overflow_without_attention_exact_is_a_solver_error():
    """A = I, no attention: Σ grows like e^{2t} and overflows near t ≈ 355 — exponential growth,
    not a blow-up: SolverError, never NaN with status "completed"."""
    flow(Params(A=I2), Gaussian([1.0, 0.0], S0_REPORT), 800.0, method="exact")


@case(AREA, "error")
def overflow_without_attention_rk_is_a_solver_error():
    flow(Params(A=I2), Gaussian([1.0, 0.0], S0_REPORT), 800.0, method="rk")


@case(AREA, "result")
def layers_overflow_is_labelled_overflow():
    """Σ⁺ = (I + τM)Σ(I + τM)ᵀ leaves float64 at some depth: status "blowup" of kind "overflow"
    at that depth (not "singularity"), the finite states before it equal to the recursion."""
    p = Params(A=I2, B=I2, V=I2)
    g = Gaussian([1.0, 0.0], 1e100 * np.eye(2))
    tr = layers(p, g, 20, 0.5)
    assert tr.status == "blowup" and tr.blowup_kind == "overflow", (tr.status, tr.blowup_kind)
    assert tr.blowup_time == 0.5 * len(tr)
    S, m = g.cov, g.mean
    for k in range(1, len(tr)):
        F = np.eye(2) + 0.5 * (p.A + p.V @ S @ p.B)
        m, S = F @ m + 0.5 * (p.b + p.V @ m), F @ S @ F.T
        close(tr.cov[k], S, 1e-13, f"Σ after layer {k}")
    finite_psd(tr)


@case(AREA, "result")
def flow_blowup_is_labelled_singularity():
    tr = flow(Params(A=I2, B=I2, V=I2), Gaussian([0, 0], I2), 5.0)
    assert tr.status == "blowup" and tr.blowup_kind == "singularity"


# ---------------------------------------------------------------- work budgets


@case(AREA, "error", timeout=5)
def budget_exact_rotation_1e12_refused_up_front():
    """Pure rotation with attention: no settling possible and ~1e11 steps: refused at once."""
    flow(Params(A=[[0.0, 1.0], [-1.0, 0.0]], B=I2, V=-I2), Gaussian([1.0, 0], S0_REPORT), 1e12,
         method="exact")


@case(AREA, "error", timeout=5)
def budget_exact_fast_rotation_refused_up_front():
    flow(Params(A=[[0.0, 1e6], [-1e6, 0.0]], B=I2, V=-I2), Gaussian([1.0, 1.0], S0_REPORT), 10.0,
         method="exact")


@case(AREA, "error", timeout=10)
def budget_exact_max_steps_spent():
    expect_clean(lambda: flow(Params(A=[[0.0, 1.0], [-1.0, 0.1]], B=I2, V=-I2),
                              Gaussian([1.0, 0], S0_REPORT), 500.0, method="exact", max_steps=20),
                 SolverError, "max_steps = 20")


@case(AREA, "error", timeout=10)
def budget_rk_max_steps_spent():
    expect_clean(lambda: flow(Params(A=[[0.0, 1.0], [-1.0, 0.1]], B=I2, V=[[0.5, 0.1], [0, 1]]),
                              Gaussian([1.0, 0], S0_REPORT), 500.0, method="rk", max_steps=30),
                 SolverError, "max_steps = 30")


@case(AREA, "error", timeout=5)
def budget_rk_stiff_refused_up_front():
    """A with |λ| = 1e150: explicit steps of ~1e-150 on [0, 1]: refused before any work."""
    flow(Params(A=[[1e150, 1.0], [0.0, -1e150]], B=I2, V=[[1.0, 0.5], [0.0, 1.0]]),
         Gaussian([1.0, 0], S0_REPORT), 1.0, method="rk")


@case(AREA, "either", timeout=60)
def budget_rk_default_on_rounding_dominated_rhs():
    """Rotated G = Q diag(1, −1e-15) Qᵀ: rk's right-hand side is dominated by rounding near the
    blow-up; the default budget must end it (SolverError) in bounded time, or T* must be the one
    of the float data."""
    Q = rotation(2, 5)
    A, G = Q @ I2 @ Q.T, Q @ np.diag([1.0, -1e-15]) @ Q.T
    p = scalar_v(A, 0.5 * (G + G.T), v=-0.5)
    tr = flow(p, Gaussian([0, 0], I2), 30.0, method="rk")
    T = mp_first_root(A, g_of(p), I2, 30.0)
    assert tr.status == ("completed" if T is None else "blowup")
    if T is not None:
        assert abs(tr.blowup_time - T) <= 1e-6 * T


@case(AREA, "error")
def budget_layers_huge_depth_refused():
    expect_clean(lambda: layers(Params(A=-I2), Gaussian([0, 0], I2), 10**9, 0.1), SolverError,
                 "max_steps")


@case(AREA, "error")
def budget_max_steps_must_be_a_count():
    flow(Params(A=-I2), Gaussian([0, 0], I2), 1.0, max_steps=0.5)


# ---------------------------------------------------------------- tiny horizons, huge horizons,
# ---------------------------------------------------------------- ill-conditioned G


TINY_TIMES = (5e-324, 1e-323, 2.5e-322, 4.9e-322, 1e-321, 1e-310, 2.2e-308)
GENERAL_V = Params(A=[[-0.3, 0.2], [0.0, -0.2]], B=[[0.5, 0.1], [0.0, 0.3]],
                   V=[[0.4, 0.1], [-0.2, 0.3]], b=[0.3, -0.1])


def tiny_horizon_case(spec):
    """flow on [0, t_final] with t_final a few subnormal spacings: the default grid of 101 equally
    spaced times collapses to a few distinct ones (5e-324: 0 and 5e-324 only), which scipy refused
    as "t_eval not properly sorted". The states are the start to rounding (Σ(t) = Σ0 + O(t)),
    the times strictly increasing in [0, t_final], and the dense output answers inside."""
    t_final, method, dense = spec
    p = GENERAL_V if method == "rk" else scalar_v([[-0.3, 0.2], [0.0, -0.2]], [[1.0, 0.2],
                                                                              [0.2, 0.6]])
    g = Gaussian([1.0, -0.5], S0_REPORT)
    tr = flow(p, g, t_final, method=method, dense_output=dense)
    assert tr.t[0] == 0.0 and tr.t[-1] == t_final and np.all(np.diff(tr.t) > 0), tr.t
    assert tr.status == "completed"
    close(tr.cov, np.broadcast_to(g.cov, tr.cov.shape), 1e-15, "Σ(t) = Σ0")
    close(tr.mean, np.broadcast_to(g.mean, tr.mean.shape), 1e-15, "m(t) = m0")
    if dense:
        close(tr(t_final / 2).cov, g.cov, 1e-15, "dense Σ(t_final/2)")


cases_of(AREA, "result", {
    f"tiny_horizon_{t:g}_{method}{'' if dense else '_no_dense'}": (t, method, dense)
    for t in TINY_TIMES for method in ("exact", "rk") for dense in (True, False)
}, tiny_horizon_case, timeout=20)


def huge_horizon_case(t_final):
    """The README's converging layer (with a bias) to t_final ≥ 1e50: the settled drift K·τ
    went through scipy's expm, NaN for non-normal K at τ = 1e50, reported as the mean growing
    "with α(K) = −1". Σ(t_final) = Σ* = P*⁻¹ (mpmath) and m(t_final) = −K⁻¹b."""
    A = 0.5 * I2 + np.array([[0.0, 0.3], [-0.1, 0.0]])
    p = Params(A=A, B=I2, V=-I2, b=[0.4, -0.2])
    tr = flow(p, Gaussian([1.0, 0.0], S0_REPORT), t_final)
    star = mp_equilibrium(A, g_of(p))
    assert tr.status == "completed"
    close(tr.cov[-1], star, 1e-12, "Σ(t_final) = Σ*")
    close(tr.mean[-1], -np.linalg.solve(A - I2 - star, p.b), 1e-12, "m(t_final) = m*")


cases_of(AREA, "result", {f"huge_horizon_exact_{t:g}": t
                          for t in (1e50, 1e100, 1e300, np.finfo(float).max)},
         huge_horizon_case, timeout=20)


def ill_conditioned_case(spec):
    """A = Q diag(a) Qᵀ anti-stable and G = Q diag(g, g_small) Qᵀ sharing its eigenvectors: Σ
    grows to ~2a/g_small along the last one, where the float G's rounding (eps‖G‖) is not small
    beside g_small. The exact flow returned Σ(60) 2.8e-6 … 0.2 off the closed form (mpmath, on
    the floats of G as given) with status "completed"; now within 1e-6, or a SolverError."""
    seed, d, g_small, t = spec
    rng = np.random.default_rng(seed)
    Q = rotation(d, seed)
    A = Q @ np.diag(rng.uniform(0.2, 1.0, d)) @ Q.T
    G = Q @ np.diag(np.r_[rng.uniform(0.5, 2.0, d - 1), g_small]) @ Q.T
    p = scalar_v(A, 0.5 * (G + G.T), v=-0.5)
    S0 = S0_REPORT if d == 2 else np.eye(d) + 0.2 * np.ones((d, d))
    tr = flow(p, Gaussian(np.zeros(d), S0), t, t_eval=[0.0, t], method="exact")
    close(tr.cov[-1], mp_cov(A, g_of(p), S0, t), 1e-6, f"Σ({t:g})")


cases_of(AREA, "either", {
    f"ill_conditioned_g_{g:g}_t{t:g}_d{d}": (seed, d, g, t)
    for seed, d, g, t in [(1, 2, 1e-10, 60.0), (2, 3, 1e-12, 60.0), (3, 2, 1e-14, 60.0),
                          (4, 3, 1e-7, 60.0), (5, 2, 1e-12, 20.0)]
}, ill_conditioned_case, timeout=30)
