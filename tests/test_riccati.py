"""The Riccati/Bernoulli/Lyapunov layer: CAREX closed forms, the Schur fast path against SLICOT
and python-control, rank of the stabilizing solution, the imaginary-axis refusal."""

import numpy as np
import pytest
import scipy.linalg as sl

from riccati_tf.errors import InvalidInputError, SolverError
from riccati_tf.stability.riccati import (
    NoStabilizingSolution,
    bernoulli,
    care_g,
    lyapunov_function,
)
from riccati_tf.stability.riccati.care import care_python_control, care_residual
from riccati_tf.stability.riccati.numerics import fro_norm
from riccati_tf.stability.riccati.schur import check_axis_gap, schur_split
from tests.data.carex import EXAMPLES, ex11

EPS = np.finfo(float).eps


def random_with_spectrum(rng, re_parts):
    """X D X⁻¹ with real eigenvalues re_parts and a well-conditioned random X."""
    n = len(re_parts)
    X = np.eye(n) + 0.3 * rng.standard_normal((n, n)) / np.sqrt(n)
    return X @ np.diag(re_parts) @ np.linalg.inv(X)


def random_pd(rng, n, lo=0.1):
    R = rng.standard_normal((n, n)) / np.sqrt(n)
    return R @ R.T + lo * np.eye(n)


# ---------------------------------------------------------------- CAREX closed forms


@pytest.mark.parametrize(("name", "make", "kwargs"), EXAMPLES,
                         ids=[f"{n}{kw}" for n, _, kw in EXAMPLES])
def test_care_matches_carex_closed_form(name, make, kwargs):
    A, G, Q, X = make(**kwargs)
    n = A.shape[0]
    if name == "ex11" and kwargs == {}:
        pytest.skip("ε = 0 puts the closed loop on the imaginary axis: see the refusal test")
    sol = care_g(A, G, Q)
    err = np.linalg.norm(sol.X - X, 1) / np.linalg.norm(X, 1)
    # forward error of a backward-stable solver: O(κ eps) with Byers' condition bound κ
    assert err <= 10 * n * EPS * sol.condition
    assert sol.residual <= 1e-12  # largest seen: 6e-13 on ex9 at ε = 1e6 (κ ≈ 7e8)
    assert np.max(sol.closed_loop.real) < 0
    assert 0 < sol.rcond <= 1 + 1e-12
    # python-control's care (the same SLICOT routine, unscaled): never more accurate than ours
    # (on ex7 at ε = 1e-6 it is off by 5e-5, ours by 1e-29 thanks to SLICOT's scaling)
    ref = care_python_control(A, G, Q)
    err_pc = np.linalg.norm(ref - X, 1) / np.linalg.norm(X, 1)
    assert err <= max(err_pc, 10 * n * EPS * sol.condition)
    # the residual reported is the residual of the returned matrix, recomputed here
    assert sol.residual == pytest.approx(care_residual(A, G, Q, sol.X), rel=1e-12, abs=1e-300)


def test_care_refuses_closed_loop_on_the_axis():
    # CAREX ex. 11 with ε = 0: X = [[2, 1], [1, 1]] gives A − GX eigenvalues ±i (on the axis)
    A, G, Q, X = ex11(0.0)
    closed = np.linalg.eigvals(A - G @ X)
    assert np.max(np.abs(closed.real)) < 1e-14
    with pytest.raises(SolverError, match="imaginary axis"):
        care_g(A, G, Q)


def test_care_input_validation():
    with pytest.raises(InvalidInputError, match="G must be 2×2"):
        care_g(np.eye(2), np.eye(3))
    with pytest.raises(InvalidInputError, match="A contains NaN"):
        care_g([[np.nan]], [[1.0]])


@pytest.mark.parametrize(("n", "m", "seed"), [(2, 1, 0), (5, 2, 1), (20, 20, 2), (40, 7, 3)])
def test_care_g_is_the_equation_of_scipy_and_python_control(n, m, seed):
    """AᵀX + XA − XGX + Q = 0 with G = B R⁻¹ Bᵀ: the solution of scipy's and python-control's
    solvers given (A, B, Q, R), to 1e-10."""
    import control

    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n))
    B = rng.standard_normal((n, m))
    R = random_pd(rng, m, lo=0.5)
    Q = random_pd(rng, n)
    G = B @ np.linalg.solve(R, B.T)
    sol = care_g(A, G, Q)
    X_scipy = sl.solve_continuous_are(A, B, Q, R)
    X_control, _, _ = control.care(A, B, Q, R)
    for X in (X_scipy, X_control):
        assert np.linalg.norm(sol.X - X) <= 1e-10 * np.linalg.norm(X)
    assert sol.residual <= 1e-12
    assert np.max(np.linalg.eigvals(A - G @ sol.X).real) < 0


def test_care_g_refuses_a_G_that_is_not_symmetric_psd(rng):
    """A square B passed where G = BR⁻¹Bᵀ belongs is refused, not silently reinterpreted."""
    A = rng.standard_normal((3, 3))
    B = rng.standard_normal((3, 3))
    with pytest.raises(InvalidInputError, match="G must be symmetric"):
        care_g(A, B, np.eye(3))
    with pytest.raises(InvalidInputError, match="G must be positive semidefinite"):
        care_g(A, -np.eye(3), np.eye(3))
    with pytest.raises(InvalidInputError, match="Q must be symmetric"):
        care_g(A, np.eye(3), B)
    with pytest.raises(InvalidInputError, match="Q must be symmetric"):
        lyapunov_function(-np.eye(3), B)
    # symmetric up to rounding: accepted, as its symmetric part
    G = B @ B.T
    G[0, 1] *= 1 + 1e-15
    assert care_g(A, G, np.eye(3), condition=False).residual <= 1e-12
    with pytest.raises(InvalidInputError, match="G must be symmetric"):
        care_g(A, 1e-300 * B, np.eye(3))


# ---------------------------------------------------------------- Bernoulli fast path


@pytest.mark.parametrize("spectrum", ["anti-stable", "mixed"])
def test_bernoulli_n200_residual_rank_and_crosscheck(rng, spectrum):
    n = 200
    if spectrum == "anti-stable":
        re = rng.uniform(0.3, 2.0, n)
    else:
        re = np.where(np.arange(n) % 3 == 0, -1.0, 1.0) * rng.uniform(0.3, 2.0, n)
    A = random_with_spectrum(rng, re)
    G = random_pd(rng, n)
    sol = bernoulli(A, G, crosscheck=True)
    assert sol.method == "schur"
    assert sol.residual <= 1e-12
    k = int(np.sum(re > 0))
    assert sol.rank == k
    # numerical rank of Σ from its spectrum (independent of the structural count)
    eig = np.linalg.eigvalsh(sol.X)
    assert int(np.sum(eig > 1e-10 * eig[-1])) == k
    # stabilizing: A − ΣG Hurwitz, recomputed
    assert np.max(np.linalg.eigvals(A - sol.X @ G).real) < 0
    # python-control's care (SLICOT sb02md through sb02mt) gives the same matrix
    assert sol.crosscheck <= 1e-10


@pytest.mark.parametrize("n", [1, 2, 7, 90])
def test_bernoulli_schur_solution_is_symmetric_with_its_own_residual(rng, n):
    re = np.where(np.arange(n) % 3 == 0, -1.0, 1.0) * rng.uniform(0.3, 2.0, n)
    A = random_with_spectrum(rng, re)
    G = random_pd(rng, n)
    sol = bernoulli(A, G)
    assert sol.method == "schur" and sol.psd
    assert np.array_equal(sol.X, sol.X.T)  # the completed triangle of YᵀY, not a mean of two
    assert sol.residual == pytest.approx(care_residual(A.T, G, np.zeros((n, n)), sol.X),
                                         rel=1e-12, abs=1e-300)
    # Σ = U₁P⁻¹U₁ᵀ written out from the Schur split
    split = schur_split(A, G)
    U1 = split.U[:, :split.k]
    ref = U1 @ np.linalg.inv(split.P) @ U1.T
    assert np.linalg.norm(sol.X - ref) <= 1e-10 * np.linalg.norm(ref)


def test_care_residual_without_Q_is_that_of_Q_zero(rng):
    A, X = rng.standard_normal((6, 6)), random_pd(rng, 6)
    G = random_pd(rng, 6)
    assert care_residual(A, G, None, X) == care_residual(A, G, np.zeros((6, 6)), X)
    assert care_residual(A, G, None, np.zeros((6, 6))) == 0.0


@pytest.mark.parametrize("scale", [2.0 ** -1070, 1e-300, 1e-200, 1.0, 1e200, 1e300])
def test_fro_norm_at_every_magnitude(rng, scale):
    S = scale * rng.standard_normal((5, 5))
    e = int(np.frexp(scale)[1])  # S·2^−e has unit size: its norm, scaled back exactly
    want = float(np.ldexp(np.linalg.norm(np.ldexp(S, -e)), e))
    assert fro_norm(S) == pytest.approx(want, rel=1e-14)


def test_bernoulli_mixed_spectrum_is_not_the_plain_inverse(rng):
    """With mixed spectrum the full Lyapunov solve + inversion gives a full-rank, non-stabilizing
    equilibrium; the fast path returns the singular stabilizing one."""
    n = 6
    A = random_with_spectrum(rng, [1.0, 1.5, 0.7, -1.2, -0.4, -2.1])  # no λ_i + λ_j = 0
    G = random_pd(rng, n)
    P = sl.solve_continuous_lyapunov(A.T, G)  # AᵀP + PA = G on all of R^n
    plain = np.linalg.inv(P)
    assert care_residual(A.T, G, np.zeros((n, n)), plain) < 1e-10
    assert np.max(np.linalg.eigvals(A - plain @ G).real) > 0
    sol = bernoulli(A, G)
    assert sol.rank == 3
    assert np.max(np.linalg.eigvals(A - sol.X @ G).real) < 0
    assert np.linalg.norm(sol.X - plain) > 0.1 * np.linalg.norm(plain)


def test_bernoulli_schur_and_slycot_paths_agree(rng):
    for n in (1, 2, 5, 20):
        re = np.where(np.arange(n) % 2 == 0, 1.0, -1.0) * rng.uniform(0.3, 2.0, n)
        A = random_with_spectrum(rng, re)
        G = random_pd(rng, n) - 0.05 * np.eye(n) * (n > 2)  # indefinite G allowed
        fast = bernoulli(A, G)
        slow = bernoulli(A, G, method="care")
        assert fast.rank == slow.rank == int(np.sum(re > 0))
        assert np.linalg.norm(fast.X - slow.X) <= 1e-10 * max(np.linalg.norm(slow.X), 1.0)
        assert 0 < fast.rcond <= 1 + 1e-12 and 0 < slow.rcond <= 1 + 1e-12


def test_bernoulli_hurwitz_gives_zero(rng):
    A = random_with_spectrum(rng, [-1.0, -0.4, -2.0])
    sol = bernoulli(A, random_pd(rng, 3))
    assert sol.rank == 0 and not np.any(sol.X)


@pytest.mark.parametrize("offset", [0.0, 1e-10, -1e-10, 5e-9])
def test_bernoulli_near_axis_raises_naming_eigenvalue_and_gap(rng, offset):
    A = random_with_spectrum(rng, [1.0, offset, -1.0])
    with pytest.raises(SolverError, match=r"eigenvalue λ = .* relative gap 1e-08"):
        bernoulli(A, random_pd(rng, 3))
    with pytest.raises(SolverError, match="imaginary axis"):
        bernoulli(A, random_pd(rng, 3), method="care")


def test_bernoulli_purely_imaginary_pair_raises():
    A = np.array([[0.0, 1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    with pytest.raises(SolverError, match=r"λ = 0[+-]1i"):
        bernoulli(A, np.eye(3))


def test_scipy_is_silently_wrong_on_the_axis_but_we_refuse():
    """The reason for the gap check: scipy returns a plausible matrix for A with eigenvalue 0."""
    A = np.diag([1.0, 0.0])
    G = np.eye(2)
    with pytest.raises(SolverError):
        bernoulli(A, G)


def test_bernoulli_no_stabilizing_solution_when_mode_unseen(rng):
    # e₁ is an eigenvector of A with eigenvalue 1 and G e₁ = 0: P is singular
    A = np.array([[1.0, 0.3, 0.0], [0.0, 0.5, 0.2], [0.0, 0.0, -1.0]])
    G = np.diag([0.0, 1.0, 2.0])
    with pytest.raises(NoStabilizingSolution, match="not seen by G"):
        bernoulli(A, G)


def test_bernoulli_scalar_closed_form():
    # d = 1: 2aσ − gσ² = 0 ⇒ σ* = 2a/g for a > 0
    for a, g in [(0.5, 2.0), (3.0, 0.1), (1.0, -1.0)]:
        sol = bernoulli([[a]], [[g]])
        assert sol.X[0, 0] == pytest.approx(2 * a / g, rel=1e-15)


def test_bernoulli_invalid_method():
    with pytest.raises(InvalidInputError, match="method"):
        bernoulli(np.eye(2), np.eye(2), method="newton")


# ---------------------------------------------------------------- Lyapunov


def test_lyapunov_sign_convention(rng):
    L = random_with_spectrum(rng, [-0.5, -1.0, -2.0, -3.0])
    Q = random_pd(rng, 4)
    sol = lyapunov_function(L, Q)
    assert np.linalg.norm(L.T @ sol.P + sol.P @ L + Q) <= 1e-13 * np.linalg.norm(Q) * 10
    assert sol.residual <= 1e-14
    assert np.linalg.eigvalsh(sol.P)[0] > 0
    # the same equation as one dense linear system: (I ⊗ Lᵀ + Lᵀ ⊗ I) vec P = −vec Q
    n = L.shape[0]
    K = np.kron(np.eye(n), L.T) + np.kron(L.T, np.eye(n))
    P = np.linalg.solve(K, -Q.ravel()).reshape(n, n)
    assert np.linalg.norm(P - sol.P) <= 1e-13 * np.linalg.norm(P)


def test_lyapunov_function_is_the_transpose_of_control_lyap(rng):
    import control

    L = random_with_spectrum(rng, [-0.5, -1.0, -2.0])
    Q = random_pd(rng, 3)
    P = control.lyap(L.T, Q)  # control.lyap(A, Q): AX + XAᵀ + Q = 0
    assert np.linalg.norm(lyapunov_function(L, Q).P - P) <= 1e-13 * np.linalg.norm(P)


def test_lyapunov_unstable_L_gives_indefinite_P(rng):
    L = random_with_spectrum(rng, [0.5, -1.0, -2.0])
    sol = lyapunov_function(L)
    assert np.linalg.eigvalsh(sol.P)[0] < 0


BAD_RTOLS = [-1.0, 0.0, 1.0, 2.0, float("nan"), float("inf"), "1e-8", True, 1j, None, [1e-8]]


@pytest.mark.parametrize("bad", BAD_RTOLS)
def test_tolerances_are_validated(bad):
    A, G = np.diag([1.0, -2.0]), np.eye(2)
    for call in (lambda: bernoulli(A, G, axis_rtol=bad), lambda: care_g(A, G, axis_rtol=bad),
                 lambda: schur_split(A, G, axis_rtol=bad),
                 lambda: check_axis_gap(np.array([1.0]), 1.0, axis_rtol=bad)):
        with pytest.raises(InvalidInputError, match="axis_rtol"):
            call()


@pytest.mark.parametrize("bad", ["no", 0, 1, None, np.array([True])])
def test_boolean_options_are_booleans(bad):
    A, G = np.diag([1.0, -2.0]), np.eye(2)
    for name in ("crosscheck", "condition"):
        with pytest.raises(InvalidInputError, match=name):
            bernoulli(A, G, **{name: bad})
    for name in ("scaling", "condition"):
        with pytest.raises(InvalidInputError, match=name):
            care_g(A, G, **{name: bad})


@pytest.mark.parametrize("alpha, beta", [(2.0 ** -1020, 2.0 ** -1020), (1e-300, 1e-300),
                                         (1e300, 1e300), (1.0, 1e-300), (1e-300, 1.0),
                                         (1e150, 1e-150), (3e-200, 7e-250)])
def test_bernoulli_is_scale_invariant(rng, alpha, beta):
    # AΣ + ΣAᵀ − ΣGΣ = 0 with (αA, βG) is solved by Σ = (α/β)Σ₁ where Σ₁ solves it with (A, G)
    A = random_with_spectrum(rng, [1.0, 0.5, -1.0])
    G = random_pd(rng, 3)
    ref = bernoulli(A, G)
    sol = bernoulli(alpha * A, beta * G)
    ratio = alpha / beta
    np.testing.assert_allclose(sol.X, ratio * ref.X, rtol=1e-10, atol=1e-12 * ratio *
                               np.abs(ref.X).max())
    assert sol.rank == ref.rank == 2 and sol.residual <= 1e-12
    np.testing.assert_allclose(sol.closed_loop.real / alpha, ref.closed_loop.real, rtol=1e-10)


def test_bernoulli_refuses_an_unrepresentable_solution():
    # σ = 2a / g = 2 / 1e-310 overflows; 2 / 1e-300 does not
    sol = bernoulli(np.eye(1), np.array([[1e-300]]))
    np.testing.assert_allclose(sol.X, [[2e300]], rtol=1e-15)
    with pytest.raises(SolverError, match="not representable"):
        bernoulli(np.eye(1), np.array([[1e-310]]))


def test_near_axis_error_names_the_unscaled_eigenvalue():
    A = np.diag([1e-300, 1e-312])  # a gap of 1e-12 relative: on the axis at axis_rtol = 1e-8
    with pytest.raises(SolverError, match=r"λ = 1e-312"):
        bernoulli(A, 1e-300 * np.eye(2))


@pytest.mark.parametrize("n", [1, 2, 3, 8, 33])
def test_quasi_triangular_eigenvalues_are_those_of_the_schur_factor(n):
    # the 2×2 blocks' eigenvalues (one stacked call) and the 1×1 diagonal entries, in the order
    # of the diagonal: against LAPACK's eigenvalues of the whole factor
    from scipy.linalg import schur

    from riccati_tf.stability.riccati.schur import _quasi_triangular_eigenvalues

    rng = np.random.default_rng(n)
    T, _ = schur(rng.standard_normal((n, n)), output="real")
    got = _quasi_triangular_eigenvalues(T)
    np.testing.assert_allclose(got.real, np.diagonal(T), rtol=0, atol=1e-14 * np.abs(T).max())
    ref = np.linalg.eigvals(T)
    np.testing.assert_allclose(np.sort_complex(got), np.sort_complex(ref), rtol=1e-12,
                               atol=1e-12)
    pairs = np.flatnonzero(got.imag > 0)  # a complex pair sits at adjacent positions
    assert np.all((got[pairs + 1] == np.conj(got[pairs])) | (got[pairs - 1] == np.conj(got[pairs])))
