"""The stiff flow (`riccati_tf.flows.implicit`, ``flow(..., method="implicit")`` and the switch
of "auto"): Rodas4's order, the closed form of the Riccati case in mpmath on stiff layers, an
independent Radau reference with the exact Jacobian on the real-shape stabilising-sign family
(`riccati_tf.empirical.families`), and the structured solves against dense ones."""

import mpmath as mp
import numpy as np
import pytest

from riccati_tf import Gaussian, Params, flow
from riccati_tf.empirical.families import family_cases, opposite_sign_layer
from riccati_tf.errors import InvalidInputError, SolverError
from riccati_tf.flows.implicit import linear
from riccati_tf.flows.implicit.stepper import rodas_step
from tests.stiff_reference import radau_moments


def _relative(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def test_rodas4_is_fourth_order():
    """y' = −y² + sin y from y(0) = 1 to t = 1: the error falls 16-fold per halving of h."""
    def f(y):
        return np.array([-y[0] ** 2 + np.sin(y[0])])

    def exact(t):  # the reference: the same step at h/8 four times finer than the finest
        y = np.array([1.0])
        for _ in range(2560):
            y = _step(f, y, 1 / 2560)
        return y[0]

    truth = exact(1.0)
    errors = []
    for n in (10, 20, 40):
        y = np.array([1.0])
        for _ in range(n):
            y = _step(f, y, 1 / n)
        errors.append(abs(y[0] - truth))
    ratios = [errors[i] / errors[i + 1] for i in range(2)]
    assert all(12 < r < 20 for r in ratios), ratios


def _step(f, y, h):
    J = np.array([[-2 * y[0] + np.cos(y[0])]])
    W = np.eye(1) / (0.25 * h) - J
    return rodas_step(f, lambda r: np.linalg.solve(W, r), y, h)[0]


def _riccati_mp(A, G, S0, times, step=0.01, dps=50):
    """Σ(t) at the times (multiples of step) by the closed form over steps of size step,
    Σ⁺ = Φ Σ (I + W Σ)⁻¹ Φᵀ with Φ = e^{A step}, W = ∫_0^step e^{Aᵀs} G e^{As} ds, in mpmath
    (Van Loan: exp([[−Aᵀ, G], [0, A]] step) = [[·, F12], [0, F22]], W = F22ᵀ F12; ‖A‖ step ≈ 3,
    so the block exponential loses no digits that 50 do not cover)."""
    with mp.workdps(dps):
        d = len(A)
        A, G, S = mp.matrix(A.tolist()), mp.matrix(G.tolist()), mp.matrix(S0.tolist())
        H = mp.zeros(2 * d, 2 * d)
        for i in range(d):
            for j in range(d):
                H[i, j], H[i, d + j], H[d + i, d + j] = -A[j, i], G[i, j], A[i, j]
        F = mp.expm(H * step)
        Phi = F[d:, d:]
        W = Phi.T * F[:d, d:]
        out, k = [], 0
        for t in times:
            while k < round(t / step):
                S = Phi * S * mp.inverse(mp.eye(d) + W * S) * Phi.T
                S = (S + S.T) / 2
                k += 1
            out.append(np.array([[float(S[i, j]) for j in range(d)] for i in range(d)]))
        return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_implicit_matches_the_riccati_closed_form_on_stiff_layers(seed):
    """V = v I with G = −v(B + Bᵀ) ≻ 0 and A with eigenvalues from −300 to +0.5 (‖A‖t = 300):
    the implicit flow agrees with the mpmath closed form to 1e-8 at t = 0.5, 1, 2."""
    rng = np.random.default_rng(seed)
    d = 3
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    A = Q @ np.diag([-300.0, -1.0, 0.5]) @ Q.T + 0.1 * rng.standard_normal((d, d))
    X = rng.standard_normal((d, d))
    B = -(X @ X.T + np.eye(d)) / 2
    v = 0.7
    G = -v * (B + B.T)
    assert np.linalg.eigvalsh(G).min() > 0
    S0 = np.eye(d) + 0.3 * np.outer(X[0], X[0])
    times = [0.5, 1.0, 2.0]
    tr = flow(Params(A, B=B, V=v * np.eye(d)), Gaussian(np.zeros(d), S0), 2.0,
              t_eval=times, method="implicit")
    assert tr.method == "implicit" and tr.status == "completed"
    for S, truth in zip(tr.cov, _riccati_mp(A, G, S0, times), strict=True):
        assert _relative(S, truth) < 1e-8


def test_implicit_blowup_reports_t_star():
    """σ̇ = 2σ² from σ0 = 1 blows up at T* = 1/2: the implicit flow ends with status "blowup"
    and a bracket holding 1/2."""
    tr = flow(Params(0.0, B=1.0, V=1.0), Gaussian([0.0], [[1.0]]), 1.0, method="implicit")
    assert tr.status == "blowup" and tr.blowup_kind == "singularity"
    lo, hi = tr.blowup_bracket
    assert lo <= 0.5 <= hi and abs(tr.blowup_time - 0.5) < 0.01


def test_implicit_refuses_time_varying_controls():
    with pytest.raises(InvalidInputError, match="time-invariant"):
        flow(lambda t: Params(-np.eye(2)), Gaussian(np.zeros(2), np.eye(2)), 1.0,
             method="implicit")


@pytest.mark.parametrize("d", [12, 60])
def test_structured_solve_matches_a_dense_solve(d):
    """(sI − J)u = r by the covariance block's LU (d ≤ DENSE_MAX_D) or preconditioned GMRES
    (above it) against a dense solve of the Jacobian assembled column by column from the
    right-hand side's exact directional derivative (Σ̇ quadratic: central differences exact)."""
    rng = np.random.default_rng(d)
    p = opposite_sign_layer(d, 3, heads=4, bias=0.3)
    m = rng.standard_normal(d)
    S = np.eye(d) * 5 + np.diag(rng.uniform(0, 50, d))
    lin = linear.Linearisation(p, m, S)
    s = 3.0
    solver = linear.StepSolver(lin, s, 1e-12)
    R = rng.standard_normal((d, d))
    r = np.concatenate([rng.standard_normal(d), (R + R.T).ravel()])
    u = solver.solve(r)
    W = np.zeros((d + d * d, d + d * d))

    def rhs(y):
        Sy = y[d:].reshape(d, d)
        M = p.M(Sy)
        return np.concatenate([M @ y[:d] + p.c(y[:d]), (M @ Sy + Sy @ M.T).ravel()])

    y = np.concatenate([m, S.ravel()])
    n = d + d * d
    if d <= 12:
        for j in range(n):
            e = np.zeros(n)
            e[j] = 1.0
            W[:, j] = s * e - (rhs(y + e) - rhs(y - e)) / 2
        assert _relative(u, np.linalg.solve(W, r)) < 1e-9
    else:  # d² = 3600: the residual of the structured solution through exact products
        U = u[d:].reshape(d, d)
        Wu = s * u - np.concatenate([
            (lin.M + p.value_sum) @ u[:d] + lin.attention(U) @ m,
            lin.covariance_product(U).ravel()])
        assert _relative(Wu, r) < 1e-9


def test_auto_switches_on_a_stiff_layer_and_matches_radau():
    """A with eigenvalues −2e4, −1, 0.3, 0.1 and one general head, with a mean: DOP853's steps
    collapse to its stability bound, "auto" switches (method "rk+implicit", switch_time
    recorded), and the states at t = 1, 2 agree with Radau (exact Jacobian, rtol 1e-10) to
    1e-6 relative; plain "rk" refuses the layer up front."""
    rng = np.random.default_rng(5)
    d = 4
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    A = Q @ np.diag([-2e4, -1.0, 0.3, 0.1]) @ Q.T
    V = np.eye(d) + 0.2 * rng.standard_normal((d, d))
    p = Params(A, heads=[(V, -np.eye(d) / 2)], b=np.ones(d))
    g = Gaussian(rng.standard_normal(d), np.eye(d))
    times = [1.0, 2.0]
    tr = flow(p, g, 2.0, t_eval=times)
    assert tr.method == "rk+implicit" and 0.0 < tr.switch_time < 1.0
    mean, cov, _ = radau_moments(p, g, times)
    for k in range(2):
        assert _relative(tr.cov[k], cov[k]) < 1e-6
        assert _relative(tr.mean[k], mean[k]) < 1e-6
    with pytest.raises(SolverError, match="steps"):
        flow(p, g, 2.0, method="rk", max_steps=2000)


def test_implicit_matches_radau_on_the_family_at_large_covariance():
    """The stabilising-sign family at d = 12 (4 heads, m0 and b ≠ 0) from 200 times its Σ0,
    where the attention terms are stiff from the start: "implicit" agrees with Radau at
    t = 0.5, 1 to 1e-6 relative."""
    case = family_cases((12,), 3, family="opposite")[2]
    g = Gaussian(case.initial.mean, 200 * case.initial.cov)
    times = [0.5, 1.0]
    tr = flow(case.params, g, 1.0, t_eval=times, method="implicit")
    mean, cov, _ = radau_moments(case.params, g, times)
    for k in range(2):
        assert _relative(tr.cov[k], cov[k]) < 1e-6
        assert _relative(tr.mean[k], mean[k]) < 1e-6


@pytest.mark.long  # the family against Radau at d = 24, 48: make test-long
def test_auto_switches_on_the_stabilising_sign_family_and_matches_radau():
    """d = 12, 4 heads, A = 0.3 I + noise, m0 and b ≠ 0: DOP853 stalls as Σ grows, "auto"
    records the switch, and the states at t = 5, 10, 20 agree with scipy's Radau (exact
    Jacobian, rtol 1e-10) to 1e-6 relative."""
    case = family_cases((12,), 3, family="opposite")[2]  # the "mean" variant
    times = [5.0, 10.0, 20.0]
    tr = flow(case.params, case.initial, 20.0, t_eval=times)
    assert tr.method == "rk+implicit" and 5.0 < tr.switch_time < 20.0
    mean, cov, _ = radau_moments(case.params, case.initial, times)
    for k in range(3):
        assert _relative(tr.cov[k], cov[k]) < 1e-6
        assert _relative(tr.mean[k], mean[k]) < 1e-6


@pytest.mark.long  # make test-long
@pytest.mark.parametrize("d, k", [(24, 0), (24, 1), (24, 2), (24, 4), (48, 0), (48, 5)])
def test_family_against_radau(d, k):
    """The stabilising-sign family and its variants at d = 24, 48: "auto" to t = 20 agrees with
    the Radau reference at t = 10 and 20 to 1e-6 relative."""
    case = family_cases((d,), k + 1, family="opposite")[k]
    times = [10.0, 20.0]
    tr = flow(case.params, case.initial, 20.0, t_eval=times)
    mean, cov, _ = radau_moments(case.params, case.initial, times)
    for i in range(2):
        assert _relative(tr.cov[i], cov[i]) < 1e-6
        if np.any(mean[i]):
            assert _relative(tr.mean[i], mean[i]) < 1e-6
