"""`horizon_margin` as a proof: m(τ) > 0 must mean that no start Σ0 ⪰ 0 with ‖Σ0‖₂ ≤ ‖cov0‖₂
blows up before τ, checked against blow-up times computed independently (the closed form of the
isotropic flow in exact rationals and mpmath, DOP853 on multi-head layers); references that are
not covariances and tensors torch cannot diagonalise are refused."""

from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy.integrate import solve_ivp

torch = pytest.importorskip("torch")

from riccati_tf.design.margin import (  # noqa: E402
    horizon_margin,
    stability_margin,
    trace_growth_rate,
)
from riccati_tf.errors import InvalidInputError  # noqa: E402

F64 = torch.float64


def _eye(d):
    return torch.eye(d, dtype=F64)


def _rotated(rng, eig):
    Q, _ = np.linalg.qr(rng.standard_normal((len(eig), len(eig))))
    return torch.tensor(Q @ np.diag(eig) @ Q.T)


def test_the_quoted_indefinite_reference_is_refused():
    # cov0 = diag(1, ½, −1.4): ‖cov0‖₂ = 1.4 and Σ0 = 1.4 I blows up under V = B = I at
    # T* = 1/2.8 ≈ 0.357 < 0.45, yet m(0.45) = 0.1 > 0 was returned from λ_max(cov0) = 1
    I = _eye(3)
    cov0 = torch.diag(torch.tensor([1.0, 0.5, -1.4], dtype=F64))
    for call in (lambda: horizon_margin([(I, I, I, I)], cov0, horizon=0.45),
                 lambda: trace_growth_rate([(I, I, I, I)], cov0)):
        with pytest.raises(InvalidInputError, match="positive semidefinite"):
            call()


@pytest.mark.parametrize("seed", range(4))
def test_indefinite_references_are_refused(seed):
    # rotated references with one negative eigenvalue, of any size against the positive ones
    rng = np.random.default_rng(seed)
    d = 2 + seed
    eig = rng.uniform(0.1, 1.0, d)
    eig[rng.integers(d)] = -rng.uniform(1e-6, 3.0)
    heads = [(_eye(d), _eye(d), _eye(d), _eye(d))]
    with pytest.raises(InvalidInputError, match="cov0"):
        horizon_margin(heads, _rotated(rng, eig), horizon=0.1)


def _isotropic_tstar(a, vb, z0):
    """T* of ż = 2az + 2vβz² from z0 (mpmath, 50 digits): 1/(2vβz0) for a = 0, else
    log(1 + a/(vβz0))/(2a); inf when it does not blow up."""
    mpmath.mp.dps = 50
    a, vb, z0 = mpmath.mpf(a), mpmath.mpf(vb), mpmath.mpf(z0)
    if a == 0:
        return 1 / (2 * vb * z0)
    arg = 1 + a / (vb * z0)
    return mpmath.log(arg) / (2 * a) if arg > 0 and mpmath.log(arg) / a > 0 else mpmath.inf


@pytest.mark.parametrize("a, v, beta, eig", [
    (0.0, 1.0, 1.0, (1.4, 0.5, 0.1)),          # the quoted layer with a covariance reference
    (0.0, 1.0, 1.0, (1.0, 1.0, 1.0)),
    (0.3, 0.7, 1.3, (2.0, 0.25)),
    (-0.4, 1.1, 0.9, (3.0, 1.0, 0.5, 0.0)),     # a drift too weak to hold the attention
    (1e-3, 0.37, 2.9, (0.61,)),
])
def test_a_positive_margin_is_never_past_the_isotropic_blowup(a, v, beta, eig):
    # V = vI, B = βI, A = aI: ‖Σ(t)‖₂ of the start Σ0 = ‖cov0‖₂ I obeys the comparison
    # equation itself, so the bound is attained and the exact root of m is T*; near T* (within
    # a few hundred rounding units) a positive margin must come from τ < T* (50 digits)
    d = len(eig)
    rng = np.random.default_rng(d)
    cov0 = _rotated(rng, np.array(eig, dtype=float))
    z0 = float(np.abs(np.linalg.eigvalsh(cov0.numpy())).max())
    heads = [(beta * _eye(d), _eye(d), v * _eye(d), _eye(d))]
    tstar = _isotropic_tstar(a, v * beta, z0)
    assert mpmath.isfinite(tstar)
    positive = 0
    for k in range(-400, 401, 8):
        tau = float(tstar * (1 + k * mpmath.mpf(2) ** -52))
        m = float(horizon_margin(heads, cov0, a * _eye(d), horizon=tau))
        if m > 0:
            positive += 1
            assert Fraction(tau) < Fraction(str(mpmath.nstr(tstar, 40))), (k, tau, m)
    assert positive > 0  # the margin is not vacuous below T*


def test_the_quoted_layer_is_certified_only_before_its_blowup():
    # the PSD reference of the quoted norm: Σ0 = 1.4 I blows up at 1/2.8; m(0.45) ≤ 0 and
    # m(0.35) > 0, and DOP853 from Σ0 = 1.4 I stays finite up to 0.35
    I = _eye(3)
    cov0 = torch.diag(torch.tensor([1.0, 0.5, 1.4], dtype=F64))
    heads = [(I, I, I, I)]
    assert float(horizon_margin(heads, cov0, horizon=0.45)) <= 0
    m = float(horizon_margin(heads, cov0, horizon=0.35))
    assert m > 0
    sol = _dop853([(np.eye(3), np.eye(3))], np.zeros((3, 3)), 1.4 * np.eye(3), 0.35)
    assert sol.status == 0
    assert np.linalg.eigvalsh(sol.y[:, -1].reshape(3, 3))[-1] <= 1.4 / m


def _dop853(pairs, A, S0, T):
    d = A.shape[0]

    def rhs(_t, s):
        S = s.reshape(d, d)
        M = A + sum(V @ S @ B for V, B in pairs)
        return (M @ S + S @ M.T).ravel()

    return solve_ivp(rhs, (0.0, T), S0.ravel(), method="DOP853", rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_margin_bounds_independent_multihead_flows_from_every_start_of_the_norm(seed):
    # random factored multi-head layers (general values) and drifts; starts of spectral norm
    # ‖cov0‖₂ in several shapes (isotropic, rank one along random directions, the reference
    # rescaled); where m(τ) > 0 DOP853 stays finite on [0, τ] under z0/m(t) at every step
    rng = np.random.default_rng(900 + seed)
    d, n_heads, r = 4, 2 + seed % 2, 2
    facts = [[rng.standard_normal(shape) / np.sqrt(d) for shape in ((r, d), (r, d), (r, d), (d, r))]
             for _ in range(n_heads)]
    heads = [tuple(torch.tensor(x) for x in f) for f in facts]
    pairs = [(Wo @ Wv, Wk.T @ Wq) for Wq, Wk, Wv, Wo in facts]
    A = rng.standard_normal((d, d)) / (2 * np.sqrt(d)) + (seed - 2) * 0.2 * np.eye(d)
    L = rng.standard_normal((d, d))
    cov0 = L @ L.T
    cov0 *= 1.5 / np.linalg.eigvalsh(cov0)[-1]
    z0 = float(np.linalg.eigvalsh(cov0)[-1])
    taus = np.linspace(0.02, 3.0, 60)
    ms = np.array([float(horizon_margin(heads, torch.tensor(cov0), torch.tensor(A), horizon=t))
                   for t in taus])
    assert np.all(np.diff(ms[ms > 0]) <= 0) or seed < 2  # non-increasing while α ≥ 0 rows
    good = taus[ms > 0]
    assert good.size > 0
    T = float(good[-1])
    u = rng.standard_normal((3, d))
    starts = [z0 * np.eye(d), cov0] + [z0 * np.outer(w, w) / (w @ w) for w in u]
    for S0 in starts:
        sol = _dop853(pairs, A, S0, T)
        assert sol.status == 0 and np.all(np.isfinite(sol.y))
        z = np.array([np.linalg.eigvalsh(s.reshape(d, d))[-1] for s in sol.y.T])
        bound = np.interp(sol.t, taus, np.where(ms > 0, ms, np.nan))
        inside = sol.t >= taus[0]
        assert np.all(z[inside] <= z0 / bound[inside] * (1 + 1e-7))


# --- refusals of bad arguments (booleans, tensors torch cannot diagonalise) -----------------

def test_booleans_are_refused_for_horizon_and_temperature():
    I = _eye(2)
    heads = [(I, I, I, I)]
    for flag in (True, False, np.bool_(True)):
        with pytest.raises(InvalidInputError, match="horizon"):
            horizon_margin(heads, I, horizon=flag)
        with pytest.raises(InvalidInputError, match="temperature"):
            stability_margin(heads, temperature=flag)


def _odd_tensors():
    I = torch.eye(2, dtype=F64)
    return {"float16": I.half(), "bfloat16": I.bfloat16(), "sparse_coo": I.to_sparse(),
            "sparse_csr": I.to_sparse_csr(), "meta": torch.empty(2, 2, dtype=F64, device="meta"),
            "int64": torch.eye(2, dtype=torch.int64), "complex": I.to(torch.complex128),
            "object": np.array([[None, 1.0], [1.0, 1.0]], dtype=object)}


@pytest.mark.parametrize("kind", ["float16", "bfloat16", "sparse_coo", "sparse_csr", "meta",
                                  "int64", "complex", "object"])
@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support")
def test_odd_tensors_are_refused_as_invalid_input(kind):
    X = _odd_tensors()[kind]
    I = _eye(2)
    calls = {
        "factor of stability_margin": lambda: stability_margin([(X, I, I, I)]),
        "factor of horizon_margin": lambda: horizon_margin([(I, I, X, I)], I),
        "factor of trace_growth_rate": lambda: trace_growth_rate([(I, X, I, I)], I),
        "cov0 of horizon_margin": lambda: horizon_margin([(I, I, I, I)], X),
        "A of horizon_margin": lambda: horizon_margin([(I, I, I, I)], I, X),
        "cov0 of trace_growth_rate": lambda: trace_growth_rate([(I, I, I, I)], X),
    }
    for what, call in calls.items():
        with pytest.raises(InvalidInputError):
            call()
        try:
            call()
        except InvalidInputError as exc:
            assert str(exc), what


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_attained_bound_is_never_overstated_by_rounding(dtype):
    # V = B = I, A = 0 from Σ0 = I: ‖Σ(τ)‖₂ = 1/(1 − 2τ) exactly, so the returned margin must not
    # exceed the exact 1 − 2τ (else z0/m understates the true norm); each dtype with its eps
    I = torch.eye(2, dtype=dtype)
    rng = np.random.default_rng(7)
    for tau in rng.uniform(0.01, 0.5, 200):
        m = horizon_margin([(I, I, I, I)], I, horizon=float(tau))
        assert m.dtype == dtype
        exact = 1 - 2 * Fraction(float(tau))
        assert Fraction(float(m)) <= exact
        assert float(m) > 0 or exact < 1e-5
